"""A local PEP 503 index of tiny wheels named exactly like PyTorch's, plus a fake PyPI.

PyTorch's indexes (download.pytorch.org/whl/<tag>) cannot be reached here, so tests map
them onto this folder with ``BUNDLER_INDEX_MAP``. Layout::

    ROOT/files/*.whl                         every wheel, real zip structure
    ROOT/whl/<tag>/<project>/index.html      stands for https://download.pytorch.org/whl/<tag>
    ROOT/pypi/simple/<project>/index.html    stands for https://pypi.org/simple

The wheels install with ``pip install --require-hashes`` (METADATA, WHEEL and RECORD are
real) and the fake torch answers ``torch.__version__`` / ``torch.version.cuda|hip`` like
the real one. Builds are byte-for-byte reproducible, so hashes are stable across runs.
"""

from __future__ import annotations

import base64
import hashlib
import html
import zipfile
from dataclasses import dataclass
from pathlib import Path

PYTHONS = ("3.11", "3.12", "3.13")
LINUX_X86 = 'platform_system == "Linux" and platform_machine == "x86_64"'
TORCH = "2.9.1"
TORCHVISION = "0.24.1"
TRITON = "3.5.1"
# build tag -> (torch.version.cuda, torch.version.hip, nvidia dependencies)
BUILDS = {
    "cu126": ("12.6", None, {"nvidia-cuda-runtime-cu12": "12.6.77", "nvidia-cublas-cu12": "12.6.4.1"}),
    "cu128": ("12.8", None, {"nvidia-cuda-runtime-cu12": "12.8.90", "nvidia-cublas-cu12": "12.8.4.1"}),
    "cu130": ("13.0", None, {"nvidia-cuda-runtime": "13.0.96", "nvidia-cublas": "13.1.0.3"}),
    "rocm6.3": (None, "6.3.42131", {}),
    "rocm6.4": (None, "6.4.43482", {}),
    "cpu": (None, None, {}),
}
PYPI_PACKAGES = {  # name -> (version, requires)
    "filelock": ("3.20.0", []),
    "typing-extensions": ("4.15.0", []),
    "setuptools": ("80.9.0", []),
    "markupsafe": ("3.0.3", []),
    "jinja2": ("3.1.6", ["MarkupSafe>=2.0"]),
    "numpy": ("2.1.0", []),
}
EXTRA_PYPI_VERSIONS = {"numpy": ["1.26.4"]}
_EPOCH = (2020, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class FakeIndex:
    root: Path

    @property
    def torch_root_url(self) -> str:
        return (self.root / "whl").as_uri()

    @property
    def pypi_url(self) -> str:
        return (self.root / "pypi" / "simple").as_uri()

    def index_map(self) -> str:
        """Value for BUNDLER_INDEX_MAP: the public URLs -> this folder."""
        return f"https://download.pytorch.org/whl={self.torch_root_url} https://pypi.org/simple={self.pypi_url}"

    def file_hash(self, filename: str) -> str:
        return hashlib.sha256((self.root / "files" / filename).read_bytes()).hexdigest()


def build_fake_index(root: Path) -> FakeIndex:
    root = Path(root)
    files = root / "files"
    files.mkdir(parents=True, exist_ok=True)
    torch_pages: dict[tuple[str, str], list[str]] = {}
    pypi_pages: dict[str, list[str]] = {}

    def add(pages: dict, key, filename: str) -> None:
        pages.setdefault(key, []).append(filename)

    for tag, (cuda, hip, nvidia) in BUILDS.items():
        label = f"+{tag}"
        platform = "linux_x86_64" if tag.startswith("rocm") else "manylinux_2_28_x86_64"
        requires = ["filelock", "typing-extensions>=4.10.0", 'setuptools; python_version >= "3.12"', "jinja2"]
        requires += [f"{name}=={version}; {LINUX_X86}" for name, version in nvidia.items()]
        if tag.startswith("cu"):
            requires.append(f"triton=={TRITON}; {LINUX_X86}")
        if tag.startswith("rocm"):
            requires.append(f'pytorch-triton-rocm=={TRITON}; platform_system == "Linux"')
        for python in PYTHONS:
            py = "cp" + python.replace(".", "")
            wheel_tag = f"{py}-{py}-{platform}"
            add(torch_pages, (tag, "torch"), _torch_wheel(files, TORCH + label, wheel_tag, requires, cuda, hip))
            add(
                torch_pages,
                (tag, "torchvision"),
                _wheel(files, "torchvision", TORCHVISION + label, wheel_tag, [f"torch=={TORCH}{label}", "numpy"]),
            )
            add(torch_pages, (tag, "torchaudio"), _wheel(files, "torchaudio", TORCH + label, wheel_tag, [f"torch=={TORCH}{label}"]))
            if tag.startswith("rocm"):
                add(torch_pages, (tag, "pytorch-triton-rocm"), _wheel(files, "pytorch-triton-rocm", TRITON, f"{py}-{py}-linux_x86_64", []))
        for name, version in nvidia.items():
            add(torch_pages, (tag, name), _wheel(files, name, version, "py3-none-manylinux_2_27_x86_64", []))
    for python in PYTHONS:
        py = "cp" + python.replace(".", "")
        add(pypi_pages, "triton", _wheel(files, "triton", TRITON, f"{py}-{py}-manylinux_2_27_x86_64", []))
        # PyPI's own unlabelled torch (a CUDA build): the lock must never pick it.
        pypi_requires = ["filelock", f"nvidia-cuda-runtime-cu12==12.8.90; {LINUX_X86}"]
        add(pypi_pages, "torch", _torch_wheel(files, TORCH, f"{py}-{py}-manylinux_2_28_x86_64", pypi_requires, "12.8", None))
    for name, (version, requires) in PYPI_PACKAGES.items():
        add(pypi_pages, name, _wheel(files, name, version, "py3-none-any", requires))
        for other in EXTRA_PYPI_VERSIONS.get(name, []):
            add(pypi_pages, name, _wheel(files, name, other, "py3-none-any", requires))
    add(pypi_pages, "nvidia-cuda-runtime-cu12", _wheel(files, "nvidia-cuda-runtime-cu12", "12.8.90", "py3-none-manylinux_2_27_x86_64", []))
    for (tag, project), names in torch_pages.items():
        _page(root / "whl" / tag / project, names)
    for project, names in pypi_pages.items():
        _page(root / "pypi" / "simple" / project, names)
    return FakeIndex(root)


def add_pypi_wheel(index: FakeIndex, name: str, version: str, requires: list[str], modules: dict | None = None) -> Path:
    """One more pure wheel on the fake PyPI (its page lists every version of it); returns the wheel."""
    files = index.root / "files"
    filename = _wheel(files, name, version, "py3-none-any", requires, modules)
    dist = name.replace("-", "_")
    _page(index.root / "pypi" / "simple" / name, [f.name for f in files.glob(f"{dist}-*.whl")])
    return files / filename


def real_torch_index(root: Path, wheel: Path, tag: str = "cpu") -> str:
    """A PEP 503 torch index at ROOT/whl/<tag>/torch/ linking a real wheel; returns ROOT/whl's URL."""
    page = Path(root) / "whl" / tag / "torch"
    page.mkdir(parents=True, exist_ok=True)
    (page / "index.html").write_text(
        "<!DOCTYPE html><html><body><a "
        f'href="{html.escape(Path(wheel).resolve().as_uri())}">{html.escape(Path(wheel).name)}</a></body></html>\n'
    )
    return (Path(root) / "whl").as_uri()


def _page(folder: Path, filenames: list[str], requires_python: dict[str, str] | None = None) -> None:
    """A PEP 503 page; ``requires_python`` gives a file's ``data-requires-python`` (escaped, as PyPI serves it)."""
    folder.mkdir(parents=True, exist_ok=True)
    said = requires_python or {}

    def attribute(name: str) -> str:
        return f' data-requires-python="{html.escape(said[name])}"' if name in said else ""

    links = "".join(
        f'<a href="../../../files/{html.escape(name)}"{attribute(name)}>{html.escape(name)}</a>\n' for name in sorted(set(filenames))
    )
    (folder / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")


def _torch_wheel(files: Path, version: str, wheel_tag: str, requires: list[str], cuda, hip) -> str:
    modules = {
        "torch/__init__.py": f"from . import version\n__version__ = {version!r}\n",
        "torch/version.py": f"__version__ = {version!r}\ncuda = {cuda!r}\nhip = {hip!r}\n",
    }
    return _wheel(files, "torch", version, wheel_tag, requires, modules)


def _wheel(files: Path, name: str, version: str, wheel_tag: str, requires: list[str], modules: dict | None = None) -> str:
    dist = name.replace("-", "_")
    filename = f"{dist}-{version}-{wheel_tag}.whl"
    path = files / filename
    if path.exists():
        return filename
    info = f"{dist}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", "Requires-Python: >=3.9"]
    metadata += [f"Requires-Dist: {item}" for item in requires]
    contents = dict(modules or {f"{dist}/__init__.py": f"__version__ = {version!r}\n"})
    contents[f"{info}/METADATA"] = "\n".join(metadata) + "\n"
    pure = wheel_tag.endswith("-any")
    contents[f"{info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: bundler-fakeindex\nRoot-Is-Purelib: {'true' if pure else 'false'}\nTag: {wheel_tag}\n"
    )
    record = [f"{arc},sha256={_digest(data)},{len(_bytes(data))}" for arc, data in contents.items()]
    contents[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for arc, data in contents.items():
            entry = zipfile.ZipInfo(arc, date_time=_EPOCH)
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, data)
    tmp.replace(path)
    return filename


def _bytes(data: str | bytes) -> bytes:
    return data if isinstance(data, bytes) else data.encode()


def _digest(data: str | bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(_bytes(data)).digest()).rstrip(b"=").decode()
