"""What a job file is made from, read once: bundle.toml, the lock's sha256, the order in
plan.toml (card, cards per lot from the catalog, lots) and the image.

GPUs per node: ``--nodes`` splits the lots evenly, and each lot brings its cards (a B200
lot holds two): 4 lots of B200 on 2 nodes are 2 lots = 4 cards per node. A split that
does not divide, or a card of the other vendor than the Target's backend, is refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from bundler import __version__
from bundler.errors import ProjectFileError, UsageError
from bundler.jobs.reference import Image, parse_image
from bundler.target.bundle import Bundle
from bundler.target.fabric import multi_node_note

GPU_RESOURCES = {"cuda": "nvidia.com/gpu", "rocm": "amd.com/gpu"}
VENDORS = {"cuda": "nvidia", "rocm": "amd"}
MAX_NAME = 40  # a Kubernetes pod's hostname is <name>-<index>, at most 63 characters


@dataclass(frozen=True)
class JobInputs:
    engine: str
    bundle: Bundle
    lock_sha256: str
    card: str
    cards_per_lot: int
    lots: int
    nodes: int
    image: Image
    notes: list[str] = field(default_factory=list)
    runtime: str = ""  # Slurm's container runtime (slurm_runtimes.RUNTIMES); "" for the other engines
    join_timeout: int = 0  # seconds the nodes wait for each other at a rendezvous (Slurm); 0: not set

    @property
    def backend(self) -> str:
        return self.bundle.target.backend

    @property
    def gpus_per_node(self) -> int:
        """Cards each node holds; 0 on the cpu backend."""
        return 0 if self.backend == "cpu" else self.lots // self.nodes * self.cards_per_lot

    @property
    def processes_per_node(self) -> int:
        """torchrun's --nproc-per-node for the entry: one process per card (one on the CPU)."""
        return max(1, self.gpus_per_node)

    @property
    def gpu_resource(self) -> str:
        return GPU_RESOURCES.get(self.backend, "")

    @property
    def name(self) -> str:
        """A DNS-1035 label from the project's name (a Service's name starts with a letter): Kubernetes
        objects, the SkyPilot cluster, the Slurm job."""
        for source in (self.bundle.name, self.bundle.package):
            slug = re.sub(r"[^a-z0-9]+", "-", source.lower()).strip("-")
            if slug:
                return (slug if slug[0].isalpha() else f"job-{slug}")[:MAX_NAME].strip("-")
        return "bundle"

    def record(self) -> dict:
        """What every job file records, so that what ran is traceable."""
        return {
            "lock-sha256": self.lock_sha256,
            "image": self.image.given,
            "image-pinned": self.image.pinned,
            "target": self.bundle.target.describe(),
            "order": f"{self.lots} x {self.card} ({self.cards_per_lot} per lot) on {self.nodes} node(s)",
            "bundler-version": __version__,
            **({"runtime": self.runtime, "join-timeout": f"{self.join_timeout} s"} if self.runtime else {}),
        }

    def as_dict(self) -> dict:
        return {
            "engine": self.engine,
            "project": str(self.bundle.root),
            "name": self.name,
            "card": self.card,
            "lots": self.lots,
            "cards_per_lot": self.cards_per_lot,
            "nodes": self.nodes,
            "gpus_per_node": self.gpus_per_node,
            "processes_per_node": self.processes_per_node,
            "backend": self.backend,
            "lock_sha256": self.lock_sha256,
            "image": self.image.as_dict(),
            "notes": self.notes,
            **({"runtime": self.runtime, "join_timeout_s": self.join_timeout} if self.runtime else {}),
        }


def read_inputs(
    engine: str, project: Path | None, image: str | None, nodes: str | None, runtime: str | None = None, join_timeout: str | None = None
) -> JobInputs:
    from bundler.evidence.campaign import load_campaign
    from bundler.lock.lockfile import fresh_lock
    from bundler.target.bundle import load_bundle

    bundle = load_bundle(project)
    lock = fresh_lock(bundle)
    campaign = load_campaign(bundle.root, priced=False)
    count = parse_nodes(nodes, campaign.lots, campaign.card.cards_per_lot, campaign.path)
    _check_vendor(campaign.card.name, bundle, campaign.catalog_path)
    notes: list[str] = []
    chosen = _image(engine, image, bundle, lock.sha256, notes)
    if fabric_note := multi_node_note(bundle.fabric, count, bundle.path):
        notes.append(fabric_note)
    slurm = _slurm_options(engine, runtime, join_timeout, chosen)
    return JobInputs(
        engine, bundle, lock.sha256, campaign.card.name, campaign.card.cards_per_lot, campaign.lots, count, chosen, notes, *slurm
    )


