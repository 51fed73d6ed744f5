"""The preflight: what the import check would refuse, read from wheels before anything compiles."""

from __future__ import annotations

import io
import tarfile
import zipfile
from types import SimpleNamespace

import pytest

from bundler.contracts.lockformat import Pin
from bundler.errors import BuildError
from bundler.fsutil import sha256_file
from bundler.image import preflight, wheelbuild

TORCH = {
    "torch/__init__.py": "from torch._C import *\n",
    "torch/_C.cpython-311-x86_64-linux-gnu.so": "",
    "torch/_C/_nn.pyi": "",
    "torch/nn/__init__.py": "",
    "torch/share/cmake/Torch/TorchConfig.cmake": "",
    "torch-2.13.0.dist-info/METADATA": "",
}


def wheel(tmp_path, name: str, files: dict[str, str]):
    path = tmp_path / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
    return path


def provider(tmp_path, dist="torch", version="2.13.0+cpu", files=None):
    return preflight.Provider(dist, version, preflight.WheelModules.read(wheel(tmp_path, dist, files or TORCH)))


def stale(tmp_path, files: dict[str, str], providers=None) -> list[tuple[str, str, int]]:
    found = preflight.stale_imports("oldpkg", "1.0", wheel(tmp_path, "oldpkg", files), providers or [provider(tmp_path)])
    return [(s.module, s.file, s.line) for s in found]


def test_a_module_the_pinned_torch_does_not_ship_is_found_where_the_import_chain_reaches_it(tmp_path):
    files = {
        "oldpkg/__init__.py": "from .data import loader\n",
        "oldpkg/data/__init__.py": "",
        "oldpkg/data/loader.py": "import os\n\nimport torch\nfrom torch._six import string_classes\n",
    }
    assert stale(tmp_path, files) == [("torch._six", "oldpkg/data/loader.py", 4)]


@pytest.mark.parametrize(
    "source",
    [
        "try:\n    from torch._six import inf\nexcept ImportError:\n    inf = float('inf')\n",  # optional
        "def f():\n    import torch._six\n",  # runs only when called
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch._six\n",
        "import torch.share\n",  # a folder without __init__.py is a namespace package
        "from torch._C._nn import gelu\nimport torch._C._other\n",  # an extension module registers its submodules
        "from torch import _six\n",  # may be a name inside torch: not known from files
        "import torch.nn\nimport numpy.distutils\n",  # numpy is no provider whose files are read
    ],
)
def test_imports_that_may_work_are_not_findings(tmp_path, source):
    assert stale(tmp_path, {"oldpkg/__init__.py": source}) == []


def test_a_module_no_top_level_package_imports_is_not_read(tmp_path):
    files = {"oldpkg/__init__.py": "", "oldpkg/contrib/legacy.py": "from torch._six import inf\n"}
    assert stale(tmp_path, files) == []


def test_relative_imports_are_followed_from_a_module_and_from_a_package(tmp_path):
    files = {
        "oldpkg/__init__.py": "from . import utils\n",
        "oldpkg/utils/__init__.py": "from .io import *\n",
        "oldpkg/utils/io.py": "from ..compat import x\n",
        "oldpkg/compat.py": "import torch.utils.ffi\n",
    }
    assert stale(tmp_path, files) == [("torch.utils.ffi", "oldpkg/compat.py", 1)]


def test_newer_syntax_or_broken_source_is_passed_over(tmp_path):
    assert stale(tmp_path, {"oldpkg/__init__.py": "def f(:\n"}) == []


def test_a_module_the_table_says_was_dropped_counts_only_where_the_lock_pins_a_release_without_it(tmp_path):
    files = {"oldpkg/__init__.py": "from pkg_resources import resource_filename\n"}
    (tmp_path / "new").mkdir()
    (tmp_path / "old").mkdir()
    new = provider(tmp_path / "new", "setuptools", "82.0.0", {"setuptools/__init__.py": ""})
    old = provider(tmp_path / "old", "setuptools", "75.0.0", {"setuptools/__init__.py": "", "pkg_resources/__init__.py": ""})
    found = preflight.stale_imports("oldpkg", "1.0", wheel(tmp_path, "oldpkg", files), [new])
    assert [(s.module, s.provider, s.dropped_in) for s in found] == [("pkg_resources", "setuptools 82.0.0", "82")]
    assert preflight.stale_imports("oldpkg", "1.0", wheel(tmp_path, "oldpkg", files), [old]) == []
    hint = preflight.refuse(found, ["fastops"], "requirements.in").hint
    assert hint.startswith("Pin `setuptools<82` in requirements.in (torch needs setuptools>=77")


