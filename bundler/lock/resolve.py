"""Resolution for the Target with pip-compile: on this host when it *is* the Target
(Linux, same architecture, same Python minor), otherwise inside the Target's base image.

pip-compile resolves for the interpreter and OS it runs on, so a host that differs from
the Target resolves in a container of the Target's image, with pip-tools installed there
from a wheelhouse fetched once. Before either, each index is probed, so that an
unreachable one is named instead of pip's "no matching version".
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bundler.errors import ExternalError, LockError
from bundler.lock.piplog import resolution_error
from bundler.lock.requirements import REQUIREMENTS_IN
from bundler.lock.spec import LockSpec
from bundler.pipsettings import PipSettings, cache_dir, container_pip, host_pip_settings, index_map, pip_environment, resolution_url


@dataclass
class Resolution:
    body: str
    where: str  # "host" | "container <image>"
    seconds: float
    log: str
    notes: list[str] = field(default_factory=list)


def _compile_args(spec: LockSpec, settings: PipSettings, pairs: list[tuple[str, str]], cache: str) -> list[str]:
    pypi_public = spec.build.pypi_index
    pypi = resolution_url(pypi_public, pairs)
    if pypi == pypi_public and settings.index_mirror:
        pypi = settings.index_mirror
    args = [
        "--no-config",
        "--no-header",
        "--generate-hashes",
        "--allow-unsafe",
        "--strip-extras",
        "--no-emit-index-url",
        "--no-emit-find-links",
        "--no-emit-trusted-host",
        "--no-emit-options",
        "--index-url",
        resolution_url(spec.index_url, pairs),
        "--extra-index-url",
        pypi,
        "--cache-dir",
        f"{cache}/pip-tools",
        "--pip-args",
        f"--retries {int(os.environ.get('BUNDLER_PIP_RETRIES', '5'))}",
    ]
    for url in spec.requirements.extra_indexes:  # the project's own, recorded in the lock
        args += ["--extra-index-url", resolution_url(url, pairs)]
    for folder in spec.requirements.find_links:  # wheels inside the project, locked by hash
        args += ["--find-links", folder]
    for url in settings.extra_index_urls:
        args += ["--extra-index-url", url]
    for host in settings.trusted_hosts:
        args += ["--trusted-host", host]
    return args


def resolve(spec: LockSpec, previous_body: str | None, upgrade: bool) -> Resolution:
    """pip-compile for the Target. When the previous lock's pins (kept as preferences) no
    longer fit a tightened requirement, resolution runs again without them and says so."""
    settings = host_pip_settings()
    pairs = index_map()
    probe_indexes(spec, settings, pairs)
    started = time.monotonic()
    kept = previous_body if previous_body and not upgrade else None
    code, log, where, body = _resolve_once(spec, settings, pairs, kept)
    notes = []
    if code != 0 and kept and "ResolutionImpossible" in log:
        notes.append("the previous lock's pins conflicted with requirements.in, so everything was resolved again (as --upgrade does)")
        code, log, where, body = _resolve_once(spec, settings, pairs, None)
    if code != 0:
        raise resolution_error(spec, log, where)
    return Resolution(body, where, time.monotonic() - started, log, notes)


def _resolve_once(spec: LockSpec, settings: PipSettings, pairs: list[tuple[str, str]], kept: str | None) -> tuple[int, str, str, str]:
    with tempfile.TemporaryDirectory(prefix="bundler-lock-") as work:
        work_dir = Path(work)
        (work_dir / REQUIREMENTS_IN).write_text("\n".join(spec.compiled_input) + "\n", encoding="utf-8")
        if kept:  # pip-compile keeps existing pins that still fit
            (work_dir / "lock.txt").write_text(kept, encoding="utf-8")
        if spec.host_mismatch:
            code, log, where = _resolve_in_container(spec, settings, pairs, work_dir)
        else:
            cache = str(cache_dir())
            argv = [
                sys.executable,
                "-m",
                "piptools",
                "compile",
                *_compile_args(spec, settings, pairs, cache),
                "-o",
                "lock.txt",
                REQUIREMENTS_IN,
            ]
            completed = subprocess.run(
                argv, cwd=work_dir, env=pip_environment(settings, cache, settings.cert), capture_output=True, text=True
            )
            code, log, where = completed.returncode, completed.stdout + completed.stderr, "host"
        body = (work_dir / "lock.txt").read_text(encoding="utf-8") if code == 0 else ""
    return code, log, where, body


def _resolve_in_container(spec: LockSpec, settings: PipSettings, pairs: list[tuple[str, str]], work_dir: Path) -> tuple[int, str, str]:
    image = spec.target.base_image or spec.base_images["runtime"]
    client = _engine(spec, image)
    from bundler.engine import base_image

    image_id = base_image(client, image).image_id
    cache = cache_dir()
    tools = _tools_wheelhouse(spec.target.python, cache)
    volumes = {
        str(work_dir): {"bind": "/work", "mode": "rw"},
        str(cache / "container"): {"bind": "/cache", "mode": "rw"},
        str(tools): {"bind": "/tools", "mode": "ro"},
    }
    (cache / "container").mkdir(exist_ok=True)
    for _, local in pairs:
        if local.startswith("file://"):
            folder = Path(local[len("file://") :])
            volumes[str(folder)] = {"bind": str(folder), "mode": "ro"}  # same path: file:// URLs and links stay valid
    for folder in spec.requirements.find_links:  # the project's wheels, at the same path
        volumes[folder] = {"bind": folder, "mode": "ro"}
    for folder in sorted(_local_link_targets(pairs)):
        if not any(folder == Path(m) or Path(m) in folder.parents for m in volumes if volumes[m]["bind"] == m):
            volumes[str(folder)] = {"bind": str(folder), "mode": "ro"}
    env, cert_volumes = container_pip(settings, "/cache")
    volumes.update(cert_volumes)
    args = _compile_args(spec, settings, pairs, "/cache")
    venv = f"/cache/venv-py{spec.target.python}-{image_id.split(':')[-1][:12]}"
    script = "\n".join(
        [
            "set -e",
            f"PY=$(command -v python{spec.target.python} || true)",
            f'if [ -z "$PY" ]; then echo "bundler: the image has no python{spec.target.python} on PATH" >&2; exit 42; fi',
            f'if [ ! -f {venv}/.ready ]; then rm -rf {venv}; "$PY" -m venv {venv}; {venv}/bin/python -m pip install -q --no-index '
            f"--find-links /tools pip-tools; touch {venv}/.ready; fi",
            "cd /work",
            f"{venv}/bin/python -m piptools compile {shlex.join(args)} -o lock.txt {REQUIREMENTS_IN}",
        ]
    )
    container = client.containers.run(
        image,
        ["/bin/sh", "-c", script],
        volumes=volumes,
        environment=env,
        working_dir="/work",
        user=f"{os.getuid()}:{os.getgid()}",
        detach=True,
        network_mode="bridge",
    )
    try:
        code = container.wait().get("StatusCode", 1)
        log = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
    finally:
        container.remove(force=True)
    if code == 42:
        raise LockError(
            f"resolution must run in the target image {image}, but it has no python{spec.target.python}: {log.strip()[-200:]}",
            hint=f"Set [target] base_image to an image that has Python {spec.target.python} (e.g. "
            f"python:{spec.target.python}-slim-bookworm).",
            value=image,
        )
    return code, log, f"container {image}"


def _local_link_targets(pairs: list[tuple[str, str]]) -> set[Path]:
    """Folders holding the files a mapped local index links to (relative or file:// links)."""
    from urllib.parse import unquote, urlsplit

    folders = set()
    for _, local in pairs:
        if not local.startswith("file://"):
            continue
        for page in Path(local[len("file://") :]).rglob("index.html"):
            for href in re.findall(r'href="([^"#]+)', page.read_text(errors="replace")):
                if href.startswith("file://"):
                    folders.add(Path(unquote(urlsplit(href).path)).parent)
                elif "://" not in href:
                    folders.add((page.parent / unquote(href)).resolve().parent)
    return folders


def _engine(spec: LockSpec, image: str):
    why = (
        f"{spec.host_mismatch}, and pip-compile resolves for the interpreter and OS it runs on, so resolution must "
        f"run inside the target image {image}"
    )
    from bundler import engine

    return engine.client(600, why=why, alternative=f"Or lock on a Linux host with Python {spec.target.python}.")


def _tools_wheelhouse(python: str, cache: Path) -> Path:
    """Pure-Python wheels of pip-tools and its dependencies for the container, fetched once."""
    from importlib.metadata import version

    tools = cache / "tools" / f"pip-tools-{version('pip-tools')}-py{python}"
    if (tools / ".ready").is_file():
        return tools
    tools.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--dest",
        str(tools),
        "--only-binary=:all:",
        "--python-version",
        python,
        "--implementation",
        "py",
        "--abi",
        "none",
        "--platform",
        "any",
        f"pip-tools=={version('pip-tools')}",
    ]
    completed = subprocess.run(argv, capture_output=True, text=True)
    if completed.returncode != 0:
        raise ExternalError(
            f"could not fetch pip-tools wheels for Python {python} into {tools}: {completed.stderr.strip()[-300:]}",
            hint="The container installs pip-tools from this cache without network; let `pip download pip-tools` reach PyPI once, or fill "
            "the folder by hand.",
            path=tools,
        )
    (tools / ".ready").touch()
    return tools


