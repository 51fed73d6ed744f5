"""What a diagnostics run knows before the stages start: the bundle, the backend, the folders."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from bdiag import FOLDER
from bdiag.contracts.bundleschema import bundle_problem
from bdiag.order import Order, OrderError

BUNDLE_FILE = "bundle.toml"
IMAGE_ROOT = "/opt/bundle"  # where built images place the project (override: BUNDLE_ROOT)


@dataclass
class BundleInfo:
    """The parts of bundle.toml the diagnostics use; ``error`` is set when it does not parse."""

    path: str
    root: str
    target: dict = field(default_factory=dict)
    lock: str = "requirements-rebuild.txt"
    extensions: list = field(default_factory=list)
    diagnostics: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def lock_path(self) -> str:
        return os.path.join(self.root, self.lock)


def bundle_candidates(project: str | None, environ) -> list[str]:
    """Folders searched for bundle.toml, in order (see README.md, "Which bundle")."""
    if project:
        return [project]
    candidates = []
    if environ.get("BUNDLE_ROOT"):
        candidates.append(environ["BUNDLE_ROOT"])
    candidates += [os.path.dirname(FOLDER), IMAGE_ROOT, os.path.join(IMAGE_ROOT, "app")]
    return candidates


def find_bundle(project: str | None, environ) -> BundleInfo | None:
    for folder in bundle_candidates(project, environ):
        path = os.path.join(folder, BUNDLE_FILE)
        if os.path.isfile(path):
            return read_bundle(path)
    return None


def load_toml(text: str) -> dict:
    """tomllib (3.11+), else tomli, else the reader for bundle.toml's subset (Python 3.10 images)."""
    try:
        import tomllib  # novm: Python 3.10 images take the fallbacks below
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            from bdiag import minitoml as tomllib
    return tomllib.loads(text)


def read_bundle(path: str) -> BundleInfo:
    info = BundleInfo(path=os.path.abspath(path), root=os.path.dirname(os.path.abspath(path)))
    try:
        with open(path, "rb") as handle:
            data = load_toml(handle.read().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as error:  # TOMLDecodeError is a ValueError
        info.error = f"does not parse as TOML: {error}"
        return info
    except OSError as error:
        info.error = f"cannot be read: {error.strerror}"
        return info
    problem = bundle_problem(data)  # bundler's own schema (bdiag/contracts is a generated copy)
    if problem is not None:
        info.error = problem.text
        return info
    target, build = data["target"], data.get("build", {})
    diagnostics, extensions = data.get("diagnostics", {}), data.get("extensions", [])
    info.target = {key: str(value) for key, value in target.items()}
    info.lock = str(build.get("lock", info.lock))
    info.extensions = extensions
    info.diagnostics = diagnostics
    return info


@dataclass
class Checkup:
    """Shared by the stages: the expected backend, the bundle, the probe and what earlier stages found."""

    probe: object
    backend: str | None  # expected backend; None until known
    backend_source: str  # "flag" | "bundle" | "inferred"
    bundle: BundleInfo | None
    results_dir: str | None  # None: a temporary folder chosen by the io stage
    keep_going: bool = False
    order: Order | None = None  # what plan.toml says was paid for; None without a plan
    order_error: OrderError | None = None  # when plan.toml or its catalog cannot be used
    torch: object = None  # the imported module once the torch stage passed
    facts: dict = field(default_factory=dict)  # what earlier stages measured, for later ones

    @property
    def gpu(self) -> bool:
        return self.backend in ("cuda", "rocm")

    @property
    def accelerator(self) -> str:
        return (self.bundle.target.get("accelerator", "") if self.bundle and not self.bundle.error else "") or ""
