"""torch's build against the Target: the program the dependency checks run in a new image.

The diagnostics folder carries its own copy of the torch comparison (it runs without
bundler).
"""

from __future__ import annotations

import json


def torch_build_check(target) -> str:
    """Python code that imports torch and compares its build with the Target (exit 1 if not)."""
    expected = {"torch": target.torch, "backend": target.backend, "accelerator": target.accelerator}
    return (
        "import json, sys\n"
        f"want = {json.dumps(expected)}\n"
        "import torch\n"
        "got = {'version': torch.__version__, 'cuda': getattr(torch.version, 'cuda', None), 'hip': getattr(torch.version, 'hip', None)}\n"
        "problems = []\n"
        "if torch.__version__.split('+')[0] != want['torch']:\n"
        "    problems.append('torch ' + torch.__version__ + ' is not ' + want['torch'])\n"
        "acc = want['accelerator']\n"
        "if want['backend'] == 'cuda' and not (got['cuda'] or '').startswith(acc):\n"
        "    problems.append('torch.version.cuda is %r, the Target wants CUDA %s' % (got['cuda'], acc))\n"
        "if want['backend'] == 'rocm' and not (got['hip'] or '').startswith(acc):\n"
        "    problems.append('torch.version.hip is %r, the Target wants ROCm %s' % (got['hip'], acc))\n"
        "if want['backend'] == 'cpu' and (got['cuda'] or got['hip']):\n"
        "    problems.append('a CPU Target got a GPU build (cuda=%r, hip=%r)' % (got['cuda'], got['hip']))\n"
        "print(json.dumps({'torch': got, 'problems': problems}))\n"
        "sys.exit(1 if problems else 0)\n"
    )