def probe_indexes(spec: LockSpec, settings: PipSettings, pairs: list[tuple[str, str]]) -> None:
    """Fail early, and clearly, when an index cannot be reached (pip only says 'no version')."""
    import ssl
    import urllib.error
    import urllib.request

    pypi = resolution_url(spec.build.pypi_index, pairs)
    if pypi == spec.build.pypi_index and settings.index_mirror:
        pypi = settings.index_mirror
    probed = [(spec.index_url, resolution_url(spec.index_url, pairs)), (spec.build.pypi_index, pypi)]
    probed += [(url, resolution_url(url, pairs)) for url in spec.requirements.extra_indexes]
    for public, url in probed:
        shown = url if url == public else f"{url} (standing for {public})"
        if url.startswith("file://"):
            if not Path(url[len("file://") :]).is_dir():
                raise ExternalError(
                    f"the index {shown} is not a folder on this host.",
                    hint="Fix BUNDLER_INDEX_MAP. The previous lock was not touched.",
                    value=url,
                )
            continue
        context = ssl.create_default_context(cafile=settings.cert or None) if url.startswith("https") else None
        request = urllib.request.Request(url.rstrip("/") + "/", method="HEAD")
        try:
            urllib.request.urlopen(request, timeout=float(os.environ.get("BUNDLER_PROBE_TIMEOUT", "15")), context=context).close()
        except urllib.error.HTTPError:
            continue  # the server answered: reachable (some indexes refuse HEAD or the root page)
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise ExternalError(
                f"the index {shown} cannot be reached from this host ({reason}).",
                hint="Check the network, the proxy (PIP_PROXY / HTTPS_PROXY) and the CA bundle (PIP_CERT); "
                "BUNDLER_INDEX_MAP can point an index at a reachable mirror. The previous lock was not touched.",
                value=url,
            ) from None
