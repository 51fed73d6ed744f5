"""What a build proves before anything is tagged, in two parts.

**Dependency checks** run once, in a container of a new dependency image (no network,
no GPU needed): a list of ``Check``s, each a command whose last JSON line is its
finding — the programs of ``bundler/inimage/`` run with ``python -m``, put into the
container before it starts (the image never holds them), and bdiag's import check.
Their verdict is recorded on the dependency image as a label and not run again while
that image is reused. Today's list: torch's build against the Target, and the
shared libraries (every ``.so`` under torch/lib and nvidia/*/lib resolves with ``ldd``;
for a real CUDA build libcudart, libcublas and libcudnn load through ctypes without a
driver), and every direct dependency's import (importcheck.py). More checks append to the
list ``dependency_checks`` returns.

**Project checks** run on every build, without a container: before the build, on the
context tar bundler wrote (the bytes the engine copies), the entry point is executable,
the diagnostics are there, every config file parses; after it, from the new image's
inspect, its user and entry point and the pins the dependency image was made from
against the project's lock. (Reading the files back from a created container cost a
code-only rebuild as much as the engine's own build.)
"""

from __future__ import annotations

import functools
import io
import json
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bundler.engine import Engine, EngineFailure, RunSpec
from bundler.errors import BuildError
from bundler.image import importcheck, layout
from bundler.image.labels import PINS_LABEL
from bundler.resources import diagnostics_folder
from bundler.target.bundle import Bundle, Target

CHECK_TIMEOUT_S = 900
CLOCK_KEYS = ("seconds", "slowest")  # timings in a finding, left out of the recorded verdict
TORCH_BUILD = "torch build"
LIBRARIES = importcheck.LIBRARIES
PROGRAMS = "/tmp/bundler-checks"  # where the programs of bundler/inimage/ (and bdiag's import check) are put in the container
INIMAGE = Path(__file__).resolve().parents[1] / "inimage"
CONTRACTS = Path(__file__).resolve().parents[1] / "contracts"


@dataclass(frozen=True)
class Check:
    name: str
    argv: tuple[str, ...]  # run in the image; the last stdout line starting with "{" is the finding
    # the check's own error for a finding that failed (None: the generic one), and its notes for the user
    # (its finding, every check's finding by name) -> its error, so one check's hint can use what another saw
    failure: Callable[[dict, dict], BuildError | None] | None = field(default=None, compare=False)
    notes: Callable[[dict], list[str]] | None = field(default=None, compare=False)

    def as_dict(self) -> dict:
        return {"name": self.name, "argv": list(self.argv)}


@dataclass(frozen=True)
class Verdict:
    """The checks' results as a dependency image's label records them, looked up by check."""

    results: tuple[dict, ...]

    @classmethod
    def of(cls, verdict: Mapping) -> Verdict:
        return cls(tuple(result for result in verdict.get("checks") or [] if isinstance(result, dict)))

    def finding(self, name: str) -> dict:
        return next((dict(result.get("finding") or {}) for result in self.results if result.get("name") == name), {})

    @property
    def torch(self) -> dict:
        """torch's version, CUDA and HIP as the image's torch reports them."""
        return dict(self.finding(TORCH_BUILD).get("torch") or {})

    @property
    def imports(self) -> dict | None:
        return self.finding(importcheck.NAME) or None


def torch_build_args(target: Target) -> tuple[str, ...]:
    """The arguments of ``bundler/inimage/torchbuild.py`` for the Target."""
    return ("--torch", target.torch, "--backend", target.backend, "--accelerator", target.accelerator or "")


def inimage_module(name: str, python: str, *args: str) -> tuple[str, ...]:
    """The argv that runs ``bundler/inimage/<name>.py`` in a check container."""
    return (python, "-m", f"bundler.inimage.{name}", *args)


