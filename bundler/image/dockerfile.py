"""Which Dockerfile a bundle gets, and its text.

Two flavours, templates under images/:
- ``runtime`` (every backend): the Target's slim base (bundle.toml ``base_image``, else
  the compatibility table's runtime base). PyTorch's wheels carry the CUDA/ROCm
  user-space libraries, so the same template serves cuda, rocm and cpu; the backend only
  changes the lock, the labels and the run flags. It builds with no network.
- ``devel``: chosen only when an extension in bundle.toml has ``compile = true``. The
  base is the table's devel base for the Target (``nvidia/cuda:*-cudnn-devel-*``,
  ``rocm/dev-ubuntu-*-complete``, ``python:*-bookworm`` for cpu). Bundler must know how
  to give that base Python and a compiler, so a devel base outside those families is
  refused (``UnknownDevelBase``) instead of producing an image that fails late.

Either flavour adds the system packages the bundle needs (the RDMA user space of
``[target] fabric``, target/fabric.py) from the base's distribution mirror, in the
dependency image: they join its key through its text.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from bundler.contracts.oneline import safe_line
from bundler.errors import BuildError
from bundler.image import layout
from bundler.resources import resource_path
from bundler.target.bundle import Bundle
from bundler.target.fabric import rdma_packages
from bundler.target.table_file import load_table

# devel base families -> how the system layer provides Python + a compiler
APT_FAMILIES = ("nvidia/cuda:", "rocm/dev-ubuntu-")
PYTHON_FAMILIES = ("python:",)


ROUTES = ("loopback", "context")
ROUTE_NOTES = {  # the deps Dockerfile's comment on where the wheels come from
    "loopback": "served from the host's cache over 127.0.0.1 to this build, which\n"
    "# shares the host's network; no wheel is committed into any layer",
    "context": "sent in the build context to an install stage that is thrown away\n"
    "# (the engine is not on this host); only the environment is copied on",
}


@dataclass(frozen=True)
class Dockerfiles:
    flavour: str  # runtime | devel
    base: str  # the reference written in FROM
    python: str  # interpreter command in the base, e.g. python3.11
    deps_texts: dict  # route -> the dependency image's Dockerfile (wheels -> /opt/venv)
    template: str  # the shipped image's Dockerfile, ${deps_image} still open
    needs_mirror: bool  # the system layer installs from the distribution's mirror (devel on an apt base, or bundle_packages)

    def deps_text(self, route: str) -> str:
        return self.deps_texts[route]

    def deps_network(self, route: str) -> str | None:
        """The dependency build's network: the host's for the loopback route, none when nothing is fetched."""
        if route == "loopback":
            return "host"
        return None if self.needs_mirror else "none"

    def final_text(self, deps_image: str, labels: dict | None = None, project_wheel: str = "") -> str:
        """The shipped image's Dockerfile; ``project_wheel``: the steps that install the project's own wheel."""
        text = string.Template(self.template).substitute(
            deps_image=deps_image, labels=label_instruction(labels or {}), project_wheel=project_wheel
        )
        return text if project_wheel else text.replace("COPY project/ /\n\n", "COPY project/ /\n")


def flavour_for(bundle: Bundle) -> str:
    return "devel" if any(extension.compile for extension in bundle.extensions) else "runtime"


def default_base(bundle: Bundle, flavour: str) -> str:
    """The base image the Target asks for (before any --base override)."""
    table = load_table()
    images = table.base_images(table.build_for(bundle.target), bundle.target.python)
    if flavour == "devel":
        return images["devel"]
    return bundle.target.base_image or images["runtime"]


def bundle_packages(bundle: Bundle) -> tuple[str, ...]:
    """The Debian packages the bundle asks the dependency image for (validated names, never free text): its fabric's,
    then [build] system_packages and apt.txt's (target/syspackages.py)."""
    return tuple(dict.fromkeys(rdma_packages(bundle.fabric) + bundle.system_packages))


def system_packages(base: str, python: str, extra: tuple[str, ...] = ()) -> str:
    """The devel flavour's system layer for ``base`` (with ``extra`` packages); UnknownDevelBase when bundler has no recipe."""
    if base.startswith(APT_FAMILIES):
        return (
            "# hadolint ignore=DL3008\n"
            "RUN apt-get update \\\n"
            " && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\\n"
            f"      {' '.join((python, f'{python}-venv', f'{python}-dev', 'build-essential', 'ca-certificates', *extra))} \\\n"
            " && rm -rf /var/lib/apt/lists/*"
        )
    if base.startswith(PYTHON_FAMILIES):
        held = f"# {base} already holds {python}, its headers and a C compiler."
        return f"{held}\n{apt_step(extra)}" if extra else f"{held} No system packages to add."
    raise UnknownDevelBase(base)


