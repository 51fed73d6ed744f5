"""Write the shipped copies of the contracts: ``python -m bundler.contracts.generate [--check]``.

diagnostics/ runs without bundler (standard library + torch) and the generated project
without bundler, so the contracts they need travel as copies: each is this package's
module, byte for byte, under a header naming its source. ``--check`` writes nothing and
exits 1 when a copy differs from what would be written (the suite runs the same check).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
REPOSITORY = PACKAGE.parent.parent
TEMPLATE_PACKAGE = "template/{{cookiecutter.project_slug}}/src/{{cookiecutter.package_name}}"
COPIES = {
    "diagnostics/bdiag/contracts": ("lockformat", "oneline", "markers", "buildtag", "bundleschema", "planschema", "syslibs", "dropped"),
    f"{TEMPLATE_PACKAGE}/evidence/contracts": ("runid", "pilotconfig"),
}
# Tables kept as TOML data in bundler that a copy needs: written as JSON, which the diagnostics
# read on every Python they run on (tomllib is 3.11+)
DATA_COPIES = {"diagnostics/bdiag/contracts/system-libraries.json": "images/system-libraries.toml"}
INIT = '"""Copies of bundler\'s contracts (bundler/contracts/ in bundler\'s repository): generated, do not edit."""\n'


def header(module: str) -> str:
    return f"# Generated from bundler/contracts/{module}.py by `python -m bundler.contracts.generate`: do not edit.\n"


def expected(repository: Path = REPOSITORY) -> dict[Path, str]:
    """Every copy's path and the text it must hold."""
    files = {}
    for folder, modules in COPIES.items():
        files[repository / folder / "__init__.py"] = INIT
        for module in modules:
            files[repository / folder / f"{module}.py"] = header(module) + (PACKAGE / f"{module}.py").read_text(encoding="utf-8")
    for copy, source in DATA_COPIES.items():
        files[repository / copy] = data_copy(source)
    return files


def data_copy(source: str) -> str:
    """The JSON text of the TOML table at ``source``, with a key naming where it comes from."""
    try:
        import tomllib  # novermin (Python 3.10 takes the backport below)
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    table = tomllib.loads((REPOSITORY / source).read_text(encoding="utf-8"))
    note = f"Generated from {source} by `python -m bundler.contracts.generate`: do not edit."
    return json.dumps({"_generated": note, **table}, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def differing(repository: Path = REPOSITORY) -> list[Path]:
    """The copies that are missing or differ from their source."""
    return [path for path, text in expected(repository).items() if not path.is_file() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str]) -> int:
    stale = differing()
    if "--check" in argv:
        for path in stale:
            print(f"{path.relative_to(REPOSITORY)} differs from its source: run `python -m bundler.contracts.generate`", file=sys.stderr)
        return 1 if stale else 0
    for path, text in expected().items():
        if path in stale:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(REPOSITORY)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
