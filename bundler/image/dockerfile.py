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
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from bundler.errors import BuildError
from bundler.image import layout
from bundler.resources import resource_path
from bundler.target.bundle import Bundle
from bundler.target.table_file import load_table

# devel base families -> how the system layer provides Python + a compiler
APT_FAMILIES = ("nvidia/cuda:", "rocm/dev-ubuntu-")
PYTHON_FAMILIES = ("python:",)


@dataclass(frozen=True)
class Dockerfiles:
    flavour: str  # runtime | devel
    base: str  # the reference written in FROM
    python: str  # interpreter command in the base, e.g. python3.11
    deps_text: str  # the dependency image's Dockerfile (wheels -> /opt/venv)
    template: str  # the shipped image's Dockerfile, ${deps_image} still open
    network: bool  # does the build need the network (devel on an apt base)

    def final_text(self, deps_image: str, labels: dict | None = None) -> str:
        return string.Template(self.template).substitute(deps_image=deps_image, labels=label_instruction(labels or {}))


def flavour_for(bundle: Bundle) -> str:
    return "devel" if any(extension.compile for extension in bundle.extensions) else "runtime"


def default_base(bundle: Bundle, flavour: str) -> str:
    """The base image the Target asks for (before any --base override)."""
    table = load_table()
    images = table.base_images(table.build_for(bundle.target), bundle.target.python)
    if flavour == "devel":
        return images["devel"]
    return bundle.target.base_image or images["runtime"]


def system_packages(base: str, python: str) -> str:
    """The devel flavour's system layer for ``base``; UnknownDevelBase when bundler has no recipe."""
    if base.startswith(APT_FAMILIES):
        return (
            "# hadolint ignore=DL3008\n"
            "RUN apt-get update \\\n"
            " && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\\n"
            f"      {python} {python}-venv {python}-dev build-essential ca-certificates \\\n"
            " && rm -rf /var/lib/apt/lists/*"
        )
    if base.startswith(PYTHON_FAMILIES):
        return f"# {base} already holds {python}, its headers and a C compiler: no system packages to add."
    raise UnknownDevelBase(base)


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
    """A value for ENV KEY="…": backslash, quote and $ escaped (ENV expands variables)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("\n", " ")


def label_instruction(labels: dict) -> str:
    """One LABEL instruction for every label (one step to rebuild, not one per label)."""
    if not labels:
        return "# (no labels)"
    pairs = [f'{key}="{env_quote(str(value))}"' for key, value in sorted(labels.items())]
    return "LABEL " + " \\\n      ".join(pairs)


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
    }
    if flavour == "devel":
        values["system_packages"] = system_packages(base, python)
    deps = string.Template((images / f"{flavour}-deps.Dockerfile").read_text(encoding="utf-8")).substitute(values)
    final = string.Template((images / f"{flavour}.Dockerfile").read_text(encoding="utf-8")).substitute(values)
    # the final template's own `$$` became `$`; keep them literal for the second substitution
    final = final.replace("$", "$$").replace("$${deps_image}", "${deps_image}").replace("$${labels}", "${labels}")
    return Dockerfiles(flavour, base, python, deps, final, network=flavour == "devel" and base.startswith(APT_FAMILIES))
