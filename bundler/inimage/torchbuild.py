"""torch imports and its build matches the Target: version, CUDA or ROCm version, or CPU.

``python -m bundler.inimage.torchbuild --torch 2.13.0 --backend cpu [--accelerator 12.8]``
prints one JSON line ``{"torch": {...}, "problems": [...]}`` and exits 1 when a problem
was found (an ImportError is the program's own failure, with its traceback).
"""

from __future__ import annotations

import argparse
import json
import sys


def problems(want: dict, got: dict) -> list:
    """What differs between the Target (``want``: torch, backend, accelerator) and the installed build."""
    found = []
    if got["version"].split("+")[0] != want["torch"]:
        found.append(f"torch {got['version']} is not {want['torch']}")
    accelerator = want["accelerator"]
    if want["backend"] == "cuda" and not (got["cuda"] or "").startswith(accelerator):
        found.append(f"torch.version.cuda is {got['cuda']!r}, the Target wants CUDA {accelerator}")
    if want["backend"] == "rocm" and not (got["hip"] or "").startswith(accelerator):
        found.append(f"torch.version.hip is {got['hip']!r}, the Target wants ROCm {accelerator}")
    if want["backend"] == "cpu" and (got["cuda"] or got["hip"]):
        found.append(f"a CPU Target got a GPU build (cuda={got['cuda']!r}, hip={got['hip']!r})")
    return found


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", required=True)
    parser.add_argument("--backend", required=True, choices=("cuda", "rocm", "cpu"))
    parser.add_argument("--accelerator", default="")
    args = parser.parse_args(argv)
    import torch

    got = {"version": torch.__version__, "cuda": getattr(torch.version, "cuda", None), "hip": getattr(torch.version, "hip", None)}
    found = problems({"torch": args.torch, "backend": args.backend, "accelerator": args.accelerator}, got)
    print(json.dumps({"torch": got, "problems": found}))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