APT_LEFTOVERS = ("/var/lib/apt/lists/*", "/var/cache/apt/*.bin", "/var/log/apt", "/var/log/dpkg.log", "/var/cache/debconf/*-old")


def apt_step(packages: tuple[str, ...]) -> str:
    """One RUN installing ``packages`` from the base's mirror without recommends; its lists, caches and logs
    (which hold the day's clock) removed, its file times normalized; a comment when there is nothing to install."""
    if not packages:
        return "# (no system packages)"
    return "# hadolint ignore=DL3008\n" + run_step(
        [
            "apt-get update -q",
            f"DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends {' '.join(packages)}",
            "apt-get clean",  # the downloaded .deb files (a base without docker-clean keeps them)
            f"rm -rf {' '.join(APT_LEFTOVERS)}",
        ]
    )


class UnknownDevelBase(BuildError):
    def __init__(self, base: str) -> None:
        super().__init__(
            f"the devel flavour (an extension has compile = true) needs a devel base bundler knows how to provision, "
            f"and {base!r} is none of: nvidia/cuda:*-devel-*, rocm/dev-ubuntu-*-complete, python:*.",
            hint="Pass --base with an image of one of those families, set the devel_base of the Target in the compatibility "
            "table ($BUNDLER_COMPAT), or set compile = false if the extension ships wheels for the Target.",
            value=base,
        )


def env_quote(value: str) -> str:
    """A value for ENV KEY="…" on one line: backslash, quote and $ escaped (ENV expands variables),
    every line break and control character a space (contracts/oneline.py)."""
    return safe_line(value, " ").replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")


def label_instruction(labels: dict) -> str:
    """One LABEL instruction for every label (one step to rebuild, not one per label)."""
    if not labels:
        return "# (no labels)"
    pairs = [f'{key}="{env_quote(str(value))}"' for key, value in sorted(labels.items())]
    return "LABEL " + " \\\n      ".join(pairs)


def normalize_file_times() -> str:
    """Shell: every path changed since the step's marker gets layout.FILE_TIME.

    The marker lives in /dev/shm (a tmpfs, never in a layer) and is written when the step
    starts, after the engine made the container: what the engine itself made or mounts
    (/proc, /sys, /dev, /etc/hosts, …, /.dockerenv, and /etc, where it mounts them) is
    older, so it is left alone; touching it would copy it into the layer.
    """
    pruned = " -o ".join(f"-path {path}" for path in ENGINE_PATHS)
    return f"find / -xdev \\( {pruned} \\) -prune -o -newer {MARKER} -exec touch --no-dereference --date=@{layout.FILE_TIME} {{}} +"