def test_the_refusal_names_the_package_the_file_the_cause_and_a_route(tmp_path):
    found = preflight.stale_imports(
        "torch-geometric", "1.7.0", wheel(tmp_path, "tg", {"torch_geometric/__init__.py": "import torch._six\n"}), [provider(tmp_path)]
    )
    error = preflight.refuse(found, ["torch-scatter", "torch-sparse"], "requirements.in")
    assert "nothing was compiled (torch-scatter, torch-sparse not built)" in error.message
    assert "torch-geometric 1.7.0 imports torch._six (torch_geometric/__init__.py, line 1), a module torch 2.13.0+cpu does not ship" in (
        error.message
    )
    assert "made for another torch" in error.message
    assert "Pin a release of torch-geometric made for torch 2.13.0+cpu in requirements.in" in error.hint


def _pin(name: str, version: str, path) -> Pin:
    return Pin(name, version, (sha256_file(path),))


def _sdist(tmp_path, name: str, members: list[str]):
    path = tmp_path / f"{name}-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for member in members:
            info = tarfile.TarInfo(f"{name}-1.0/{member}")
            info.size = 0
            archive.addfile(info, io.BytesIO(b""))
    return path


def test_the_build_refuses_before_its_first_compile_what_the_import_check_would(tmp_path, monkeypatch):
    """Pure archives are built first, then the preflight, and the compiled builds never start."""
    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path / "cache"))
    torch = wheel(tmp_path, "torch", TORCH)
    old = wheel(tmp_path, "oldpkg", {"oldpkg/__init__.py": "from torch._six import inf\n"})
    compiled, pure = _sdist(tmp_path, "fastops", ["setup.py", "ops.cpp"]), _sdist(tmp_path, "oldpkg", ["setup.py", "oldpkg/__init__.py"])
    waiting = _sdist(tmp_path, "srconly", ["setup.py", "srconly/__init__.py"])  # direct, its archive cached, no wheel yet
    for path in (torch, compiled, pure, waiting):
        wheelbuild.store(path, sha256_file(path))
    items = [
        {"name": "fastops", "version": "1.0", "sdist": compiled.name, "sdist_sha256": sha256_file(compiled)},
        {"name": "oldpkg", "version": "1.0", "sdist": pure.name, "sdist_sha256": sha256_file(pure)},
    ]
    pins = (
        _pin("torch", "2.13.0+cpu", torch),
        Pin("oldpkg", "1.0", (items[1]["sdist_sha256"],)),
        Pin("fastops", "1.0", (items[0]["sdist_sha256"],)),
        Pin("srconly", "1.0", (sha256_file(waiting),)),
    )
    lock = SimpleNamespace(pins=pins, indexes=[], path=tmp_path / "requirements-rebuild.txt")
    side = SimpleNamespace(source_builds=items, direct=["oldpkg", "fastops", "torch", "srconly"], project_wheels=[])
    built = []

    def fake_wheel_for(item, key, *args, **kwargs):
        built.append(item["name"])
        assert item["name"] == "oldpkg", "a compiled build started before the preflight refused"
        return wheelbuild.store(old, sha256_file(old)), sha256_file(old)

    monkeypatch.setattr(wheelbuild, "_sidecar", lambda *args: side)
    monkeypatch.setattr(wheelbuild, "_torch_plan", lambda *args: None)
    monkeypatch.setattr(wheelbuild, "_wheel_for", fake_wheel_for)
    bundle = SimpleNamespace(target=SimpleNamespace(platform="linux_x86_64", python="3.11"), requirements="requirements.in", root=tmp_path)
    base = SimpleNamespace(reference="local/base:1")
    said: list[str] = []
    with pytest.raises(BuildError) as raised:
        wheelbuild.prepare(lock, bundle, None, base, said.append)
    assert built == ["oldpkg"]
    assert "oldpkg 1.0 imports torch._six" in raised.value.message and "(fastops not built)" in raised.value.message
    assert any("before compiling" in line for line in said)
