"""pip as bundler runs it: the host's network settings, never its local sources.

Resolution (`bundler lock`) and the wheelhouse download (`bundler build`) both run pip
with ``PIP_CONFIG_FILE=/dev/null`` and every ``PIP_*`` variable removed, so that a host's
local ``--find-links`` folder, ``file://`` index or constraints file never shapes a lock
or an image. What does matter to reach an index is forwarded explicitly: the CA bundle,
the proxy, trusted hosts, a mirror of PyPI, http(s) extra indexes, the timeout.
``BUNDLER_INDEX_MAP="PUBLIC=LOCAL ..."`` redirects an index prefix for the download only
(a local mirror, or the tests' fake index); what is recorded is the public URL, and the
hashes hold for both. Caches live in ``$BUNDLER_CACHE_DIR`` (default ~/.cache/bundler).
"""

from __future__ import annotations

import configparser
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bundler.errors import FileSystemError, UsageError


def cache_dir() -> Path:
    named = os.environ.get("BUNDLER_CACHE_DIR")
    path = Path(named or Path.home() / ".cache" / "bundler").expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        where = "BUNDLER_CACHE_DIR names" if named else "bundler's cache folder is"
        raise FileSystemError(
            f"{where} {path}, which is not a folder (it, or a folder above it, is a file).",
            hint="Point BUNDLER_CACHE_DIR at a folder, or at a path that does not exist yet (e.g. ~/.cache/bundler).",
            path=path,
        ) from None
    return path


def index_map() -> list[tuple[str, str]]:
    pairs = []
    for item in os.environ.get("BUNDLER_INDEX_MAP", "").replace(";", " ").split():
        public, sep, local = item.partition("=")
        if not sep or not public or not local:
            raise UsageError(
                f"BUNDLER_INDEX_MAP entry {item!r} is not PUBLIC=LOCAL.",
                hint="Example: https://download.pytorch.org/whl=file:///srv/torch-mirror/whl",
                value=item,
            )
        pairs.append((public.rstrip("/"), local.rstrip("/")))
    return pairs


def resolution_url(public: str, pairs: list[tuple[str, str]]) -> str:
    for prefix, local in pairs:
        if public == prefix or public.startswith(prefix + "/"):
            return local + public[len(prefix) :]
    return public


@dataclass
class PipSettings:
    """The host's pip settings that matter for reaching indexes (never local sources)."""

    cert: str = ""
    proxy: str = ""
    trusted_hosts: list[str] = field(default_factory=list)
    index_mirror: str = ""  # a host index-url other than PyPI: used in place of PyPI
    extra_index_urls: list[str] = field(default_factory=list)  # http(s) only
    timeout: str = ""


def host_pip_settings() -> PipSettings:
    values: dict[str, str] = {}
    for path in _pip_config_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read(path)
        except configparser.Error:
            continue
        for section in ("global", "install", "download"):
            if parser.has_section(section):
                values.update({key.replace("_", "-"): value for key, value in parser.items(section)})
    for key, value in os.environ.items():
        if key.startswith("PIP_"):
            values[key[4:].lower().replace("_", "-")] = value
    index = values.get("index-url", "").strip()
    return PipSettings(
        cert=values.get("cert", "").strip(),
        proxy=values.get("proxy", "").strip(),
        trusted_hosts=values.get("trusted-host", "").split(),
        index_mirror=index if index.startswith(("http://", "https://")) and "pypi.org" not in index else "",
        extra_index_urls=[url for url in values.get("extra-index-url", "").split() if url.startswith(("http://", "https://"))],
        timeout=values.get("timeout", values.get("default-timeout", "")).strip(),
    )


def _pip_config_files() -> list[str]:
    chosen = os.environ.get("PIP_CONFIG_FILE")
    if chosen == os.devnull:
        return []
    dirs = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
    files = [os.path.join(d, "pip", "pip.conf") for d in dirs] + ["/etc/pip.conf"]
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    files += [os.path.expanduser("~/.pip/pip.conf"), os.path.join(config_home, "pip", "pip.conf"), os.path.join(sys.prefix, "pip.conf")]
    if chosen:
        files.append(chosen)
    return [f for f in files if os.path.isfile(f)]


def pip_environment(settings: PipSettings, cache: str, cert: str | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_CACHE_DIR": f"{cache}/pip", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONUTF8": "1"})
    if cert:
        env["PIP_CERT"] = cert
    if settings.proxy:
        env["PIP_PROXY"] = settings.proxy
    if settings.timeout:
        env["PIP_DEFAULT_TIMEOUT"] = settings.timeout
    return env


def open_url(url: str, settings: PipSettings, *, method: str = "GET", headers: dict | None = None, timeout: float | None = None):
    """urllib's response for ``url`` through the host's CA bundle and proxy (as pip would reach it)."""
    import ssl
    import urllib.request

    handlers: list = [urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=settings.cert or None))]
    if settings.proxy:
        handlers.append(urllib.request.ProxyHandler({"http": settings.proxy, "https": settings.proxy}))
    opener = urllib.request.build_opener(*handlers)
    wait = timeout if timeout is not None else float(os.environ.get("BUNDLER_PROBE_TIMEOUT", "15"))
    return opener.open(urllib.request.Request(url, method=method, headers=headers or {}), timeout=wait)


def reachable_url(public: str, pairs: list[tuple[str, str]], settings: PipSettings, pypi_index: str = "https://pypi.org/simple") -> str:
    """Where this host reads the index ``public``: BUNDLER_INDEX_MAP, else pip's PyPI mirror for PyPI."""
    url = resolution_url(public, pairs)
    if url == public and public.rstrip("/") == pypi_index.rstrip("/") and settings.index_mirror:
        return settings.index_mirror
    return url


CONTAINER_CERT = "/etc/bundler/ca.pem"
_FORWARDED = ("PIP_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")


def container_pip(settings: PipSettings, cache: str) -> tuple[dict[str, str], dict[str, dict]]:
    """(environment, volumes) for pip in a container to reach indexes as this host does:
    the host's CA bundle mounted read-only, the proxy and pip's network settings forwarded."""
    volumes, cert = {}, None
    if settings.cert and Path(settings.cert).is_file():
        volumes[str(Path(settings.cert).resolve())] = {"bind": CONTAINER_CERT, "mode": "ro"}
        cert = CONTAINER_CERT
    env = {key: value for key, value in pip_environment(settings, cache, cert).items() if key.startswith(_FORWARDED)}
    env.update({"HOME": "/tmp", "PYTHONUTF8": "1"})
    return env, volumes
