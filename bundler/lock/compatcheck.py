"""`bundler compat check`: the compatibility table against what PyPI's metadata says.

From the facts bundler/lock/pypimeta.py records (live from PyPI, or a recorded fixture)
this derives, per torch release, what PyPI can tell: the CUDA of PyPI's own Linux wheels
(``pypi_cuda``, ``pypi_cuda_aarch64``), the Pythons with wheels, triton, when torch
declares setuptools, and the torchvision/torchaudio releases that pin ``torch==`` it; then
reports every disagreement with the table, every release PyPI has that the table lacks,
and what the metadata cannot settle (a companion that pins no exact torch).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from bundler.target.table import CompatTable, Release

FIELDS = ("pypi_cuda", "pypi_cuda_aarch64", "python", "triton", "setuptools", "torchvision", "torchaudio")


@dataclass(frozen=True)
class Finding:
    torch: str
    field: str  # one of FIELDS, or "release"
    table: str
    pypi: str
    kind: str  # differs | missing-row | not-on-pypi | unchecked

    def describe(self) -> str:
        if self.kind == "missing-row":
            return f"torch {self.torch} is on PyPI ({self.pypi}) but has no row in the table"
        if self.kind == "not-on-pypi":
            return f"torch {self.torch} has a row in the table but no Linux wheel on PyPI"
        if self.kind == "unchecked":
            return f"torch {self.torch} {self.field}: the table says {self.table or '(unknown)'}; PyPI's metadata cannot tell ({self.pypi})"
        return f"torch {self.torch} {self.field}: the table says {self.table or '(unknown)'}, PyPI says {self.pypi}"

    def as_dict(self) -> dict:
        return asdict(self)


# ----- what PyPI says, release by release ---------------------------------------------------
def derive(facts: dict) -> dict[str, dict[str, str | None]]:
    """torch release -> field -> PyPI's value (None: the metadata cannot tell)."""
    projects = facts["projects"]
    pairs = {name: _pairings(projects.get(name, {})) for name in ("torchvision", "torchaudio")}
    derived = {}
    for version, entry in projects["torch"].items():
        x86 = entry.get("linux_x86_64", {})
        requires = [_requirement(line) for line in x86.get("requires_dist", [])]
        derived[version] = {
            "pypi_cuda": _cuda(x86),
            "pypi_cuda_aarch64": _cuda(entry.get("linux_aarch64", {})),
            "python": ", ".join(_pythons(entry["wheels"], "x86_64")),
            "triton": _triton(requires),
            "setuptools": _setuptools(requires),
            "torchvision": pairs["torchvision"].get(version),  # None: no release pins torch== this one
            "torchaudio": pairs["torchaudio"].get(version),
        }
    return derived


def _requirement(line: str) -> Requirement | None:
    try:
        return Requirement(line)
    except InvalidRequirement:
        return None


def _cuda(platform_facts: dict) -> str:
    """'12.8' for a CUDA wheel, 'cpu' for a CPU one, '' when PyPI has no wheel for the platform."""
    if "version_py" not in platform_facts:
        return ""
    return platform_facts["version_py"].get("cuda") or "cpu"


def _pythons(wheels: list[str], arch: str) -> list[str]:
    found = set()
    for wheel in wheels:
        if wheel.endswith(f"_{arch}.whl"):
            for tag in parse_wheel_filename(wheel)[3]:
                if tag.interpreter.startswith("cp") and not tag.abi.endswith("t"):  # free-threaded builds are another ABI
                    found.add(f"{tag.interpreter[2]}.{tag.interpreter[3:]}")
    return sorted(found, key=lambda v: tuple(map(int, v.split("."))))


def _triton(requires: list) -> str:
    for requirement in requires:
        if requirement is not None and canonicalize_name(requirement.name) == "triton":
            specs = list(requirement.specifier)
            if len(specs) == 1 and specs[0].operator == "==":
                return specs[0].version
            return str(requirement.specifier)
    return ""


def _setuptools(requires: list) -> str:
    for requirement in requires:
        if requirement is not None and canonicalize_name(requirement.name) == "setuptools":
            if requirement.marker is None:
                return "always"
            return "python>=3.12" if 'python_version >= "3.12"' in str(requirement.marker) else f"when {requirement.marker}"
    return "never"