def dependency_checks(bundle: Bundle) -> list[Check]:
    """The checks of a new dependency image, in order (what the Target needs of the installed packages)."""
    target, python = bundle.target, layout.PYTHON
    checks = [
        Check(TORCH_BUILD, inimage_module("torchbuild", python, *torch_build_args(target))),
        Check(LIBRARIES, inimage_module("libraries", python, "--backend", target.backend)),
    ]
    imports = importcheck.import_argv(bundle, python)
    if imports:
        failure = functools.partial(importcheck.failure, installed=bundle.system_packages)
        checks.append(Check(importcheck.NAME, imports, failure=failure, notes=importcheck.notes))
    return checks


def programs_archive(project: Path | None = None) -> bytes:
    """A tar of the programs the checks run: bundler/inimage/ (a namespace ``bundler`` above it) and bdiag's import check."""
    buffer = io.BytesIO()
    bdiag = diagnostics_folder(project) / "bdiag" if project is not None else None
    top = PROGRAMS.rsplit("/", 1)[1]
    files = [(f"{top}/bundler/inimage/{path.name}", path) for path in sorted(INIMAGE.glob("*.py"))]
    files += [(f"{top}/bundler/contracts/{name}", CONTRACTS / name) for name in ("__init__.py", "buildtag.py")]  # torchbuild's rule
    if bdiag is not None and (bdiag / "imports.py").is_file():
        files += [(f"{top}/bdiag/__init__.py", bdiag / "__init__.py"), (f"{top}/bdiag/imports.py", bdiag / "imports.py")]
        shared = sorted(path for path in (bdiag / "contracts").glob("*") if path.suffix in (".py", ".json"))  # what it imports and reads
        files += [(f"{top}/bdiag/contracts/{path.name}", path) for path in shared]
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for folder in sorted({name.rsplit("/", 1)[0] for name, _ in files} | {top, f"{top}/bundler"}):  # bundler: a namespace
            info = tarfile.TarInfo(folder)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, layout.FILE_TIME
            tar.addfile(info)
        for name, path in files:
            data = path.read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, layout.FILE_TIME
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def run_dependency_checks(
    engine: Engine, image_id: str, checks: list[Check], python: str = layout.PYTHON, *, project: Path | None = None
) -> list[dict]:
    """Run ``checks`` in one container of ``image_id`` (no network); BuildError naming the first that failed."""
    spec = RunSpec(
        image_id,
        ["-m", "bundler.inimage.runner", json.dumps([check.as_dict() for check in checks])],
        entrypoint=[python],
        environment={"PYTHONPATH": PROGRAMS, "PYTHONDONTWRITEBYTECODE": "1"},
        inputs={PROGRAMS.rsplit("/", 1)[0]: programs_archive(project)},
    )
    try:
        ran = engine.run(spec, timeout=CHECK_TIMEOUT_S)
    except EngineFailure as error:
        raise BuildError(
            f"the engine could not run the dependency checks in {image_id[:19]}: {error.explanation[:400]}.",
            hint="Check the engine's log (`journalctl -u docker`, or the `podman system service` output) and its free disk space, "
            "then build again.",
            value=image_id,
        ) from None
    code, output = ran.exit_code, ran.output
    lines = [line for line in output.splitlines() if line.startswith("[")]
    try:
        results = json.loads(lines[-1]) if lines else []
    except ValueError:
        results = []
    failed = [result for result in results if not result["ok"]]
    if code != 0 or not results or failed:
        first: dict = failed[0] if failed else {"name": "the checks' runner", "output": output.strip()[-1500:]}
        own = next((check.failure for check in checks if check.name == first["name"] and check.failure), None)
        findings = {result["name"]: result.get("finding") or {} for result in results}
        failure = own(first.get("finding") or {}, findings) if own else None
        raise failure or BuildError(
            f"the dependency image failed its check {first['name']!r}: "
            + json.dumps(first.get("finding") or {}, sort_keys=True)[:600]
            + ("\nOutput:\n  " + "\n  ".join(str(first.get("output", "")).splitlines()[-12:]) if first.get("output") else ""),
            hint="The wheels installed but do not work together in the base image: check the lock was made for this Target "
            "(`bundler lock`) and that the base image has the Target's Python and a glibc new enough for the wheels.",
            value=first["name"],
        )
    for result in results:  # the verdict becomes a label: the same image must give the same one
        result["finding"] = {key: value for key, value in result["finding"].items() if key not in CLOCK_KEYS}
    return results


