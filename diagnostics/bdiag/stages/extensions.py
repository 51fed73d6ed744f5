"""Stage 6: every extension the bundle declares imports and runs its check; torch.compile smoke."""

from __future__ import annotations

NAME = "extensions"
NEEDS_TORCH = True


def compile_backend(checkup) -> str | None:
    """inductor on GPUs (Triton is what breaks there). Off by default on CPU: importing dynamo
    alone costs ~4 s and inductor's C++ build ~20 s cold, more than the rest of a CPU run.
    BUNDLE_DIAG_COMPILE=inductor|eager|off overrides either default."""
    chosen = checkup.probe.environ().get("BUNDLE_DIAG_COMPILE", "").strip().lower()
    if chosen in ("inductor", "eager"):
        return chosen
    return "inductor" if checkup.gpu and chosen != "off" else None


def run(checkup, result) -> None:
    declared = checkup.bundle.extensions if checkup.bundle and not checkup.bundle.error else []
    loaded = []
    for item in declared:
        if _extension(checkup, result, item):
            loaded.append(item["module"])
    result.values.update(declared=[item["module"] for item in declared], loaded=loaded)
    _compile(checkup, result)
    result.summary = f"{len(loaded)}/{len(declared)} extensions" + (
        f", compile {result.values['compile']}" if "compile" in result.values else ""
    )


def _extension(checkup, result, item: dict) -> bool:
    module_name, check = item["module"], str(item.get("check", "")).strip()
    distribution = item.get("name", module_name)
    try:
        checkup.probe.import_module(module_name)
    except Exception as error:
        result.fail(f"extension {distribution} does not import ({module_name}): {type(error).__name__}: {error}", _hint(item))
        return False
    if not check:
        result.note(f'{module_name}: imported; no check declared (add check = "…" to [[extensions]] to run one op)')
        return True
    namespace = {"torch": checkup.torch, module_name.split(".")[0]: checkup.probe.import_module(module_name.split(".")[0])}
    try:
        value = eval(check, namespace)  # the bundle's own declared expression
    except Exception as error:
        result.fail(f"extension {distribution} imports, but its check `{check}` raised {type(error).__name__}: {error}", _hint(item))
        return False
    result.values.setdefault("checks", {})[module_name] = repr(value)[:200]
    return True


def _hint(item: dict) -> str:
    if item.get("compile"):
        return (
            f"{item.get('name', item['module'])} is compiled against torch: rebuild it for this torch/CUDA on a devel base "
            "(`bundler build` picks one when compile = true), and keep its version from the lock."
        )
    return (
        f"Install {item.get('name', item['module'])} at the version in the lock, built for this torch and {item.get('backend', 'backend')}."
    )


def _compile(checkup, result) -> None:
    backend = compile_backend(checkup)
    if backend is None:
        result.values["compile"] = "off"
        if not checkup.gpu:
            result.note("torch.compile smoke off on CPU by default (set BUNDLE_DIAG_COMPILE=eager or inductor to run it)")
        return
    device = "cuda" if checkup.gpu else "cpu"
    try:
        error = checkup.probe.compile_smoke(checkup.torch, device, backend)
    except Exception as failure:
        result.values["compile"] = f"{backend}: failed"
        result.warn(
            f"torch.compile (backend {backend}) failed: {type(failure).__name__}: "
            f"{str(failure).splitlines()[0][:200] if str(failure) else ''}",
            "Only projects that call torch.compile need it: on GPUs check the triton package matches torch; on CPU a C++ compiler is "
            "needed for inductor.",
        )
        return
    result.values["compile"] = backend
    result.values["compile_max_error"] = error
    if not error <= 1e-4:
        result.warn(
            f"torch.compile (backend {backend}) gives results that differ from eager by {error:.3g}",
            "Report it with the torch and triton versions; run the project without torch.compile meanwhile.",
        )
