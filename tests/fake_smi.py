"""A stand-in for nvidia-smi and rocm-smi that replays a capture (tests only).

usage: fake_smi.py TOOL ARGS...  (run through a shim named nvidia-smi or rocm-smi on PATH)

The state file named by FAKE_SMI_STATE holds what the machine answered: one dict of
--query-gpu fields per GPU, the fields this driver refuses, the plain outputs keyed by
their arguments (``topo -m``, ``nvlink --status``, ``--showtopo``), and what ``-lms``
samples before and under load. FAKE_SMI_TIME_SCALE shrinks every delay (a start-up of
2 s and 200 ms ticks at 0.05 become 0.1 s and 10 ms) so that replays stay fast.
"""

from __future__ import annotations

import json
import os
import sys
import time


def _scale() -> float:
    return float(os.environ.get("FAKE_SMI_TIME_SCALE", "1"))


def _option(args: list, name: str) -> str | None:
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _selected(state: dict, args: list) -> list:
    wanted = _option(args, "-i") or _option(args, "--id")
    if wanted is None:
        return state["gpus"]
    keys = [key.strip() for key in wanted.split(",")]
    return [gpu for gpu in state["gpus"] if gpu["index"] in keys or gpu["uuid"] in keys]


def _row(gpu: dict, fields: list, extra: dict) -> str:
    return ", ".join(str(extra.get(field, gpu.get(field, "[N/A]"))) for field in fields)


def query_gpu(state: dict, args: list) -> int:
    fields = [field.strip() for field in (_option(args, "--query-gpu") or "").split(",") if field.strip()]
    known = set(state["gpus"][0]) | set(state["sampler"]["load"]) if state["gpus"] else set()
    for field in fields:
        if field in state.get("invalid", []) or field not in known:
            print(f'Field "{field}" is not a valid field to query.')
            return 2
    gpus = _selected(state, args)
    if not gpus:
        print("No devices were found")
        return 6
    interval = _option(args, "-lms")
    if interval is None:
        for gpu in gpus:
            print(_row(gpu, fields, {}))
        return 0
    return _sample(state, gpus, fields, int(interval) / 1000)


def _sample(state: dict, gpus: list, fields: list, interval: float) -> int:
    sampler = state["sampler"]
    time.sleep(sampler.get("startup_s", 0) * _scale())
    tick = 0
    while True:
        phase = "idle" if tick < sampler.get("idle_rows", 0) else "load"
        for gpu in gpus:
            reading = dict(sampler[phase], **sampler.get("per_gpu", {}).get(gpu["index"], {}).get(phase, {}))
            print(_row(gpu, fields, reading), flush=True)
        tick += 1
        time.sleep(interval * _scale())


def main(argv: list) -> int:
    tool, args = argv[0], argv[1:]
    with open(os.environ["FAKE_SMI_STATE"], encoding="utf-8") as handle:
        state = json.load(handle)[tool]
    if tool == "nvidia-smi" and any(arg.startswith("--query-gpu") for arg in args):
        return query_gpu(state, args)
    if tool == "nvidia-smi" and any(arg.startswith("--query-compute-apps") for arg in args):
        return 0  # inside a container the host's processes are not listed
    text = state.get("texts", {}).get(" ".join(args))
    if text is None:
        print(f"fake {tool}: no capture for {' '.join(args)!r}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
