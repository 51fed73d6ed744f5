"""The lock's hashes, read from the indexes: every file of each pinned version.

pip-compile's own ``--generate-hashes`` takes them from PyPI's JSON API and downloads
every file that API does not list under the same URL (any other index, a mirror whose
JSON links files relatively) to hash it: all of torch's wheels for every platform, tens
of GB. An index page already names each file's sha256 in its link (PEP 503 ``#sha256=``,
PEP 691 ``hashes``), so one page per project gives them; only a file linked without a
hash is read and hashed (a local index's file, or a mirror that omits them).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

from bundler.contracts.lockformat import unhashed_pin, with_hashes
from bundler.errors import ExternalError, LockError
from bundler.pipsettings import PipSettings, open_url

_ANCHOR = re.compile(r"<a\s([^>]*)>([^<]*)</a>", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"([\w-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
WORKERS = 8


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: str  # "" when the index gives none
    requires_python: str = ""  # the file's Requires-Python as the index serves it (PEP 503 / 691); "" when it gives none
    upload_time: str = ""  # ISO 8601 (PEP 700); "" when the index gives none


Pages = dict[tuple[str, str], list[IndexFile]]  # (canonical name, index URL) -> the files that index lists


def body_pages(body: str, index_urls: list[str], settings: PipSettings) -> Pages:
    """Every index's page for every project pip-compile's body pins, read once (in parallel)."""
    names = sorted({pin.name for pin in map(unhashed_pin, body.splitlines()) if pin})
    jobs = [(name, url) for name in names for url in index_urls]
    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip(jobs, pool.map(lambda job: project_files(job[1], job[0], settings), jobs), strict=True))


def hash_body(body: str, index_urls: list[str], settings: PipSettings, pages: Pages | None = None) -> str:
    """pip-compile's body (``name==version`` lines) with every pin's ``--hash`` lines added (from ``pages`` when the
    caller has read them already)."""
    pins = [(pin.given_name, pin.version) for pin in map(unhashed_pin, body.splitlines()) if pin]
    pages = pages if pages is not None else body_pages(body, index_urls, settings)
    hashes = {}
    for name, version in pins:
        files = [f for url in index_urls for f in pages[(canonicalize_name(name), url)] if version_matches(f.filename, name, version)]
        if not files:
            raise LockError(
                f"no file of {name}=={version} is listed on {', '.join(index_urls)}, although the resolver chose it.",
                hint="An index changed during resolution, or a mirror lists fewer files than it serves; run `bundler lock` again.",
                value=f"{name}=={version}",
            )
        with ThreadPoolExecutor(WORKERS) as pool:
            hashes[(name, version)] = sorted(set(pool.map(lambda f: f.sha256 or _hash_file(f.url, settings), files)))
    lines = []
    for line in body.splitlines():
        pin = unhashed_pin(line)
        if pin:
            line = with_hashes(line, hashes[(pin.given_name, pin.version)])
        lines.append(line)
    return "\n".join(lines) + "\n"


def project_files(index_url: str, name: str, settings: PipSettings) -> list[IndexFile]:
    """The files an index lists for a project ([] when it has no such project)."""
    page_url = f"{index_url.rstrip('/')}/{name}/"
    if page_url.startswith("file://"):
        page = Path(unquote(urlsplit(page_url).path)) / "index.html"
        if not page.is_file():
            return []
        return _html_files(page.read_text(encoding="utf-8", errors="replace"), page_url)
    import urllib.error

    try:
        with open_url(page_url, settings, headers={"Accept": _ACCEPT}, timeout=60) as response:
            kind = response.headers.get("Content-Type", "")
            text = response.read().decode("utf-8", "replace")
            page_url = response.geturl()
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return []
        raise _unreachable(page_url, f"HTTP {error.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise _unreachable(page_url, getattr(error, "reason", error)) from None
    if "json" in kind:
        return _json_files(text, page_url)
    return _html_files(text, page_url)


def _json_files(text: str, page_url: str) -> list[IndexFile]:
    files = json.loads(text).get("files", [])
    return [
        IndexFile(
            f["filename"],
            urljoin(page_url, f["url"]),
            f.get("hashes", {}).get("sha256", ""),
            f.get("requires-python") or "",
            f.get("upload-time") or "",
        )
        for f in files
    ]


def _html_files(text: str, page_url: str) -> list[IndexFile]:
    files = []
    for attributes, label in _ANCHOR.findall(text):
        found = {name.lower(): html.unescape(double or single) for name, double, single in _ATTRIBUTE.findall(attributes)}
        if "href" not in found:
            continue
        url = urljoin(page_url, found["href"])
        plain, _, fragment = url.partition("#")
        digest = fragment[len("sha256=") :] if fragment.startswith("sha256=") else ""
        filename = html.unescape(label).strip() or unquote(plain.rsplit("/", 1)[-1])
        files.append(IndexFile(filename, plain, digest, found.get("data-requires-python", "")))
    return files


def version_matches(filename: str, name: str, version: str) -> bool:
    try:
        if filename.endswith(".whl"):
            found, found_version, _, _ = parse_wheel_filename(filename)
        elif filename.endswith((".tar.gz", ".zip")):
            found, found_version = parse_sdist_filename(filename)
        else:
            return False
        return found == canonicalize_name(name) and found_version == Version(version)
    except (InvalidWheelFilename, InvalidSdistFilename, ValueError):
        return False


def _hash_file(url: str, settings: PipSettings) -> str:
    digest = hashlib.sha256()
    if url.startswith("file://"):
        with open(unquote(urlsplit(url).path), "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    import urllib.error

    try:
        with open_url(url, settings, timeout=120) as response:
            for block in iter(lambda: response.read(1 << 20), b""):
                digest.update(block)
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise _unreachable(url, getattr(error, "reason", error)) from None
    return digest.hexdigest()


def _unreachable(url: str, reason: object) -> ExternalError:
    return ExternalError(
        f"the index page {url} could not be read to take the lock's hashes ({reason}).",
        hint="Check the network, the proxy (PIP_PROXY / HTTPS_PROXY) and the CA bundle (PIP_CERT). The previous lock was not touched.",
        value=url,
    )
