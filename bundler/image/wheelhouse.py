"""The wheelhouse: every file the lock names, downloaded once on the host, hash-checked.

Files live in a content-addressed cache shared between projects::

    $BUNDLER_CACHE_DIR (default ~/.cache/bundler)/wheels/sha256/<hh>/<sha256>/<filename>

A file is found by the hashes its lock line allows; before it goes into a build context
its sha256 is computed again, so a cached file altered after download stops the build
with its path named (never silently replaced). Downloads run ``pip download`` for the
Target, not for this host (``--platform``/``--python-version``/``--implementation cp``,
``--no-deps``, ``--require-hashes``), so a macOS or other-Python host makes the same
wheelhouse. ``BUNDLER_INDEX_MAP`` redirects an index exactly as it does for `bundler lock`.
Extensions marked ``compile = true`` are fetched as source archives (built in the devel image).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from bundler.errors import BuildError, ExternalError, LockError
from bundler.fsutil import sha256_file
from bundler.lock.lockfile import Lock, Pin
from bundler.pipsettings import cache_dir, host_pip_settings, index_map, pip_environment, resolution_url
from bundler.target.versions import platform_tags


@dataclass(frozen=True)
class Wheel:
    pin: Pin
    path: Path
    sha256: str

    @property
    def filename(self) -> str:
        return self.path.name

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def cache_root() -> Path:
    return cache_dir() / "wheels" / "sha256"


def locked_pins(lock: Lock) -> list[Pin]:
    """Every pin of the lock; each must be exact and hashed to be installed offline."""
    for pin in lock.pins:
        if not pin.version or not pin.hashes:
            raise LockError(
                f"{lock.path}: {pin.text[:80]!r} is not an exact, hashed pin, so it cannot be installed offline with --require-hashes.",
                hint="Run `bundler lock` to write a hashed lock.",
                path=lock.path,
            )
    return list(lock.pins)


def find_cached(pin: Pin, root: Path | None = None) -> Wheel | None:
    root = root or cache_root()
    for digest in pin.hashes:
        folder = root / digest[:2] / digest
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file() and not path.name.startswith("."):
                    return Wheel(pin, path, digest)
    return None


def rehash(wheel: Wheel) -> Wheel:
    """Hash the cached file again; a mismatch is a BuildError naming the file."""
    actual = sha256_file(wheel.path)
    if actual != wheel.sha256 or actual not in wheel.pin.hashes:
        raise BuildError(
            f"the cached file {wheel.path} does not match its hash: the lock allows "
            f"{', '.join(h[:16] + '…' for h in wheel.pin.hashes)} for {wheel.pin.name}=={wheel.pin.version}, the file hashes to {actual}. "
            "It was altered after download; nothing was built.",
            hint=f"Delete {wheel.path.parent} and build again to download it afresh; if it happens again, check the index you download "
            "from.",
            path=wheel.path,
            value=actual,
        )
    return wheel


def _store(downloaded: Path, pins_by_name: dict[str, Pin], root: Path) -> None:
    digest = sha256_file(downloaded)
    name = canonicalize_name(downloaded.name.split("-", 1)[0])
    pin = pins_by_name.get(name)
    if pin is None or digest not in pin.hashes:
        raise BuildError(
            f"pip downloaded {downloaded.name}, whose sha256 {digest} is not among the lock's hashes.",
            hint="The index serves a file the lock does not name; run `bundler lock` again.",
            path=downloaded,
        )
    folder = root / digest[:2] / digest
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / downloaded.name
    if not final.exists():
        os.replace(downloaded, final)  # the download folder is on the cache's disk: a rename, not a copy of GBs


def download(
    pins: list[Pin],
    indexes: list[str],
    target,
    *,
    sources: frozenset[str] | set[str] = frozenset(),
    root: Path | None = None,
    say=lambda text: None,
) -> None:
    """Fetch the pins into the cache with one `pip download` per kind (wheels, source archives)."""

    if not pins:
        return
    root = root or cache_root()
    pairs = index_map()
    settings = host_pip_settings()
    urls = [resolution_url(url, pairs) for url in indexes] or ["https://pypi.org/simple"]
    env = pip_environment(settings, str(cache_dir()), settings.cert)
    by_name = {pin.name: pin for pin in pins}
    python_version = target.python.replace(".", "")
    for kind in ("wheels", "sources"):
        chosen = [pin for pin in pins if (pin.name in sources) == (kind == "sources")]
        if not chosen:
            continue
        say(
            f"Downloading {len(chosen)} {'wheel' if kind == 'wheels' else 'source archive'}{'s' if len(chosen) != 1 else ''} for "
            f"{target.describe()}…"
        )
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".download-", dir=root) as work:
            requirements = Path(work) / "requirements.txt"
            requirements.write_text(
                "".join(f"{p.name}=={p.version} " + " ".join(f"--hash=sha256:{h}" for h in p.hashes) + "\n" for p in chosen)
            )
            argv = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--require-hashes",
                "--dest",
                str(Path(work) / "out"),
                "--python-version",
                python_version,
                "--implementation",
                "cp",
                "--progress-bar",
                "off",
                "--no-cache-dir",  # the content-addressed cache is the only copy kept
                "--retries",
                os.environ.get("BUNDLER_PIP_RETRIES", "5"),
                "--index-url",
                urls[0],
            ]
            for url in urls[1:]:
                argv += ["--extra-index-url", url]
            for host in settings.trusted_hosts:
                argv += ["--trusted-host", host]
            if kind == "wheels":
                argv += ["--only-binary=:all:"] + [item for tag in platform_tags(target.platform) for item in ("--platform", tag)]
            else:
                argv += ["--no-binary=:all:"]
            argv += ["-r", str(requirements)]
            completed = subprocess.run(argv, capture_output=True, text=True, env=env)
            if completed.returncode != 0:
                raise _download_error(completed.stdout + completed.stderr, urls, target)
            for downloaded in sorted((Path(work) / "out").iterdir()):
                _store(downloaded, by_name, root)


def _download_error(log: str, urls: list[str], target) -> Exception:
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")] or lines[-2:]
    if any("THESE PACKAGES DO NOT MATCH THE HASHES" in line for line in lines):
        return BuildError(
            "a file downloaded for the wheelhouse does not match the lock's hash: " + "; ".join(errors[:2])[:600],
            hint="The index serves a different file than the one locked; run `bundler lock --upgrade`, or check BUNDLER_INDEX_MAP.",
        )
    unmatched = [line for line in errors if "No matching distribution found for" in line or "Could not find a version" in line]
    if unmatched:  # the index answered, without a file that fits: the lock no longer fits the Target or the index
        pin = unmatched[-1].rsplit(" for ", 1)[-1].split(" ")[0]
        python = any("require a different python version" in line for line in errors)
        return BuildError(
            f"the lock pins {pin}, and {', '.join(urls)} list no file of it for {target.describe()}"
            + (f" (pip: its files need a newer Python than {target.python}.0, which the build downloads for)." if python else "."),
            hint="The lock was resolved for another Python or index: `bundler lock --upgrade` resolves it again for the Target "
            "(a lock made by this release leaves such releases out).",
            value=pin,
        )
    return ExternalError(
        f"pip could not download the locked wheels for {target.describe()} from {', '.join(urls)}: " + " ".join(errors[:2])[:600],
        hint="Check the network or the proxy (PIP_PROXY, PIP_CERT); BUNDLER_INDEX_MAP can point an index at a reachable mirror.",
    )


def from_indexes(pins: list[Pin], lock: Lock, target, *, sources: set[str], root: Path, say) -> None:
    """A wheel source: `pip download` of ``pins`` from the lock's indexes (through BUNDLER_INDEX_MAP)."""
    download(pins, lock.indexes, target, sources=sources, root=root, say=say)


