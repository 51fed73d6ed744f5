"""Small repositories of every shape `bundler init` adopts, written for these tests (no
public project's files): each is a dict of relative path -> text."""

from __future__ import annotations

import hashlib
from pathlib import Path

TRAIN = """import argparse

import packaging.version


def main() -> None:
    parser = argparse.ArgumentParser(description="train a tiny model")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    assert packaging.version.Version("1.0") < packaging.version.Version("1.1")
    print("trained", args.steps)


if __name__ == "__main__":
    main()
"""

SHAPES: dict[str, dict[str, str]] = {
    # requirements.txt with a -r include, a script the README runs, a data folder the code does not name
    "requirements": {
        "requirements.txt": "-r requirements/common.txt\ntqdm>=4.60  # progress bars\n",
        "requirements/common.txt": "packaging>=23\n",
        "train.py": TRAIN,
        "README.md": "# tiny\n\nInstall with `pip install -r requirements.txt`, then run:\n\n    python train.py --steps 10\n",
        ".gitignore": "*.log\n/checkpoints/\n",
        "data/raw.csv": "a,b\n1,2\n",
    },
    # PEP 621 package with a console script, an extra and a build system
    "pep621": {
        "pyproject.toml": """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "tinypkg"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = ["tqdm>=4.60", "packaging"]

[project.optional-dependencies]
plots = ["matplotlib"]

[project.scripts]
tiny-train = "tinypkg.train:main"
""",
        "tinypkg/__init__.py": "",
        "tinypkg/train.py": TRAIN,
    },
    # PEP 621 with a src/ layout: importable only once installed, a console script, a script that imports it
    "srclayout": {
        "pyproject.toml": """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "srcpkg"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = ["packaging>=23"]

[project.scripts]
src-hello = "srcpkg.cli:main"
""",
        "src/srcpkg/__init__.py": 'GREETING = "hello from srcpkg"\n',
        "src/srcpkg/cli.py": "import packaging\n\nfrom srcpkg import GREETING\n\n\ndef main():\n    print(GREETING, packaging.__name__)\n",
        "scripts/use.py": "from srcpkg import GREETING\n\nprint('script:', GREETING)\n",
    },
    # setup.py only: a literal install_requires through a name, a computed extras_require
    "setuppy": {
        "setup.py": """from setuptools import find_packages, setup

REQUIREMENTS = ["tqdm>=4.60", "packaging"]


def extras():
    return {"dev": ["pytest"]}


setup(
    name="oldpkg",
    packages=find_packages(),
    install_requires=REQUIREMENTS,
    extras_require=extras(),
    python_requires=">=3.9",
    entry_points={"console_scripts": ["old-train = oldpkg.cli:main"]},
)
""",
        "oldpkg/__init__.py": "",
        "oldpkg/cli.py": "def main():\n    print('old')\n",
    },
    # Poetry: caret and tilde ranges, an optional dependency, a development group, python
    "poetry": {
        "pyproject.toml": """[tool.poetry]
name = "poetpkg"
version = "0.1.0"
description = ""
authors = ["A. Person"]

[tool.poetry.dependencies]
python = "^3.10"
torch = "^2.1.0"
tqdm = "~4.66"
packaging = ">=23,<27"
networkx = { version = "^3.0", optional = true }

[tool.poetry.group.dev.dependencies]
pytest = "^8.0"

[tool.poetry.extras]
graph = ["networkx"]

[build-system]
requires = ["poetry-core"]
build-backend = "poetry.core.masonry.api"
""",
        "poetpkg/__init__.py": "",
        "poetpkg/train.py": TRAIN,
        "Makefile": "train:\n\tpython -m poetpkg.train --steps 2\n",
    },
    # conda only: pytorch and its CUDA build, a renamed package, an unmappable one, a pip list
    "conda": {
        "environment.yml": """name: tiny
channels: [pytorch, nvidia, conda-forge]
dependencies:
  - python=3.11
  - pip
  - pytorch=2.5.1
  - pytorch-cuda=12.1
  - py-opencv=4.8
  - numpy>=1.24
  - libfrobnicate=1.0
  - pip:
    - tqdm>=4.60
""",
        "scripts/train.py": TRAIN,
        "README.md": "Run `python scripts/train.py`.\n",
    },
    # Pipfile: packages, a VCS package left for the user, python_version, a script
    "pipfile": {
        "Pipfile": """[[source]]
url = "https://pypi.org/simple"
verify_ssl = true
name = "pypi"

[packages]
tqdm = ">=4.60"
packaging = "*"
mylib = {git = "https://example.invalid/mylib.git"}

[dev-packages]
pytest = "*"

[requires]
python_version = "3.11"

[scripts]
start = "python main.py --steps 2"
""",
        "main.py": TRAIN,
    },
}


def write_shape(root: Path, shape: str, extra: dict[str, str] | None = None) -> Path:
    for relative, text in {**SHAPES[shape], **(extra or {})}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under root, by relative path."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}