MARKER = "/dev/shm/bundler-step-started"
STAGE = "/stage"  # the context route's install stage moves the venv under it
ENGINE_PATHS = ("/proc", "/sys", "/dev", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/etc/mtab", "/.dockerenv")


def run_step(commands: list[str]) -> str:
    """One RUN: `set -e`, the start marker, the commands, then the file times normalized."""
    lines = ["set -e", f"touch {MARKER}", *commands, normalize_file_times(), f"rm -f {MARKER}"]
    return "RUN " + "; \\\n    ".join(lines)


def user_setup() -> str:
    u = layout
    return run_step(
        [
            f"export SOURCE_DATE_EPOCH={u.FILE_TIME}",  # useradd writes the password's change date from it
            f"groupadd --gid {u.UID} {u.USER}",
            f"useradd --no-log-init --create-home --uid {u.UID} --gid {u.UID} --shell /bin/sh {u.USER}",
            f"mkdir -p {u.PROJECT}/runs",
            f"ln -s ../diagnostics {u.PROJECT}/diagnostics",
            f"chown {u.USER}:{u.USER} {u.PROJECT}/runs",
        ]
    )


def venv_with_pip(python: str, venv: str) -> list[str]:
    """Shell: a venv with the base's own pip, installed without bytecode from the wheel ensurepip ships.

    ``python -m venv`` would install pip (and, before 3.12, setuptools) through ensurepip,
    compiling both: bytecode the install step deletes and compiles again, and a setuptools
    the lock replaces. Running pip from its wheel skips that; without a wheel where
    Debian or CPython keep it, ensurepip does the work.
    """
    bundled = f"$({python} -c 'import ensurepip, os; print(os.path.dirname(ensurepip.__file__))')/_bundled"
    return [
        f"{python} -m venv --without-pip {venv}",
        "wheel=",
        f'for found in /usr/share/python-wheels/pip-*.whl "{bundled}"/pip-*.whl; do if [ -f "$found" ]; then wheel="$found"; fi; done',
        f'if [ -n "$wheel" ]; then {venv}/bin/python "$wheel/pip" install -q --no-index --no-deps --no-compile --no-cache-dir "$wheel"; '
        f"else {venv}/bin/python -m ensurepip --default-pip; fi",
    ]


def compile_bytecode(venv: str) -> list[str]:
    """Shell: bytecode for every module of the venv, with hash headers (no clock in them), on every core.

    The folders are compiled in sorted batches by one interpreter each (``compileall -j``
    hands each file to a worker on its own and ran slower than one process here). A module
    that does not compile (torch ships a few written for newer Pythons) is skipped, as
    pip's own compile step skips it.
    """
    listing = "/dev/shm/bundler-folders"  # a tmpfs: never in a layer
    return [
        f"find {venv}/lib -type d -print0 > {listing}",
        f"sort -z -o {listing} {listing}",
        f'PYTHONHASHSEED=0 xargs -0 -a {listing} -n 200 -P "$(nproc)" {venv}/bin/python -m compileall -q -f -l '
        "--invalidation-mode unchecked-hash > /dev/null || true",
        f"rm -f {listing}",
    ]


def install_step(python: str, devel: bool, stage: str = "") -> str:
    """The locked packages from $WHEELHOUSE (a URL: http:// or file://) into the venv, with hashes, then bytecode.

    ``stage``: a folder the finished venv moves under (``STAGE/opt/venv``), for a later
    ``COPY --from=install STAGE/ /`` that gives every folder on the way its fixed time.
    """
    venv = layout.VENV
    pip = f"{venv}/bin/python -m pip"
    build_isolation = " --no-build-isolation" if devel else ""
    parent = venv.rsplit("/", 1)[0]
    moved = [f"mkdir -p {stage}{parent}", f"mv {venv} {stage}{parent}/"] if stage else []
    return "ARG WHEELHOUSE\n" + run_step(
        [
            # pip's temporary files under the venv's parent: /tmp stays out of the layer, so both routes commit the same one
            f"export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1 TMPDIR={parent}/.bundler-tmp",
            'mkdir -p "$TMPDIR"',
            *venv_with_pip(python, venv),
            f'{pip} install --no-index --find-links "$WHEELHOUSE" --require-hashes --no-deps --no-compile --no-cache-dir'
            f' --retries 0{build_isolation} -r "$WHEELHOUSE/requirements.txt"',
            f"{pip} check",
            f"find {venv} -name __pycache__ -type d -prune -exec rm -rf {{}} +",
            *compile_bytecode(venv),
            'rm -rf "$TMPDIR"',
            *moved,
        ]
    )


def deps_pieces(route: str, python: str, install_from: str, devel: bool) -> dict[str, str]:
    """The ${install_stage} and ${environment} of a deps template for ``route``."""
    if route == "loopback":
        return {"install_stage": "", "environment": install_step(python, devel)}
    install = install_step(python, devel, stage=STAGE)
    where = layout.WHEELHOUSE_IN_CONTEXT
    stage = (
        "# ---- install stage: the wheelhouse, thrown away after the install ------------------\n"
        f"FROM {install_from} AS install\nCOPY wheelhouse/ {where}/\n"
        + install.replace("ARG WHEELHOUSE", f"ARG WHEELHOUSE=file://{where}", 1)
        + "\n\n# ---- the dependency image ------------------------------------------------------------"
    )
    return {"install_stage": stage, "environment": f"COPY --from=install {STAGE}/ /"}


def render(bundle: Bundle, flavour: str, base: str) -> Dockerfiles:
    """Both Dockerfiles of ``flavour`` on ``base``; UnknownDevelBase for a devel base bundler cannot provision."""
    python = f"python{bundle.target.python}"
    images = resource_path("images")
    values = layout.template_values() | {
        "base": base,
        "python": python,
        "entry": env_quote(bundle.entry),
        "deps_image": "${deps_image}",
        "labels": "${labels}",
        "project_wheel": "${project_wheel}",
        "user_setup": user_setup(),
    }
    devel = flavour == "devel"
    extra = bundle_packages(bundle)
    values["system_packages"] = system_packages(base, python, extra) if devel else apt_step(extra)
    deps_template = string.Template((images / f"{flavour}-deps.Dockerfile").read_text(encoding="utf-8"))
    deps = {
        route: deps_template.substitute(
            values, route=ROUTE_NOTES[route], **deps_pieces(route, python, "system" if devel else base, devel)
        ).replace("\n\n\n", "\n\n")
        for route in ROUTES
    }
    final = string.Template((images / f"{flavour}.Dockerfile").read_text(encoding="utf-8")).substitute(values)
    # the final template's own `$$` became `$`; keep them literal for the second substitution
    final = final.replace("$", "$$")
    for name in ("deps_image", "labels", "project_wheel"):
        final = final.replace(f"$${{{name}}}", f"${{{name}}}")
    mirror = bool(extra) or (devel and base.startswith(APT_FAMILIES))
    return Dockerfiles(flavour, base, python, deps, final, needs_mirror=mirror)
