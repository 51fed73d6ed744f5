"""torch's build against the Target: the program the dependency checks run in a new image.

The torch comparison is contracts/buildtag.py's, which the diagnostics carry as a
generated copy (they run without bundler).
"""

from __future__ import annotations

import json
from pathlib import Path

from bundler.contracts import buildtag


def torch_build_check(target) -> str:
    """Python code that imports torch and compares its build with the Target (exit 1 if not).

    The rule is contracts/buildtag.py's, carried in the program itself (the image has no bundler)."""
    expected = {"torch": target.torch, "backend": target.backend, "accelerator": target.accelerator}
    return (
        Path(buildtag.__file__).read_text(encoding="utf-8") + "\nimport json, sys\n"
        f"want = {json.dumps(expected)}\n"
        "import torch\n"
        "got = TorchBuild(torch.__version__, getattr(torch.version, 'cuda', None), getattr(torch.version, 'hip', None))\n"
        "problems = torch_build_problems(got, want['torch'], want['backend'], want['accelerator'])\n"
        "print(json.dumps({'torch': {'version': got.version, 'cuda': got.cuda, 'hip': got.hip}, 'problems': problems}))\n"
        "sys.exit(1 if problems else 0)\n"
    )
