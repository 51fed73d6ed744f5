"""A tiny extension of our own that compiles against torch's C++ API, as a real source archive.

``torchop`` 0.1: setup.py imports torch (torch.utils.cpp_extension.CppExtension), so pip cannot
prepare it in an isolated environment; one C++ op, ``scaled_add(a, b, alpha) = a + alpha * b``.
The archive carries the metadata setuptools writes into an sdist (PKG-INFO 2.1 and
``torchop.egg-info/requires.txt``), from which bundler reads its dependencies.
"""

from __future__ import annotations

import html
from pathlib import Path

from tests.deps_support import write_archive

NAME, VERSION = "torchop", "0.1"
SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    name="torchop",
    version="0.1",
    packages=["torchop"],
    install_requires=["typing-extensions"],
    ext_modules=[CppExtension("torchop._C", ["torchop/op.cpp"])],
    cmdclass={"build_ext": BuildExtension},
)
"""
OP = """\
#include <torch/extension.h>

torch::Tensor scaled_add(const torch::Tensor& a, const torch::Tensor& b, double alpha) {
  return a + b * alpha;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scaled_add", &scaled_add, "a + alpha * b"); }
"""
INIT = "import torch  # noqa: F401  (loads libtorch before the op)\n\nfrom torchop._C import scaled_add\n"
PKG_INFO = "Metadata-Version: 2.1\nName: torchop\nVersion: 0.1\n"


def torchop_sdist(folder: Path, requires: str = "typing-extensions\n", extra: dict[str, str] | None = None) -> Path:
    """torchop-0.1.tar.gz in ``folder`` (byte-for-byte the same on every call)."""
    stem = f"{NAME}-{VERSION}"
    contents = {
        f"{stem}/setup.py": SETUP,
        f"{stem}/PKG-INFO": PKG_INFO,
        f"{stem}/torchop/__init__.py": INIT,
        f"{stem}/torchop/op.cpp": OP,
        f"{stem}/torchop.egg-info/PKG-INFO": PKG_INFO,
        f"{stem}/torchop.egg-info/requires.txt": requires,
        **{f"{stem}/{path}": text for path, text in (extra or {}).items()},
    }
    folder.mkdir(parents=True, exist_ok=True)
    return write_archive(folder / f"{stem}.tar.gz", contents)


def local_index(root: Path, archive: Path) -> str:
    """A PEP 503 index at ROOT/simple listing ``archive`` (no hashes in the link, as a plain folder index); its URL."""
    page = root / "simple" / NAME
    page.mkdir(parents=True, exist_ok=True)
    link = f'<a href="{html.escape(archive.resolve().as_uri())}">{html.escape(archive.name)}</a>'
    (page / "index.html").write_text(f"<!DOCTYPE html><html><body>{link}</body></html>\n")
    return (root / "simple").as_uri()


# A kernel that builds only with CUDA: its setup.py stops, as flash-attn's and mamba-ssm's do, when torch finds no nvcc.
CUDA_ONLY_SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME

if CUDA_HOME is None:
    raise RuntimeError("cudaop needs nvcc: CUDA_HOME is not set and torch found no CUDA toolkit")
setup(name="cudaop", version="0.1", packages=[])
"""
# Dependencies that only running setup.py with torch present can tell (no static Requires-Dist anywhere in the archive).
DYNAMIC_SETUP = """\
import torch
from setuptools import setup

setup(name="dynop", version="0.1", packages=["dynop"], install_requires=["six"] if torch.__version__ >= "2" else ["nothing-here"])
"""


def other_sdist(folder: Path, name: str, setup: str) -> Path:
    """``name``-0.1.tar.gz with ``setup`` as its setup.py and a PKG-INFO that declares no dependencies."""
    stem = f"{name}-{VERSION}"
    contents = {
        f"{stem}/setup.py": setup,
        f"{stem}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {VERSION}\n",
        f"{stem}/{name}/__init__.py": "",
    }
    folder.mkdir(parents=True, exist_ok=True)
    return write_archive(folder / f"{stem}.tar.gz", contents)


def add_to_index(index_url: str, archive: Path, name: str) -> None:
    """List ``archive`` as project ``name`` on the local index at ``index_url`` (a file:// URL from local_index)."""
    from urllib.parse import unquote, urlsplit

    page = Path(unquote(urlsplit(index_url).path)) / name
    page.mkdir(parents=True, exist_ok=True)
    link = f'<a href="{html.escape(archive.resolve().as_uri())}">{html.escape(archive.name)}</a>'
    (page / "index.html").write_text(f"<!DOCTYPE html><html><body>{link}</body></html>\n")
