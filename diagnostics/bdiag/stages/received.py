"""Received = ordered (stage 4): the GPUs the container sees against plan.toml's order.

The image chosen at order time proves nothing: the model and the number of GPUs visible
here must be what was paid for (lots × cards per lot). The result's ``order`` value holds
the one line the reports print.
"""

from __future__ import annotations

from collections import Counter

from bdiag.datasheet import match_gpu, names_card

VISIBLE = {"cuda": ("CUDA_VISIBLE_DEVICES",), "rocm": ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")}
NO_PLAN_HINT = "Run from the project (plan.toml beside bundle.toml, or pass --project) so that the box is checked against the order."


def received_line(devices: list) -> str:
    if not devices:
        return "no GPU"
    counts = Counter(info["name"] for info in devices)
    return ", ".join(f"{count} × {name}" for name, count in counts.items())


def not_compared(checkup, result, why: str) -> None:
    """On the CPU backend the order is only recorded: it is checked on the rented GPU box."""
    order = checkup.order
    line = f"ordered {order.describe()}; not compared here: {why}" if order else f"no plan.toml; nothing compared: {why}"
    result.values["order"] = dict(order.as_dict() if order else {}, line=line, verdict="skip")


def compare(checkup, result, devices: list) -> None:
    order, got = checkup.order, received_line(devices)
    if order is None:
        result.values["order"] = {"line": f"no plan.toml; received {got}", "verdict": "warn", "received": len(devices)}
        result.warn(f"no plan.toml: the {got} received here are not compared with an order", NO_PLAN_HINT)
        return
    other = [info for info in devices if not names_card(order.card, info["name"])]
    count_ok, model_ok = len(devices) == order.cards, not other
    verdict = "pass" if count_ok and model_ok else "fail"
    line = f"ordered {order.describe()}; received {got}" + (" — as ordered" if verdict == "pass" else " — differs")
    names = [info["name"] for info in devices]
    result.values["order"] = dict(order.as_dict(), line=line, verdict=verdict, received=len(devices), received_names=names)
    if not model_ok:
        _wrong_model(result, order, other)
    if not count_ok:
        _wrong_count(checkup, result, order, devices)


def _wrong_model(result, order, other: list) -> None:
    name = other[0]["name"]
    row = match_gpu(name)
    known = f" (datasheet: {row['name']})" if row else " (no datasheet row)"
    mig = " It is a MIG slice, not a whole card." if " MIG " in f" {name} " else ""
    result.fail(
        f"ordered {order.card} but received {name}{known} on {len(other)} of the visible GPUs",
        f"The box is another offer than the one paid for.{mig} Ask the provider for the ordered {order.card} before starting, "
        f"or correct [package] card in {order.plan} if this is the card you ordered.",
    )


def _wrong_count(checkup, result, order, devices: list) -> None:
    environ = checkup.probe.environ()
    seen, wanted = len(devices), order.cards
    narrowing = [f"{name}={environ[name]}" for name in VISIBLE.get(checkup.backend, ()) if environ.get(name) is not None]
    if seen < wanted:
        causes = []
        if narrowing:
            causes.append(f"{' and '.join(narrowing)} hides the others (unset it)")
        if any(" MIG " in f" {info['name']} " for info in devices):
            causes.append("MIG slices are visible instead of whole cards")
        gpus_flag = "--gpus all" if checkup.backend == "cuda" else "--device=/dev/kfd --device=/dev/dri"
        causes.append(f"the container was started with fewer GPUs (use {gpus_flag}, not a count or device list)")
        causes.append("or the offer holds fewer cards than ordered (ask the provider)")
        result.fail(f"ordered {order.describe()} but the container sees {seen}", "Likely cause: " + "; ".join(causes) + ".")
    else:
        result.fail(
            f"ordered {order.describe()} but the container sees {seen}",
            f"Check the offer (you may be billed for {seen}), or correct [package] lots in {order.plan}; until then restrict the run "
            f"to the cards paid for with {VISIBLE.get(checkup.backend, ('CUDA_VISIBLE_DEVICES',))[0]}.",
        )
