"""Stage 3: torch imports, and its build (CUDA / HIP / CPU) matches the expected backend."""

from __future__ import annotations

from bdiag.contracts.buildtag import accelerator_matches, same_release
from bdiag.contracts.buildtag import build_kind as kind_of
from bdiag.datasheet import index_url

NAME = "torch"
NEEDS_TORCH = False


def build_kind(versions: dict) -> str:
    return kind_of(versions.get("cuda"), versions.get("hip"))


def run(checkup, result) -> None:
    try:
        torch = checkup.probe.import_torch()
    except Exception as error:  # ImportError, or a broken install raising OSError on a missing .so
        result.values["error"] = f"{type(error).__name__}: {error}"
        backend = checkup.backend or "cpu"
        result.fail(
            f"`import torch` failed: {type(error).__name__}: {error}",
            "Install the locked torch into this interpreter (`python -m pip install --require-hashes --no-deps -r "
            "requirements-rebuild.txt`), "
            f"or get it from {index_url(backend, checkup.accelerator)}; check the interpreter stage first.",
        )
        return
    versions = checkup.probe.torch_versions(torch)
    kind = build_kind(versions)
    result.values.update(versions, build=kind, file=getattr(torch, "__file__", None))
    result.summary = f"torch {versions['version']} ({kind})"
    checkup.torch = torch
    checkup.facts["torch"] = versions
    if checkup.backend is None:
        checkup.backend = kind if kind != "cpu" and checkup.probe.cuda_available(torch) else "cpu"
        checkup.backend_source = "inferred"
        result.note(f"no expected backend given: assuming {checkup.backend} (pass --backend to be explicit)")
    result.values["expected_backend"] = checkup.backend
    _check_build(checkup, result, kind, versions)


def _check_build(checkup, result, kind: str, versions: dict) -> None:
    version = versions["version"]
    expected = checkup.backend
    wanted_url = index_url(expected, checkup.accelerator)
    if expected in ("cuda", "rocm") and kind == "cpu":
        result.fail(
            f"torch {version} is a CPU-only build, but the bundle expects {expected}",
            f"Install the {expected.upper()} build from {wanted_url} (pin the labelled version, e.g. "
            f"torch=={version.split('+')[0]}+{wanted_url.rsplit('/', 1)[1]}).",
        )
    elif expected in ("cuda", "rocm") and kind != expected:
        result.fail(
            f"torch {version} is a {kind} build, but the bundle expects {expected}", f"Install the {expected} build from {wanted_url}."
        )
    elif expected == "cpu" and kind != "cpu":
        result.warn(
            f"torch {version} is a {kind} build on a cpu target: it works, but carries GPU libraries for nothing",
            "Lock for cpu with `bundler lock --cpu` to get the small CPU wheel.",
        )
    if expected == kind and kind != "cpu" and checkup.accelerator:
        built = versions.get("cuda" if kind == "cuda" else "hip") or ""
        if not accelerator_matches(built, checkup.accelerator):
            result.warn(
                f"torch was built for {kind} {built}, the bundle targets {checkup.accelerator}",
                f"Re-lock with `bundler lock --{kind} {checkup.accelerator}` or update [target] accelerator.",
            )
    wanted_torch = checkup.bundle.target.get("torch") if checkup.bundle and not checkup.bundle.error else None
    if wanted_torch and not same_release(version, wanted_torch):
        result.values["target_torch"] = wanted_torch
        result.fail(
            f"torch {version} is installed, the bundle targets torch {wanted_torch}",
            "Install the locked torch, or rebuild the image with `bundler build`.",
        )