def _pairings(releases: dict) -> dict[str, str]:
    """torch release -> the newest companion release that pins torch== it. A companion that
    pins only a floor (torch>=2.14.0) or nothing pairs with no release here."""
    exact: dict[str, str] = {}
    for version in sorted(releases, key=Version):
        for line in releases[version].get("linux_x86_64", {}).get("requires_dist", []):
            requirement = _requirement(line)
            if requirement is not None and canonicalize_name(requirement.name) == "torch":
                specs = list(requirement.specifier)
                if len(specs) == 1 and specs[0].operator == "==":
                    exact[specs[0].version] = version
    return exact


# ----- the table against it ------------------------------------------------------------------
def compare(table: CompatTable, facts: dict) -> list[Finding]:
    derived = derive(facts)
    findings: list[Finding] = []
    for version in sorted(set(derived) - set(table.releases), key=Version):
        findings.append(Finding(version, "release", "", f"pypi_cuda {derived[version]['pypi_cuda']}", "missing-row"))
    for version in table.torch_versions():
        release = table.releases[version]
        if Version(version) < Version(min(facts["projects"]["torch"], key=Version)):
            continue
        if version not in derived:
            findings.append(Finding(version, "release", "present", "absent", "not-on-pypi"))
            continue
        findings += _compare_row(release, derived[version])
    return findings


def _compare_row(release: Release, pypi: dict) -> list[Finding]:
    findings = []
    for name in FIELDS:
        ours = table_value(release, name)
        theirs = pypi[name]
        if theirs is None:
            reason = f"no {name} release on PyPI pins torch=={release.torch}"
            findings.append(Finding(release.torch, name, ours, reason, "unchecked"))
        elif ours != theirs:
            findings.append(Finding(release.torch, name, ours, theirs or "(none)", "differs"))
    return findings


def table_value(release: Release, name: str) -> str:
    value = getattr(release, name)
    return ", ".join(value) if isinstance(value, tuple) else value


# ----- the command ----------------------------------------------------------------------------
@dataclass
class CheckReport:
    origin: str  # "PyPI (live)" or the fixture's path
    releases: int  # torch releases PyPI's facts cover
    findings: list[Finding]

    @property
    def disagreements(self) -> list[Finding]:
        return [f for f in self.findings if f.kind != "unchecked"]

    def as_dict(self) -> dict:
        return {
            "origin": self.origin,
            "releases": self.releases,
            "disagreements": [f.as_dict() for f in self.disagreements],
            "unchecked": [f.as_dict() for f in self.findings if f.kind == "unchecked"],
        }


def check_table(offline=None, record=None) -> CheckReport:
    """The table against PyPI's metadata: live (and written to ``record``), or from a fixture."""
    from pathlib import Path

    from bundler.target.table_file import load_table

    if offline is not None:
        facts, origin = read_facts(Path(offline)), str(offline)
    else:
        from bundler.lock.pypimeta import record_facts
        from bundler.pipsettings import host_pip_settings

        facts, origin = record_facts(host_pip_settings()), "PyPI (live)"
        if record is not None:
            from bundler.fsutil import atomic_write_text

            atomic_write_text(Path(record), json.dumps(facts, indent=1, sort_keys=True) + "\n")
    return CheckReport(origin, len(facts["projects"]["torch"]), compare(load_table(), facts))


def read_facts(path) -> dict:
    from bundler.errors import ProjectFileError
    from bundler.fsutil import read_json
    from bundler.lock.pypimeta import FACTS_SCHEMA

    facts = read_json(path, hint="Record the fixture again with `bundler compat check --record FILE`.")
    torch = facts.get("projects", {}).get("torch") if isinstance(facts, dict) else None
    if not isinstance(facts, dict) or facts.get("schema") != FACTS_SCHEMA or not isinstance(torch, dict) or not torch:
        raise ProjectFileError(
            f"{path} is not a metadata fixture of schema {FACTS_SCHEMA} with torch releases in it.",
            hint="Record one with `bundler compat check --record FILE` (it reads PyPI).",
            path=path,
        )
    return facts
