"""An index's page for one project, and the files it lists (name, URL, sha256).

PEP 691's JSON where the index speaks it (PyPI does), PEP 503's HTML otherwise (PyPI
mirrors, PyTorch's index, a local ``file://`` folder). The index is reached as pip
reaches it for bundler: ``BUNDLER_INDEX_MAP``, the host's CA bundle and proxy
(bundler/pipsettings.py). Used to tell which locked pins have no wheel for the Target,
to download their source archives, and to name a released version in a refusal.
"""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from packaging.utils import canonicalize_name

from bundler.fsutil import sha256_file
from bundler.pipsettings import host_pip_settings, index_map, resolution_url

PYPI_SIMPLE = "https://pypi.org/simple"
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: str  # "" when the page gives none


def reach_url(public: str) -> str:
    """Where this host fetches ``public`` from: BUNDLER_INDEX_MAP, else pip's PyPI mirror."""
    mapped = resolution_url(public.rstrip("/"), index_map())
    mirror = host_pip_settings().index_mirror
    if mapped == public.rstrip("/") and mirror and public.rstrip("/") == PYPI_SIMPLE:
        return mirror.rstrip("/")
    return mapped


def _opener() -> urllib.request.OpenerDirector:
    settings = host_pip_settings()
    context = ssl.create_default_context(cafile=settings.cert or None)
    handlers: list = [urllib.request.HTTPSHandler(context=context)]
    if settings.proxy:
        handlers.append(urllib.request.ProxyHandler({"http": settings.proxy, "https": settings.proxy}))
    return urllib.request.build_opener(*handlers)


def open_url(url: str, *, accept: str = "*/*", timeout: float = 30):
    """A response for ``url`` (http, https or file), with the host's CA bundle and proxy."""
    request = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "bundler"})
    return _opener().open(request, timeout=timeout)


def project_files(index_url: str, project: str, *, timeout: float = 30) -> list[IndexFile]:
    """The files ``index_url`` lists for ``project``; [] when it has no page for it."""
    base = reach_url(index_url)
    page = f"{base}/{canonicalize_name(project)}/"
    if page.startswith("file://"):
        folder = Path(urllib.parse.unquote(urllib.parse.urlsplit(page).path))
        index = folder / "index.html"
        if not index.is_file():
            return []
        return [_hashed_locally(item) for item in _html_files(index.read_text(errors="replace"), index.as_uri())]
    try:
        with open_url(page, accept=JSON_ACCEPT, timeout=timeout) as response:
            kind = response.headers.get("Content-Type", "")
            body = response.read()
            final = response.geturl()
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return []
        raise
    if "json" in kind:
        data = json.loads(body)
        return [
            IndexFile(item["filename"], urllib.parse.urljoin(final, item["url"]), (item.get("hashes") or {}).get("sha256", ""))
            for item in data.get("files", [])
        ]
    return _html_files(body.decode("utf-8", "replace"), final)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text = ""

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href, self._text = dict(attrs).get("href"), ""

    def handle_data(self, data):
        if self._href is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "a" and self._href is not None:
            self.links.append((self._href, self._text.strip()))
            self._href = None


def _html_files(text: str, page_url: str) -> list[IndexFile]:
    parser = _Links()
    parser.feed(text)
    files = []
    for href, label in parser.links:
        url, _, fragment = urllib.parse.urljoin(page_url, href).partition("#")
        digest = fragment.split("=", 1)[1] if fragment.startswith("sha256=") else ""
        name = urllib.parse.unquote(url.rsplit("/", 1)[-1]) or label
        files.append(IndexFile(name, url, digest))
    return files


def _hashed_locally(item: IndexFile) -> IndexFile:
    """A local index page rarely carries hashes: the linked file is on this host, so hash it."""
    if item.sha256 or not item.url.startswith("file://"):
        return item
    path = Path(urllib.parse.unquote(urllib.parse.urlsplit(item.url).path))
    if not path.is_file():
        return item
    return IndexFile(item.filename, item.url, sha256_file(path))


def latest_release(name: str, *, timeout: float = 5) -> str | None:
    """The newest non-prerelease version PyPI lists for ``name``; None when unknown or unreachable."""
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    try:
        files = project_files(PYPI_SIMPLE, name, timeout=timeout)
    except (OSError, ValueError):
        return None
    versions = set()
    for item in files:
        try:
            parsed = parse_wheel_filename(item.filename) if item.filename.endswith(".whl") else parse_sdist_filename(item.filename)
        except (InvalidWheelFilename, InvalidSdistFilename):
            continue
        if not parsed[1].is_prerelease:
            versions.add(parsed[1])
    return str(max(versions)) if versions else None


def download(item: IndexFile, dest: Path, *, timeout: float = 120) -> Path:
    """Fetch ``item`` into the folder ``dest``, checked against its sha256 (ValueError if not)."""
    dest.mkdir(parents=True, exist_ok=True)
    final = dest / item.filename
    partial = dest / f".{item.filename}.partial"
    digest = hashlib.sha256()
    with open_url(item.url, timeout=timeout) as response, open(partial, "wb") as out:
        for chunk in iter(lambda: response.read(1 << 20), b""):
            digest.update(chunk)
            out.write(chunk)
    if item.sha256 and digest.hexdigest() != item.sha256:
        partial.unlink(missing_ok=True)
        raise ValueError(f"{item.url} hashes to {digest.hexdigest()}, not {item.sha256}")
    os.replace(partial, final)
    return final
