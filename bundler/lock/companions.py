"""Companions pulled in by other packages: a resolved lock's torch companions against the Target's pairing.

torch and the companions requirements.in names are pinned to the Target's build before
resolving (``lock/requirements.py``). Another package can still pull one in through its
own dependencies, or a line the Target's build does not pin passes through (triton on a
CPU Target): the resolver then picks the newest, whatever the table pairs with torch.
After resolving, each such pin is compared with the compatibility table's pairing and
named together with who pulled it in (the resolver's ``# via`` lines):

- a warning when it contradicts the pairing: triton or pytorch-triton-rocm at another
  version than the release pairs, an ``nvidia-*`` CUDA library on a CPU or ROCm Target, or
  one of another CUDA major than the Target's;
- a note for a GPU compiler in a CPU lock (triton, ``nvidia-cuda-nvcc*``): never used there.

A torchvision, torchaudio or torchtext pulled in that way, when it is not the Target's build (PyPI's,
unlabelled), refuses the lock instead, naming who pulled it in and the route: list it in
requirements.in (bundler then pins the Target's build), or, when the Target's torch has no
such release, the nearest torch that has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from bundler.target.bundle import Target
from bundler.target.table import PAIRED_COMPANIONS, CompatTable, TorchBuild, is_paired_build

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;\\]+)")
_VIA = re.compile(r"^#\s+via\b\s*(.*)$")
_VIA_MORE = re.compile(r"^#\s{2,}(\S.*)$")
_CUDA_SUFFIX = re.compile(r"-cu(\d+)$")
COMPILERS = ("triton", "nvidia-cuda-nvcc")
RESOLVER_INPUT = "requirements.in"  # the name the resolver's `# via -r …` gives the input it was handed


@dataclass
class LockedPin:
    name: str
    version: str
    via: list[str] = field(default_factory=list)


@dataclass
class Findings:
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refusals: list[tuple[str, str]] = field(default_factory=list)  # (why the lock cannot be written, the route)


def locked_pins(body: str) -> dict[str, LockedPin]:
    """Each pin of a resolver's output and the names its ``# via`` annotation gives (one line or one per line)."""
    pins: dict[str, LockedPin] = {}
    current: LockedPin | None = None
    in_via = False
    for raw in body.splitlines():
        line = raw.strip()
        match = _PIN.match(raw)
        if match:
            current = pins.setdefault(canonicalize_name(match.group(1)), LockedPin(canonicalize_name(match.group(1)), match.group(2)))
            in_via = False
            continue
        via = _VIA.match(line)
        if via and current is not None:
            in_via = True
            if via.group(1):
                current.via.append(via.group(1).strip())
            continue
        more = _VIA_MORE.match(line)
        if in_via and more and current is not None:
            current.via.append(more.group(1).strip())
        elif not line.startswith("--hash") and not line.endswith("\\"):
            in_via = False
    return pins


def check_companions(
    body: str, build: TorchBuild, pinned: dict[str, str], requirements: str, table: CompatTable | None = None, target: Target | None = None
) -> Findings:
    """Warnings, notes and refusals for the companions of a resolved lock the Target's build did not pin itself."""
    findings = Findings()
    for pin in locked_pins(body).values():
        if pin.name in pinned:
            continue  # the Target's own pin: the lock's lint checks it
        who = _who(pin, requirements)
        if pin.name in PAIRED_COMPANIONS:
            refusal = _refusal(pin, who, build, requirements, table, target)
            findings.refusals += [refusal] if refusal[0] else []
            continue
        contradiction = _contradiction(pin, build)
        if contradiction:
            findings.warnings.append(
                f"{pin.name}=={pin.version}, pulled in by {who}, {contradiction}: the two can disagree at run time "
                f"(pin the paired version in {requirements}, or drop the package that pulls it in)."
            )
        if build.backend == "cpu" and pin.name.startswith(COMPILERS):
            findings.notes.append(
                f"{pin.name}=={pin.version}, pulled in by {who}, is a GPU compiler in a CPU lock: installed, never used on this Target."
            )
    return findings


