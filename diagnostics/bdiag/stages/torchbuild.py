"""Stage 3: torch imports, and its build (CUDA / HIP / CPU) matches the expected backend."""

from __future__ import annotations

from bdiag.datasheet import index_url, version_tuple

NAME = "torch"
NEEDS_TORCH = False


def build_kind(versions: dict) -> str:
    if versions.get("hip"):
        return "rocm"
    if versions.get("cuda"):
        return "cuda"
    return "cpu"


def run(ctx, result) -> None:
    try:
        torch = ctx.probe.import_torch()
    except Exception as error:  # ImportError, or a broken install raising OSError on a missing .so
        result.values["error"] = f"{type(error).__name__}: {error}"
        backend = ctx.backend or "cpu"
        result.fail(
            f"`import torch` failed: {type(error).__name__}: {error}",
            "Install the locked torch into this interpreter (`python -m pip install --require-hashes --no-deps -r "
            "requirements-rebuild.txt`), "
            f"or get it from {index_url(backend, ctx.accelerator)}; check the interpreter stage first.",
        )
        return
    versions = ctx.probe.torch_versions(torch)
    kind = build_kind(versions)
    result.values.update(versions, build=kind, file=getattr(torch, "__file__", None))
    result.summary = f"torch {versions['version']} ({kind})"
    ctx.torch = torch
    ctx.facts["torch"] = versions
    if ctx.backend is None:
        ctx.backend = kind if kind != "cpu" and ctx.probe.cuda_available(torch) else "cpu"
        ctx.backend_source = "inferred"
        result.note(f"no expected backend given: assuming {ctx.backend} (pass --backend to be explicit)")
    result.values["expected_backend"] = ctx.backend
    _check_build(ctx, result, kind, versions)


def _check_build(ctx, result, kind: str, versions: dict) -> None:
    version = versions["version"]
    expected = ctx.backend
    wanted_url = index_url(expected, ctx.accelerator)
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
    if expected == kind and kind != "cpu" and ctx.accelerator:
        built = versions.get("cuda" if kind == "cuda" else "hip") or ""
        if version_tuple(built)[:2] != version_tuple(ctx.accelerator)[:2]:
            result.warn(
                f"torch was built for {kind} {built}, the bundle targets {ctx.accelerator}",
                f"Re-lock with `bundler lock --{kind} {ctx.accelerator}` or update [target] accelerator.",
            )
    wanted_torch = ctx.bundle.target.get("torch") if ctx.bundle and not ctx.bundle.error else None
    if wanted_torch and version_tuple(version.split("+")[0]) != version_tuple(wanted_torch):
        result.values["target_torch"] = wanted_torch
        result.fail(
            f"torch {version} is installed, the bundle targets torch {wanted_torch}",
            "Install the locked torch, or rebuild the image with `bundler build`.",
        )
