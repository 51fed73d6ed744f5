"""What pip and pip-compile said, turned into one error paragraph (never a traceback)."""

from __future__ import annotations

import re
from pathlib import Path

from bundler.errors import ExternalError, LockError
from bundler.lock.requirements import REQUIREMENTS_IN
from bundler.lock.spec import LockSpec

_NOISE = re.compile(r"WARNING: Location '.*' is ignored|^\s*$")


_TRACEBACK = re.compile(
    r"^(Traceback|File |raise |During handling|The above exception|[~^]|[a-z_.]+\.[A-Za-z]+(Error|Impossible|Conflicted)\b)"
)


def _conflict_causes(log: str) -> str:
    """'numpy==1.26.4 (requirements.in) vs numpy==2.1.0 (requirements.in)' from pip's ResolutionImpossible."""
    impossible = next((line for line in log.splitlines() if "ResolutionImpossible: [" in line), "")
    found = re.findall(r"requirement=\w+\('([^']+)'\), parent=(None|\w+\('([^']*)'\))", impossible)
    if not found:
        return ""
    parts = [f"{spec} ({_parent(parent_link) if parent_link else 'requirements.in'})" for spec, _, parent_link in found]
    return "conflicting requirements: " + " vs ".join(parts[:4])


def _parent(link: str) -> str:
    """'scikit-learn 1.9.1' from "https://…/scikit_learn-1.9.1-cp311-….whl (from https://…) (requires-python:…)"."""
    filename = Path(link.split()[0].split("#")[0]).name
    name, _, rest = filename.partition("-")
    return f"{name.replace('_', '-')} {rest.split('-')[0].removesuffix('.tar.gz').removesuffix('.zip')}".strip()


def resolution_error(spec: LockSpec, log: str, where: str) -> Exception:
    lines = [line.strip() for line in log.splitlines() if not _NOISE.search(line)]
    unreachable = [
        line
        for line in lines
        if re.search(
            r"Could not fetch URL|Failed to establish|NewConnectionError|Name or service not known|ConnectionError|SSLError|timed "
            r"out|ProxyError",
            line,
        )
    ]
    if unreachable:
        return ExternalError(
            f"resolution on {where} could not reach an index for {spec.target.describe()}: {unreachable[0][:300]}",
            hint="Check the network, the proxy (PIP_PROXY / HTTPS_PROXY) and the CA bundle (PIP_CERT); "
            "BUNDLER_INDEX_MAP can point an index at a reachable mirror. The previous lock was not touched.",
        )
    errors = [line for line in lines if line.startswith("ERROR:")]
    causes = _conflict_causes(log)
    summary = (errors[:1] + [causes]) if errors and causes else errors[:2]
    summary = summary or [line for line in lines if not _TRACEBACK.match(line)][-2:]
    return LockError(
        "the requirements cannot be resolved together for " + spec.target.describe() + ":\n  " + "\n  ".join(s[:300] for s in summary),
        hint=f"Loosen or fix the pins in {spec.bundle.root / REQUIREMENTS_IN} named above. The previous lock was not touched.",
        path=spec.bundle.root / REQUIREMENTS_IN,
    )