def _slurm_options(engine: str, runtime: str | None, join_timeout: str | None, image: Image) -> tuple[str, int]:
    """(runtime, join timeout) of a Slurm job; refused on the other engines, which take neither."""
    from bundler.jobs import slurm, slurm_runtimes

    if engine != "slurm":
        given = next((flag for flag, value in (("--runtime", runtime), ("--join-timeout", join_timeout)) if value is not None), "")
        if given:
            raise UsageError(
                f"{given} is an option of `bundler job slurm` only.", hint=f"Leave it out of `bundler job {engine}`.", value=given
            )
        return "", 0
    chosen = slurm_runtimes.check_runtime(runtime or slurm_runtimes.DEFAULT_RUNTIME, image)
    return chosen, parse_seconds(join_timeout, slurm.DEFAULT_JOIN_TIMEOUT)


def parse_seconds(text: str | None, default: int) -> int:
    """--join-timeout as whole seconds from 1 to 3600."""
    if text is None:
        return default
    if not re.fullmatch(r"\s*\+?[0-9]{1,4}\s*", text) or not 1 <= int(text) <= 3600:
        raise UsageError(
            f"--join-timeout {text!r} is not a number of seconds from 1 to 3600.",
            hint=f"For example --join-timeout {default} (the default): how long the nodes wait for each other at a rendezvous.",
            value=text,
        )
    return int(text)


def parse_nodes(text: str | None, lots: int, cards_per_lot: int, plan: Path) -> int:
    """--nodes as a whole number that splits the lots evenly (default 1: every lot on one node)."""
    if text is None:
        return 1
    if not re.fullmatch(r"\s*\+?[0-9]+\s*", text) or int(text) < 1:
        raise UsageError(
            f"--nodes {text!r} is not a number of nodes.", hint=f"Give a whole number from 1 to {lots} that divides {lots}.", value=text
        )
    count = int(text)
    if lots % count:
        splits = [n for n in range(1, lots + 1) if lots % n == 0]
        raise UsageError(
            f"--nodes {count} does not split the {lots} lot(s) of {plan} evenly.",
            hint=f"Use one of: {', '.join(map(str, splits))} (each node gets lots / nodes lots of {cards_per_lot} card(s)), "
            "or change package.lots in plan.toml.",
            value=count,
        )
    return count


def _check_vendor(card: str, bundle: Bundle, catalog: Path) -> None:
    """A card the diagnostics' datasheet knows must be of the Target's vendor (an MI300X never runs a CUDA build)."""
    expected = VENDORS.get(bundle.target.backend)
    vendor = card_vendor(card)
    if expected and vendor and vendor != expected:
        raise ProjectFileError(
            f"plan.toml orders {card} ({vendor}), but {bundle.path} targets {bundle.target.backend}.",
            hint=f"Order a {expected} card in plan.toml (cards in {catalog}), or lock for the card's backend "
            f"(`bundler lock --{'rocm' if vendor == 'amd' else 'cuda'} VERSION`).",
            path=bundle.path,
            value=card,
        )


def card_vendor(card: str) -> str:
    """'nvidia' or 'amd' for a card in diagnostics/gpus.json (matched by its name), else ''."""
    from bundler.resources import resource_path

    try:
        rows = json.loads((resource_path("diagnostics") / "gpus.json").read_text(encoding="utf-8"))["gpus"]
    except (OSError, ValueError, KeyError):
        return ""
    return next((str(row.get("vendor", "")) for row in rows if row.get("name") == card), "")


def _image(engine: str, given: str | None, bundle: Bundle, lock_sha256: str, notes: list[str]) -> Image:
    if given is None:
        from bundler.image.build import default_tag

        given = default_tag(bundle, lock_sha256)
        notes.append(
            f"no --image given: {given} is the tag `bundler build` gives locally; the nodes cannot pull it. Push it "
            "(`bundler build --push REGISTRY/NAME:TAG`) and pass --image with that reference"
            + (", or `--image FILE.tar` after `bundler build --export FILE.tar`." if engine == "slurm" else ".")
        )
    image = parse_image(given, archives=engine == "slurm")
    if not image.archive and not image.digest:
        notes.append(
            f"{image.given} is pinned by tag only: a push to that tag changes what the nodes run. Pass --image "
            f"{image.repository}@sha256:… (the digest `bundler build --push` prints) to pin it."
        )
    return image
