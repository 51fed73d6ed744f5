"""bundle.toml: the project's Target (where it will run) and packaging settings.

Schema (every key is checked on load, by the schema the diagnostics share:
contracts/bundleschema.py, where adding a key is one line; an unknown key is an error,
so a typo never passes silently)::

    [project]
    name = "Document Classifier Pilot"
    package = "doc_pilot"                 # import name under src/ ("" or absent: the project has none)
    entry = "python -m doc_pilot.pilot --config config/pilot.json"   # run from the project root; "" until set

    [target]
    backend = "cuda"                       # cuda | rocm | cpu
    accelerator = "12.8"                   # CUDA or ROCm version; "" for cpu
    torch = "2.13.0"
    python = "3.11"
    platform = "linux_x86_64"              # linux_x86_64 | linux_aarch64
    torch_index = "pytorch"                # pytorch (download.pytorch.org/whl/<build>) | pypi
    base_image = "python:3.11-slim-bookworm"
    base_digest = ""                       # sha256:… once known (bundler build)
    fabric = "infiniband"                  # optional: infiniband | roce (the image gets the RDMA user space) | none

    [build]
    lock = "requirements-rebuild.txt"
    requirements = "requirements.in"       # the lock's input: an adopted project's own requirements file
    install_project = false                # true: the project's own package built (PEP 517) and installed in the image
    size_budget_mb = 3000
    system_packages = ["libgl1"]           # Debian packages in the dependency image (plus apt.txt's, when present)

    [[extensions]]                         # zero or more
    name = "flash-attn"                    # distribution name
    module = "flash_attn"                  # import name
    compile = true                         # needs a devel base to build
    check = "flash_attn.__version__"       # optional expression evaluated after import

    [diagnostics]                          # optional; read by diagnostics/run.py
    memory_hook = "doc_pilot.diag:step"    # function(device) running one representative step
    results_dir = "runs"                   # folder tested for space/speed/checkpoints
    dataloader_workers = 8                 # DataLoader workers the run uses: /dev/shm and cores are judged for them
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bundler.contracts.bundleschema import BACKENDS, bundle_problem
from bundler.contracts.reference import ReferenceError, parse_reference
from bundler.errors import ProjectFileError, UsageError
from bundler.fsutil import read_toml
from bundler.target.fabric import FABRICS
from bundler.target.syspackages import declared_packages
from bundler.target.versions import ACCELERATOR_RE, PYTHON_RE, RELEASE_RE

DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}", re.ASCII)

BUNDLE_FILE = "bundle.toml"
PLATFORMS = ("linux_x86_64", "linux_aarch64")
TORCH_INDEXES = ("pytorch", "pypi")  # where torch comes from: PyTorch's index of the build, or PyPI


@dataclass(frozen=True)
class Target:
    """Where the project will run; everything downstream takes this, never the host."""

    backend: str
    accelerator: str
    torch: str
    python: str
    platform: str = "linux_x86_64"
    base_image: str = ""
    base_digest: str = ""
    torch_index: str = "pytorch"

    def describe(self) -> str:
        build = f"{self.backend} {self.accelerator}".strip()
        source = " from PyPI" if self.torch_index == "pypi" else ""
        return f"torch {self.torch}{source} for {build} on Python {self.python} ({self.platform})"


@dataclass(frozen=True)
class Extension:
    name: str
    module: str
    compile: bool = False
    check: str = ""


@dataclass(frozen=True)
class Bundle:
    root: Path
    name: str
    package: str
    entry: str
    target: Target
    lock: str = "requirements-rebuild.txt"
    requirements: str = "requirements.in"
    install_project: bool = False  # the project's own package goes into the image as a wheel built from it
    size_budget_mb: int = 3000
    extensions: tuple[Extension, ...] = field(default_factory=tuple)
    inputs: dict[str, str] = field(default_factory=dict)  # [inputs] name = "project-relative path", hashed into each run
    fabric: str = ""  # [target] fabric: the network between nodes (target/fabric.py); "" when bundle.toml does not say
    system_packages: tuple[str, ...] = ()  # Debian package names: [build] system_packages, then apt.txt's

    @property
    def path(self) -> Path:
        return self.root / BUNDLE_FILE

    @property
    def lock_path(self) -> Path:
        return self.root / self.lock


def validate_target(target: Target, path: Path | None = None) -> Target:
    """Check the shape of each Target field (which builds exist is the compatibility table's job)."""
    error_kind = ProjectFileError if path is not None else UsageError
    where = f"{path}: " if path is not None else ""
    if target.backend not in BACKENDS:
        raise error_kind(
            f"{where}unknown backend {target.backend!r}.",
            hint=f"Use one of: {', '.join(BACKENDS)}.",
            path=path,
            value=target.backend,
        )
    if target.backend == "cpu" and target.accelerator:
        raise error_kind(
            f"{where}backend 'cpu' takes no accelerator version, got {target.accelerator!r}.",
            hint='Set accelerator = "" for cpu, or choose backend cuda/rocm.',
            path=path,
            value=target.accelerator,
        )
    if target.backend != "cpu" and not ACCELERATOR_RE.fullmatch(target.accelerator):
        example = "12.8" if target.backend == "cuda" else "6.4"
        raise error_kind(
            f"{where}backend {target.backend!r} needs an accelerator version like {example!r}, got {target.accelerator!r}.",
            hint=f'Set accelerator = "{example}" (the {target.backend.upper()} version of the PyTorch build).',
            path=path,
            value=target.accelerator,
        )
    if not RELEASE_RE.fullmatch(target.torch):
        raise error_kind(
            f"{where}torch version {target.torch!r} is not an exact release like '2.13.0'.",
            hint="Pin an exact torch release: the lock and the image are built for exactly one.",
            path=path,
            value=target.torch,
        )
    if not PYTHON_RE.fullmatch(target.python):
        raise error_kind(
            f"{where}Python version {target.python!r} is not a minor version like 3.11.",
            hint="Give major.minor only, e.g. 3.11 or 3.12.",
            path=path,
            value=target.python,
        )
    if target.platform not in PLATFORMS:
        raise error_kind(
            f"{where}platform {target.platform!r} is not supported.",
            hint=f"Use one of: {', '.join(PLATFORMS)}.",
            path=path,
            value=target.platform,
        )
    if target.base_image:
        try:
            parse_reference(target.base_image)
        except ReferenceError as error:
            raise error_kind(
                f"{where}base_image {target.base_image!r} is not an image reference: {error}.",
                hint='Write it as [registry/]name[:tag][@sha256:digest], e.g. base_image = "python:3.11-slim-bookworm".',
                path=path,
                value=target.base_image,
            ) from None
    if target.base_digest and not DIGEST_RE.fullmatch(target.base_digest):
        raise error_kind(
            f"{where}base_digest {target.base_digest!r} is not a sha256 digest (sha256: and 64 hex digits).",
            hint='Leave it empty (base_digest = "") and `bundler build` records the base image\'s digest.',
            path=path,
            value=target.base_digest,
        )
    if target.torch_index not in TORCH_INDEXES:
        raise error_kind(
            f"{where}torch_index {target.torch_index!r} is not one of {', '.join(TORCH_INDEXES)}.",
            hint='Use "pytorch" (PyTorch\'s index of the build, the default) or "pypi" (PyPI\'s own build, when it is the Target\'s).',
            path=path,
            value=target.torch_index,
        )
    return target


def find_project(project: Path | None) -> Path:
    """The project root: the given folder (or the current one), which must hold bundle.toml."""
    root = Path(project) if project is not None else Path.cwd()
    if not (root / BUNDLE_FILE).is_file():
        raise ProjectFileError(
            f"{root / BUNDLE_FILE} not found: {root} is not a bundler project.",
            hint="Pass the project folder (the one holding bundle.toml), adopt this folder with `bundler init`, "
            "or create one with `bundler new DEST`.",
            path=root / BUNDLE_FILE,
        )
    return root.resolve()


def load_bundle(project: Path | None = None) -> Bundle:
    root = find_project(project)
    path = root / BUNDLE_FILE
    data = read_toml(path, hint="Fix the syntax at the position given, or restore the file from version control.")
    return _bundle_from_dict(root, path, data)


def _bundle_from_dict(root: Path, path: Path, data: dict) -> Bundle:
    problem = bundle_problem(data)  # the schema the diagnostics share (contracts/bundleschema.py): keys, kinds, required
    if problem is not None:
        raise ProjectFileError(f"{path}: {problem.text}.", hint=problem.hint, path=path, value=problem.value or None)
    project, target_data, build = data["project"], data["target"], data.get("build", {})
    if project.get("package") and not project["package"].isidentifier():
        raise ProjectFileError(
            f"{path}: [project] package {project['package']!r} is not a Python identifier.",
            hint="Use the import name of the package under src/, e.g. doc_pilot.",
            path=path,
            value=project["package"],
        )
    fields = {key: str(value) for key, value in target_data.items() if key != "fabric"}
    target = validate_target(Target(**fields | {"accelerator": str(target_data.get("accelerator", ""))}), path)
    return Bundle(
        root=root,
        name=project["name"],
        package=project.get("package", ""),
        entry=project.get("entry", ""),
        target=target,
        lock=_lock_name(root, path, build.get("lock", "requirements-rebuild.txt")),
        requirements=_lock_name(root, path, build.get("requirements", "requirements.in"), key="requirements"),
        size_budget_mb=build.get("size_budget_mb", 3000),
        install_project=build.get("install_project", False),
        extensions=tuple(
            Extension(e["name"], e["module"], e.get("compile", False), str(e.get("check", ""))) for e in data.get("extensions", [])
        ),
        inputs=_inputs(root, path, data.get("inputs", {})),
        fabric=_fabric(path, target_data.get("fabric", "")),
        system_packages=declared_packages(root, path, build.get("system_packages", [])),
    )


def _fabric(path: Path, value: str) -> str:
    """[target] fabric: one of FABRICS, or absent ("")."""
    if value and value not in FABRICS:
        raise ProjectFileError(
            f"{path}: [target] fabric {value!r} is not one of {', '.join(FABRICS)}.",
            hint='Say the network between the nodes: fabric = "infiniband" or "roce" puts the RDMA user space in the image, '
            'fabric = "none" (Ethernet only) leaves it out; remove the key when the project runs on one node.',
            path=path,
            value=value,
        )
    return value


def _inputs(root: Path, path: Path, table: object) -> dict[str, str]:
    """[inputs]: each name an identifier, each value a file or folder path inside the project."""
    if not isinstance(table, dict):
        raise ProjectFileError(
            f"{path}: [inputs] must be a table.", hint='Write [inputs] with lines like train = "data/train.csv".', path=path
        )
    for name, value in table.items():
        if not name.isidentifier():
            raise ProjectFileError(
                f"{path}: [inputs] name {name!r} is not a plain name.",
                hint="Use letters, digits and '_', e.g. train.",
                path=path,
                value=name,
            )
        if not isinstance(value, str) or not _project_relative(root, value):
            raise ProjectFileError(
                f"{path}: [inputs] {name} = {value!r} is not a path inside the project.",
                hint=f'Name the input relative to the project folder, e.g. {name} = "data/{name}.csv".',
                path=path,
                value=value if isinstance(value, str) else repr(value),
            )
    return dict(table)


def _project_relative(root: Path, value: str) -> bool:
    from pathlib import PurePosixPath

    parts = PurePosixPath(value).parts
    if (
        not parts
        or value.startswith(("/", "~"))
        or "\\" in value
        or "\0" in value
        or ".." in parts
        or any(c in value for c in "\n\r\x85\u2028\u2029")
    ):
        return False
    return (root / value).resolve().is_relative_to(root.resolve())


_EXAMPLES = {"lock": "requirements-rebuild.txt", "requirements": "requirements.txt"}


def _lock_name(root: Path, path: Path, value: object, key: str = "lock") -> str:
    """[build] lock or requirements: a file path inside the project (read or written through no link out of it)."""
    if not isinstance(value, str) or value.endswith("/") or not _project_relative(root, value):
        raise ProjectFileError(
            f"{path}: [build] {key} {value!r} is not a file path inside the project.",
            hint=f'Name it relative to the project folder, e.g. {key} = "{_EXAMPLES[key]}".',
            path=path,
            value=value if isinstance(value, str) else repr(value),
        )
    return value


def update_target(bundle: Bundle, target: Target) -> None:
    """Rewrite [target] of bundle.toml, keeping the user's comments and layout (atomic)."""
    import tomlkit

    from bundler.fsutil import atomic_write_text

    validate_target(target)
    text = bundle.path.read_bytes().decode("utf-8")  # not read_text: its newline translation would turn CRLF into LF
    document = tomlkit.parse(text)
    section = document.setdefault("target", tomlkit.table())
    for key, value in asdict(target).items():
        if key == "torch_index" and value == "pytorch" and key not in section:
            continue  # the default stays implicit in files written before the key existed
        section[key] = value
    written = tomlkit.dumps(document)
    if "\r\n" in text:
        written = re.sub(r"(?<!\r)\n", "\r\n", written)  # lines tomlkit added take the file's own ending
    atomic_write_text(bundle.path, written)
