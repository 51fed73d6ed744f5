"""Stand-alone diagnostics of a bundle's machine: ``python diagnostics/run.py --help``.

Standard library plus torch only; see README.md in this folder for the stages and the
exit codes. This file stays thin: it puts its own folder on sys.path (``python -I``
leaves it off) and hands over to bdiag.cli.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from bdiag.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
