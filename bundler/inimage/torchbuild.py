"""torch imports and its build matches the Target (contracts/buildtag.py's rule): version, CUDA or ROCm version, or CPU.

``python -m bundler.inimage.torchbuild --torch 2.13.0 --backend cpu [--accelerator 12.8]``
prints one JSON line ``{"torch": {...}, "problems": [...]}`` and exits 1 when a problem
was found (an ImportError is the program's own failure, with its traceback).
"""

from __future__ import annotations

import argparse
import json
import sys

from bundler.contracts.buildtag import TorchBuild, torch_build_problems  # shipped beside this folder (image/checks.py)


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", required=True)
    parser.add_argument("--backend", required=True, choices=("cuda", "rocm", "cpu"))
    parser.add_argument("--accelerator", default="")
    args = parser.parse_args(argv)
    import torch

    got = TorchBuild(torch.__version__, getattr(torch.version, "cuda", None), getattr(torch.version, "hip", None))
    found = torch_build_problems(got, args.torch, args.backend, args.accelerator)
    print(json.dumps({"torch": {"version": got.version, "cuda": got.cuda, "hip": got.hip}, "problems": found}))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
