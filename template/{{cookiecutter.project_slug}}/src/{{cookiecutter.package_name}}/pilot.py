"""The pilot's entry point: which model runs, and what it reads from config/pilot.json.

    python -m {{ cookiecutter.package_name }}.pilot --config config/pilot.json [--run-id ID]
    python -m {{ cookiecutter.package_name }}.pilot --config config/pilot.json --resume ID

You edit this file, model.py and config/pilot.json. The evidence layer (evidence/, its
contract and guarantees in evidence/__init__.py) turns them into runs/<id>/.
"""

from __future__ import annotations

import sys

from .evidence import run_pilot

# The "model" and "training" sections of config/pilot.json, as model.py reads them:
# name -> (type, lowest, highest). Every key is required and no other is allowed; a
# configuration that breaks this is refused before any run folder exists.
PARAMETERS = {
    "model": {"features": (int, 1, 1 << 20), "seed": (int, 0, 2**32 - 1)},
    "training": {"steps": (int, 1, 1000), "learning_rate": (float, 0.0, 1000.0), "scheduler_gamma": (float, 0.0, 1.0)},
}


def main(argv: list[str] | None = None) -> int:
    return run_pilot(f"{__package__}.model", PARAMETERS, argv)


if __name__ == "__main__":
    sys.exit(main())