def _refusal(
    pin: LockedPin, who: str, build: TorchBuild, requirements: str, table: CompatTable | None, target: Target | None
) -> tuple[str, str]:
    """A paired companion pulled in by another package: why it cannot go next to the Target's torch, and the route."""
    torch, paired = build.release.torch, build.companions().get(pin.name, "")
    if paired and is_paired_build(pin.version, paired):
        return "", ""  # the resolver took the Target's own build from the Target's index
    if paired:
        why = f"{pin.name}=={pin.version}, pulled in by {who}, is not the Target's build ({pin.name}=={paired})"
        return why, f"Add {pin.name} to {requirements}: bundler then pins the Target's build, {pin.name}=={paired}."
    why = f"{pin.name}=={pin.version}, pulled in by {who}, and no {pin.name} release exists for torch {torch}"
    nearest = table.nearest_with(pin.name, target) if table is not None and target is not None else None
    if nearest is None:
        return why, f"Drop {who} from {requirements}, or choose a torch that has {pin.name}."
    why += f". The nearest torch with {pin.name}: {nearest.torch} ({pin.name} {getattr(nearest, pin.name.replace('-', '_'))})"
    return why, torch_route(nearest.torch, who, requirements)


# ----- a package made for one torch: the words and the routes, for companions and any package pinning torch ------------
def made_for(name: str, version: str, torch: str) -> str:
    return f"{name} {version} was made for torch {torch}"


def torch_route(torch: str, drop: str, requirements: str) -> str:
    return f"Lock for that torch with `bundler lock --torch {torch}`, or drop {drop} from {requirements}."


def pinned_torch(
    name: str, version: str, torch: str, wanted: dict[str, SpecifierSet], target: Target, table: CompatTable, requirements: str
) -> tuple[str, str]:
    """(why, route) for a package whose release requires exactly ``torch`` (another than the Target's), given what each
    later release of it asks of torch (``wanted``, pypimeta.torch_requirements): the first release that admits the
    Target's torch, else the newest torch of the table its releases admit."""
    why = f"{made_for(name, version, torch)} (it requires torch=={torch}), and the Target's torch is {target.torch}"
    admitting = [release for release, spec in wanted.items() if spec.contains(target.torch, prereleases=True)]
    if admitting:
        release = min(admitting, key=Version)
        asks = f"torch{wanted[release]}" if wanted[release] else "torch at any version"
        return why + f"; {name} {release} requires {asks}, which admits it", (
            f"Pin {name}=={release} in {requirements} (the first release whose requirement on torch admits {target.torch}), "
            f"or drop {name} from {requirements}."
        )
    having = [v for v in table.torch_versions() if table.releases[v].has_build(target.backend, target.accelerator, target.platform)]
    supported = [v for v in having if target.python in table.releases[v].python and any(s.contains(v) for s in wanted.values())]
    if not supported:
        return why + f"; no release of {name} admits torch {target.torch}, nor any torch of the table for the Target", (
            f"Drop {name} from {requirements}, or choose a torch that {name} was made for."
        )
    newest = max(supported, key=Version)
    return why + f"; no release of {name} admits torch {target.torch}: the newest torch its releases support is {newest}", (
        f"Pin the release of {name} made for torch {newest}, then: " + torch_route(newest, name, requirements)
    )


def _contradiction(pin: LockedPin, build: TorchBuild) -> str:
    """How the pin contradicts the Target's pairing ("" when it does not, or the table does not say)."""
    release, torch = build.release, f"torch {build.release.torch}"
    paired = {"triton": release.triton, "pytorch-triton-rocm": release.pytorch_triton_rocm}
    if pin.name in paired and paired[pin.name] and not _matches(pin.version, paired[pin.name]):
        return f"and {torch} is paired with {pin.name} {paired[pin.name]} (the compatibility table)"
    if pin.name.startswith("nvidia-") and build.backend != "cuda":
        return f"a CUDA library, and the Target's {torch} is the {build.tag} build, which uses none"
    suffix = _CUDA_SUFFIX.search(pin.name)
    if pin.name.startswith("nvidia-") and suffix and build.cuda is not None and suffix.group(1) != build.accelerator.split(".")[0]:
        return f"a CUDA {suffix.group(1)} library, and the Target is CUDA {build.accelerator}"
    return ""


def _matches(version: str, paired: str) -> bool:
    """A locked version against the table's pairing: an exact version (labels aside) or a range (~=3.8.0)."""
    try:
        locked = Version(version)
        if paired[0].isdigit():
            return locked.public == Version(paired).public
        return SpecifierSet(paired).contains(Version(locked.public), prereleases=True)
    except (InvalidVersion, InvalidSpecifier):
        return True  # a pairing the table cannot state is not a contradiction


def _who(pin: LockedPin, requirements: str) -> str:
    names = []
    for item in pin.via:
        if item.startswith(("-r ", "-c ")) and item.split()[-1] == RESOLVER_INPUT:
            names.append(f"{requirements} itself")
        else:
            names.append(item)
    return ", ".join(names) if names else "the resolver (no `# via` recorded)"