def check_notes(checks: list[Check], results: list[dict]) -> list[str]:
    """What the checks that passed have to tell the user (an import that needs the rented GPU …)."""
    notes = {check.name: check.notes for check in checks if check.notes}
    return [note for result in results if result["name"] in notes for note in notes[result["name"]](result["finding"])]


# ----- project checks: no container is started ---------------------------------------------
def parse_error(name: str, data: bytes) -> str:
    """Why a config file does not parse ("" when it does, or when bundler has no parser for its kind)."""
    from bundler.tomlcompat import tomllib

    try:
        text = data.decode("utf-8")
        if name.endswith(".json"):
            json.loads(text)
        elif name.endswith(".toml"):
            tomllib.loads(text)
        elif name.endswith((".yaml", ".yml")):
            return _yaml_error(text)
    except ValueError as error:  # JSON, TOML and UTF-8 errors are all ValueErrors
        return f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
    return ""


def _yaml_error(text: str) -> str:
    import yaml

    try:
        yaml.safe_load(text)
    except yaml.YAMLError as error:
        return f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"
    return ""


def context_checks(context: Path) -> dict:
    """The cheap checks of the project context before the engine sees it: BuildError naming what is wrong.

    Read back from the tar bundler wrote (the very bytes the engine will copy): the entry point
    is executable, the diagnostics are there, every config file parses."""
    entry, run_py = f"bundle{layout.ENTRYPOINT}", f"bundle{layout.DIAGNOSTICS}/run.py"
    config = f"config{layout.PROJECT}/config/"
    entry_mode, run_py_found, config_files = 0, False, dict[str, bytes]()
    with tarfile.open(context) as tar:
        for member in tar:
            if member.name == entry and member.isreg():
                entry_mode = member.mode
            run_py_found = run_py_found or (member.name == run_py and member.isreg())
            handle = tar.extractfile(member) if member.isreg() and member.name.startswith(config) else None
            if handle is not None:
                config_files[member.name[len(config) :]] = handle.read()
    problems = [] if entry_mode & 0o111 else [f"{layout.ENTRYPOINT} is not executable"]
    if not run_py_found:
        problems.append(f"{layout.DIAGNOSTICS}/run.py is missing")
    for name, data in sorted(config_files.items()):
        error = parse_error(name, data)
        if error:
            problems.append(f"config/{name} does not parse ({error})")
    _refuse("the project failed its checks", problems, hint="Fix the file named above and build again; nothing was built.")
    return {"config_files": sorted(config_files), "entry_point": layout.ENTRYPOINT}


def project_checks(engine: Engine, image_id: str, pins_sha256: str, context: dict) -> dict:
    """The new image's user, entry point and pins (its inspect alone); ``context``: what context_checks found."""
    image = engine.image(image_id)
    if image is None:
        raise BuildError(f"the new image {image_id[:19]} is gone from the engine.", hint="Build again.", value=image_id)
    problems = []
    if image.user != f"{layout.UID}:{layout.UID}":
        problems.append(f"the image runs as {image.user!r}, not {layout.UID}:{layout.UID}")
    if image.entrypoint != (layout.ENTRYPOINT,):
        problems.append(f"the entry point is {list(image.entrypoint) if image.entrypoint else None!r}, not {layout.ENTRYPOINT}")
    made_from = image.labels.get(PINS_LABEL)
    if made_from != pins_sha256:
        problems.append(f"the dependency image was made from pins {made_from!r}, the lock's are {pins_sha256}")
    _refuse("the new image failed its project checks", problems, hint="Fix the file named above and build again; nothing was tagged.")
    return {"ok": True, **context}


def _refuse(what: str, problems: list[str], *, hint: str) -> None:
    if problems:
        raise BuildError(f"{what}: " + "; ".join(problems) + ".", hint=hint, value=problems[0])