# Where missing files come from, in order: each source stores what it can of the pins still
# missing into the cache (and raises only on a failure of its own).
WHEEL_SOURCES = (from_indexes,)


def gather(
    lock: Lock,
    target,
    *,
    sources: frozenset[str] | set[str] = frozenset(),
    verify: bool = True,
    wheel_sources=WHEEL_SOURCES,
    say=lambda text: None,
) -> list[Wheel]:
    """Every file the lock names, from the cache (the wheel sources fill in what is missing).

    ``verify`` hashes each file again here; the loopback route leaves it to the server,
    which hashes each file while it sends it (one read instead of two).
    """
    pins = locked_pins(lock)
    sources = {canonicalize_name(name) for name in sources}
    root = cache_root()
    for source in wheel_sources:
        missing = [pin for pin in pins if find_cached(pin, root) is None]
        if not missing:
            break
        source(missing, lock, target, sources=sources, root=root, say=say)
    wheels = []
    for pin in pins:
        cached = find_cached(pin, root)
        if cached is None:
            raise ExternalError(
                f"{pin.name}=={pin.version} was not downloaded for {target.describe()}: the index has no file for that Python and "
                "platform.",
                hint="Check the lock was made for this Target (`bundler lock`).",
                value=pin.name,
            )
        wheels.append(rehash(cached) if verify else cached)
    return wheels
