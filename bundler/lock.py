"""`bundler lock`: Target from flags, the lock plan, resolution for the Target, writing.

Order of work (nothing is written until everything before it passed):
1. the requested Target (bundle.toml + flags) is checked against the compatibility table;
2. the plan: labelled pins for torch and its companions, index URLs, base image;
3. resolution with pip-compile for the Target — on the host when the host *is* the
   Target (Linux, same arch, same Python minor), otherwise inside the target image;
4. lint, then the lock is written atomically, then bundle.toml [target] is updated.

Resolution never sees this host's pip configuration files (PIP_CONFIG_FILE=/dev/null,
PIP_* unset); network settings (CA bundle, proxy, trusted hosts, an index mirror) are
forwarded explicitly. ``BUNDLER_INDEX_MAP="PUBLIC=LOCAL ..."`` redirects an index prefix
for resolution only (a local mirror, or the tests' fake index); the lock records the
public URL — hashes are of the files, so they hold for both.
"""

from __future__ import annotations

import configparser
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from bundler import __version__
from bundler.bundle import Bundle, Target, update_target, validate_target
from bundler.compat import Build, CompatTable, load_table
from bundler.errors import ExternalError, LockError, ProjectFileError, UsageError
from bundler.fsutil import atomic_write_text
from bundler.lockfile import (
    LockHeader, canonical, ensure_lintless, input_hash, read_state, render_lock,
    requirements_body, split_lock, target_fields,
)

REQUIREMENTS_IN = "requirements.in"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_FORBIDDEN_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--trusted-host", "-r", "--requirement", "-c", "--constraint", "-e", "--editable")


# ----- the Target ------------------------------------------------------------------
def requested_target(bundle: Bundle, table: CompatTable, *, cuda: str | None = None, rocm: str | None = None,
                     cpu: bool = False, torch: str | None = None, python: str | None = None) -> Target:
    """bundle.toml's Target with the flags applied; the base image follows a backend change."""
    chosen = [name for name, value in (("--cuda", cuda), ("--rocm", rocm), ("--cpu", cpu)) if value]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} were both given; a Target has one backend.", hint="Pass one of --cuda VER, --rocm VER or --cpu.")
    old = bundle.target
    new = old
    if cuda:
        new = replace(new, backend="cuda", accelerator=_strip_prefix(cuda, "cu", "cuda"))
    elif rocm:
        new = replace(new, backend="rocm", accelerator=_strip_prefix(rocm, "rocm"))
    elif cpu:
        new = replace(new, backend="cpu", accelerator="")
    if torch:
        if re.fullmatch(r"\d+\.\d+", torch):
            latest = table.latest_patch(torch)
            torch = latest or torch + ".0"
        new = replace(new, torch=torch)
    if python:
        new = replace(new, python=python)
    validate_target(new)
    if new != old:
        new = _follow_base_image(table, old, new)
    return new


def _strip_prefix(value: str, *prefixes: str) -> str:
    for prefix in prefixes:
        if value.lower().startswith(prefix) and not value.lower().startswith(prefix + "."):
            value = value[len(prefix):]
            if prefix == "cu" and value.isdigit() and len(value) >= 3:  # cu128 -> 12.8
                value = f"{value[:-1]}.{value[-1]}"
            break
    return value


def _follow_base_image(table: CompatTable, old: Target, new: Target) -> Target:
    """Swap a base image bundler suggested for the old Target for the new Target's one."""
    try:
        old_images = table.base_images(table.build_for(old), old.python)
    except Exception:
        old_images = {"runtime": table.runtime_base.format(python=old.python)}
    if old.base_image and old.base_image not in old_images.values():
        return new  # the user's own choice: keep it
    kind = "devel" if old.base_image and old.base_image == old_images.get("devel") else "runtime"
    try:
        images = table.base_images(table.build_for(new), new.python)
    except Exception:
        return new  # the combination is refused later, by the plan
    image = images.get(kind) or images["runtime"]
    return replace(new, base_image=image, base_digest="" if image != old.base_image else new.base_digest)


# ----- the plan --------------------------------------------------------------------
@dataclass
class LockPlan:
    bundle: Bundle
    target: Target
    build: Build
    requirements_in: str
    compiled_input: list[str]
    pins: dict[str, str]
    index_url: str
    extra_index_urls: list[str]
    base_images: dict[str, str]
    input_sha256: str
    needs_setuptools: bool
    host_mismatch: str | None
    notes: list[str] = field(default_factory=list)

    @property
    def lock_path(self) -> Path:
        return self.bundle.lock_path

    @property
    def base_image(self) -> str:
        image = self.target.base_image or self.base_images["runtime"]
        return f"{image}@{self.target.base_digest}" if self.target.base_digest else image

    def as_dict(self) -> dict:
        build = self.build
        return {
            "target": target_fields(self.target) | {"base_image": self.target.base_image, "base_digest": self.target.base_digest},
            "build": build.tag,
            "index_url": self.index_url,
            "extra_index_urls": self.extra_index_urls,
            "pins": [f"{name}=={version}" for name, version in self.pins.items()],
            "compiled_input": self.compiled_input,
            "base_image": self.base_image,
            "suggested_base_images": self.base_images,
            "lock": str(self.lock_path),
            "input_sha256": self.input_sha256,
            "resolve_in": "container" if self.host_mismatch else "host",
            "resolve_reason": self.host_mismatch,
            "confirmed": build.release.confirmed and (build.cuda.confirmed if build.cuda else True) and (build.rocm.confirmed if build.rocm else True),
            "driver": {"toolkit": build.cuda.driver_toolkit, "minor_compat": build.cuda.driver_minor_compat} if build.cuda else None,
            "arch": list(build.arch),
            "pypi_cuda": build.release.pypi_cuda or None,
            "notes": self.notes,
        }


def read_requirements_in(bundle: Bundle) -> str:
    path = bundle.root / REQUIREMENTS_IN
    if not path.is_file():
        raise ProjectFileError(
            f"{path} not found: bundler lock resolves the project's direct dependencies from it.",
            hint="Create it with one requirement per line, e.g. `torch==2.13.0` and `numpy`.",
            path=path,
        )
    return path.read_text(encoding="utf-8")


def make_plan(bundle: Bundle, target: Target, table: CompatTable | None = None) -> LockPlan:
    table = table or load_table()
    build = table.build_for(target)  # TargetError names the valid choices
    text = read_requirements_in(bundle)
    companions = build.companions()
    compiled, notes = _compile_input(bundle.root / REQUIREMENTS_IN, text, companions, target)
    pins = {name: version for name, version in companions.items() if name == "torch" or any(_line_name(line) == name for line in compiled)}
    if not build.release.confirmed:
        notes.append(f"the table row for torch {target.torch} is marked unconfirmed ({build.release.note or 'not checked against a published source'}).")
    return LockPlan(
        bundle=bundle, target=target, build=build, requirements_in=text, compiled_input=compiled,
        pins=pins, index_url=build.index_url, extra_index_urls=[build.pypi_index],
        base_images=table.base_images(build, target.python), input_sha256=input_hash(text, target),
        needs_setuptools=build.release.needs_setuptools(target.python), host_mismatch=host_mismatch(target), notes=notes,
    )


def _line_name(line: str) -> str:
    match = _NAME.match(line)
    return canonical(match.group(1)) if match else ""


def _compile_input(path: Path, text: str, companions: dict[str, str], target: Target) -> tuple[list[str], list[str]]:
    """requirements.in with torch and companions replaced by the Target's exact builds."""
    lines, notes, seen = [], [], set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        option = line.split()[0].split("=")[0]
        if line.startswith("-"):
            if option in _FORBIDDEN_OPTIONS:
                raise ProjectFileError(
                    f"{path}:{number}: {option} is not allowed in requirements.in ({line}).",
                    hint="Indexes come from the Target (bundle.toml) and host paths do not travel; list plain requirements only.",
                    path=path, value=line,
                )
            lines.append(line)
            continue
        if _line_name(line) not in companions:
            lines.append(line)  # passes through untouched: pip-compile reports a malformed line
            continue
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.version import Version

        try:
            requirement = Requirement(line)
        except InvalidRequirement as error:
            raise ProjectFileError(f"{path}:{number}: {line!r} is not a requirement ({error}).", hint="Write one PEP 508 requirement per line.", path=path, value=line) from None
        name = canonical(requirement.name)
        if name in seen:
            raise LockError(f"{path}:{number}: {name} is listed twice.", hint="Keep one line per package.", path=path, value=line)
        seen.add(name)
        wanted = companions[name]
        public = Version(wanted).public
        if requirement.specifier and not requirement.specifier.contains(Version(public), prereleases=True) and not any(s.operator == "==" for s in requirement.specifier):
            raise LockError(
                f"{path}:{number}: {line!r} excludes {name} {public}, the version paired with torch {target.torch}.",
                hint=f"Remove the specifier (bundler pins {name}=={wanted} for the Target), or choose another torch with --torch.",
                path=path, value=line,
            )
        if any(s.operator == "==" and Version(s.version.split("+")[0]) != Version(public) for s in requirement.specifier):
            notes.append(f"requirements.in pins {line}; the Target's {name}=={wanted} is used instead (bundle.toml [target]).")
        lines.append(f"{name}=={wanted}")
    if "torch" not in seen:
        lines.insert(0, f"torch=={companions['torch']}")
        notes.append(f"requirements.in does not list torch; torch=={companions['torch']} is added from the Target.")
    return lines, notes


# ----- host versus Target ------------------------------------------------------------
def host_platform() -> str:
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"{platform.system().lower()}_{arch}"


def host_mismatch(target: Target) -> str | None:
    """Why pip-compile on this host would resolve for the wrong machine, or None."""
    forced = os.environ.get("BUNDLER_RESOLVE_IN", "")
    here_python = f"{sys.version_info.major}.{sys.version_info.minor}"
    reasons = []
    if host_platform() != target.platform:
        reasons.append(f"this host is {host_platform()}, the Target is {target.platform}")
    if here_python != target.python:
        reasons.append(f"this host runs Python {here_python}, the Target Python {target.python}")
    if forced == "container" and not reasons:
        reasons.append("BUNDLER_RESOLVE_IN=container")
    return "; ".join(reasons) or None


# ----- the cache and the pip settings forwarded ------------------------------------------
def cache_dir() -> Path:
    path = Path(os.environ.get("BUNDLER_CACHE_DIR") or Path.home() / ".cache" / "bundler").expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def index_map() -> list[tuple[str, str]]:
    pairs = []
    for item in os.environ.get("BUNDLER_INDEX_MAP", "").replace(";", " ").split():
        public, sep, local = item.partition("=")
        if not sep or not public or not local:
            raise UsageError(f"BUNDLER_INDEX_MAP entry {item!r} is not PUBLIC=LOCAL.", hint="Example: https://download.pytorch.org/whl=file:///srv/torch-mirror/whl", value=item)
        pairs.append((public.rstrip("/"), local.rstrip("/")))
    return pairs


def resolution_url(public: str, pairs: list[tuple[str, str]]) -> str:
    for prefix, local in pairs:
        if public == prefix or public.startswith(prefix + "/"):
            return local + public[len(prefix):]
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


# ----- resolution --------------------------------------------------------------------
@dataclass
class Resolution:
    body: str
    where: str  # "host" | "container <image>"
    seconds: float
    log: str


def _compile_args(plan: LockPlan, settings: PipSettings, pairs: list[tuple[str, str]], cache: str) -> list[str]:
    pypi_public = plan.build.pypi_index
    pypi = resolution_url(pypi_public, pairs)
    if pypi == pypi_public and settings.index_mirror:
        pypi = settings.index_mirror
    args = [
        "--no-config", "--no-header", "--generate-hashes", "--allow-unsafe", "--strip-extras",
        "--no-emit-index-url", "--no-emit-find-links", "--no-emit-trusted-host", "--no-emit-options",
        "--index-url", resolution_url(plan.index_url, pairs), "--extra-index-url", pypi,
        "--cache-dir", f"{cache}/pip-tools",
        "--pip-args", f"--retries {int(os.environ.get('BUNDLER_PIP_RETRIES', '5'))}",
    ]
    for url in settings.extra_index_urls:
        args += ["--extra-index-url", url]
    for host in settings.trusted_hosts:
        args += ["--trusted-host", host]
    return args


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


def probe_indexes(plan: LockPlan, settings: PipSettings, pairs: list[tuple[str, str]]) -> None:
    """Fail early, and clearly, when an index cannot be reached (pip only says 'no version')."""
    import ssl
    import urllib.error
    import urllib.request

    pypi = resolution_url(plan.build.pypi_index, pairs)
    if pypi == plan.build.pypi_index and settings.index_mirror:
        pypi = settings.index_mirror
    for public, url in ((plan.index_url, resolution_url(plan.index_url, pairs)), (plan.build.pypi_index, pypi)):
        shown = url if url == public else f"{url} (standing for {public})"
        if url.startswith("file://"):
            if not Path(url[len("file://"):]).is_dir():
                raise ExternalError(f"the index {shown} is not a folder on this host.", hint="Fix BUNDLER_INDEX_MAP. The previous lock was not touched.", value=url)
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


def resolve(plan: LockPlan, previous_body: str | None, upgrade: bool) -> Resolution:
    settings = host_pip_settings()
    pairs = index_map()
    probe_indexes(plan, settings, pairs)
    with tempfile.TemporaryDirectory(prefix="bundler-lock-") as work:
        work_dir = Path(work)
        (work_dir / REQUIREMENTS_IN).write_text("\n".join(plan.compiled_input) + "\n", encoding="utf-8")
        if previous_body and not upgrade:  # pip-compile keeps existing pins that still fit
            (work_dir / "lock.txt").write_text(previous_body, encoding="utf-8")
        started = time.monotonic()
        if plan.host_mismatch:
            code, log, where = _resolve_in_container(plan, settings, pairs, work_dir)
        else:
            cache = str(cache_dir())
            argv = [sys.executable, "-m", "piptools", "compile", *_compile_args(plan, settings, pairs, cache), "-o", "lock.txt", REQUIREMENTS_IN]
            completed = subprocess.run(argv, cwd=work_dir, env=pip_environment(settings, cache, settings.cert), capture_output=True, text=True)
            code, log, where = completed.returncode, completed.stdout + completed.stderr, "host"
        seconds = time.monotonic() - started
        if code != 0:
            raise _resolution_error(plan, log, where)
        body = (work_dir / "lock.txt").read_text(encoding="utf-8")
    return Resolution(body, where, seconds, log)


_NOISE = re.compile(r"WARNING: Location '.*' is ignored|^\s*$")
_TRACEBACK = re.compile(r"^(Traceback|File |raise |During handling|The above exception|[~^]|[a-z_.]+\.[A-Za-z]+(Error|Impossible|Conflicted)\b)")


def _conflict_causes(log: str) -> str:
    """'numpy==1.26.4 (requirements.in) vs numpy==2.1.0 (requirements.in)' from pip's ResolutionImpossible."""
    impossible = next((line for line in log.splitlines() if "ResolutionImpossible: [" in line), "")
    found = re.findall(r"requirement=\w+\('([^']+)'\), parent=(None|\w+\('([^']*)'\))", impossible)
    if not found:
        return ""
    parts = [f"{spec} ({Path(parent_link).name.split('-py')[0].split('-cp')[0] if parent_link else 'requirements.in'})" for spec, _, parent_link in found]
    return "conflicting requirements: " + " vs ".join(parts[:4])


def _resolution_error(plan: LockPlan, log: str, where: str) -> Exception:
    lines = [line.strip() for line in log.splitlines() if not _NOISE.search(line)]
    unreachable = [line for line in lines if re.search(r"Could not fetch URL|Failed to establish|NewConnectionError|Name or service not known|ConnectionError|SSLError|timed out|ProxyError", line)]
    if unreachable:
        return ExternalError(
            f"resolution on {where} could not reach an index for {plan.target.describe()}: {unreachable[0][:300]}",
            hint="Check the network, the proxy (PIP_PROXY / HTTPS_PROXY) and the CA bundle (PIP_CERT); "
            "BUNDLER_INDEX_MAP can point an index at a reachable mirror. The previous lock was not touched.",
        )
    errors = [line for line in lines if line.startswith("ERROR:")]
    causes = _conflict_causes(log)
    summary = (errors[:1] + [causes]) if errors and causes else errors[:2]
    summary = summary or [line for line in lines if not _TRACEBACK.match(line)][-2:]
    return LockError(
        "the requirements cannot be resolved together for " + plan.target.describe() + ":\n  " + "\n  ".join(s[:300] for s in summary),
        hint=f"Loosen or fix the pins in {plan.bundle.root / REQUIREMENTS_IN} named above. The previous lock was not touched.",
        path=plan.bundle.root / REQUIREMENTS_IN,
    )


# ----- resolution inside the target image ---------------------------------------------
def _resolve_in_container(plan: LockPlan, settings: PipSettings, pairs: list[tuple[str, str]], work_dir: Path) -> tuple[int, str, str]:
    image = plan.target.base_image or plan.base_images["runtime"]
    client = _engine(plan, image)
    from bundler.engine import base_image

    image_id = base_image(client, image).image_id
    cache = cache_dir()
    tools = _tools_wheelhouse(plan.target.python, cache)
    volumes = {str(work_dir): {"bind": "/work", "mode": "rw"}, str(cache / "container"): {"bind": "/cache", "mode": "rw"}, str(tools): {"bind": "/tools", "mode": "ro"}}
    (cache / "container").mkdir(exist_ok=True)
    for _, local in pairs:
        if local.startswith("file://"):
            folder = Path(local[len("file://"):])
            volumes[str(folder)] = {"bind": str(folder), "mode": "ro"}  # same path: file:// URLs and links stay valid
    for folder in sorted(_local_link_targets(pairs)):
        if not any(folder == Path(m) or Path(m) in folder.parents for m in volumes if volumes[m]["bind"] == m):
            volumes[str(folder)] = {"bind": str(folder), "mode": "ro"}
    cert = None
    if settings.cert and Path(settings.cert).is_file():
        volumes[str(Path(settings.cert).resolve())] = {"bind": "/etc/bundler/ca.pem", "mode": "ro"}
        cert = "/etc/bundler/ca.pem"
    env = {k: v for k, v in pip_environment(settings, "/cache", cert).items() if k.startswith(("PIP_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"))}
    env.update({"HOME": "/tmp", "PYTHONUTF8": "1"})
    args = _compile_args(plan, settings, pairs, "/cache")
    venv = f"/cache/venv-py{plan.target.python}-{image_id.split(':')[-1][:12]}"
    script = "\n".join([
        "set -e",
        f"PY=$(command -v python{plan.target.python} || true)",
        f'if [ -z "$PY" ]; then echo "bundler: the image has no python{plan.target.python} on PATH" >&2; exit 42; fi',
        f'if [ ! -f {venv}/.ready ]; then rm -rf {venv}; "$PY" -m venv {venv}; {venv}/bin/python -m pip install -q --no-index --find-links /tools pip-tools; touch {venv}/.ready; fi',
        "cd /work",
        f"{venv}/bin/python -m piptools compile {shlex.join(args)} -o lock.txt {REQUIREMENTS_IN}",
    ])
    container = client.containers.run(
        image, ["/bin/sh", "-c", script], volumes=volumes, environment=env, working_dir="/work",
        user=f"{os.getuid()}:{os.getgid()}", detach=True, network_mode="bridge",
    )
    try:
        code = container.wait().get("StatusCode", 1)
        log = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
    finally:
        container.remove(force=True)
    if code == 42:
        raise LockError(
            f"resolution must run in the target image {image}, but it has no python{plan.target.python}: {log.strip()[-200:]}",
            hint=f"Set [target] base_image to an image that has Python {plan.target.python} (e.g. python:{plan.target.python}-slim-bookworm).",
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
        for page in Path(local[len("file://"):]).rglob("index.html"):
            for href in re.findall(r'href="([^"#]+)', page.read_text(errors="replace")):
                if href.startswith("file://"):
                    folders.add(Path(unquote(urlsplit(href).path)).parent)
                elif "://" not in href:
                    folders.add((page.parent / unquote(href)).resolve().parent)
    return folders


def _engine(plan: LockPlan, image: str):
    why = (
        f"{plan.host_mismatch}, and pip-compile resolves for the interpreter and OS it runs on, so resolution must "
        f"run inside the target image {image}"
    )
    from bundler import engine

    return engine.client(600, why=why, alternative=f"Or lock on a Linux host with Python {plan.target.python}.")


def _tools_wheelhouse(python: str, cache: Path) -> Path:
    """Pure-Python wheels of pip-tools and its dependencies for the container, fetched once."""
    from importlib.metadata import version

    tools = cache / "tools" / f"pip-tools-{version('pip-tools')}-py{python}"
    if (tools / ".ready").is_file():
        return tools
    tools.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "-q", "--dest", str(tools), "--only-binary=:all:", "--python-version", python,
            "--implementation", "py", "--abi", "none", "--platform", "any", f"pip-tools=={version('pip-tools')}"]
    completed = subprocess.run(argv, capture_output=True, text=True)
    if completed.returncode != 0:
        raise ExternalError(
            f"could not fetch pip-tools wheels for Python {python} into {tools}: {completed.stderr.strip()[-300:]}",
            hint="The container installs pip-tools from this cache without network; let `pip download pip-tools` reach PyPI once, or fill the folder by hand.",
            path=tools,
        )
    (tools / ".ready").touch()
    return tools


# ----- the whole command ---------------------------------------------------------------
@dataclass
class LockResult:
    plan: LockPlan
    action: str  # planned | unchanged | written
    lock_path: Path
    resolution: Resolution | None = None
    target_updated: bool = False
    backup: Path | None = None

    def as_dict(self) -> dict:
        data = {"ok": True, "action": self.action, "lock": str(self.lock_path), "target_updated": self.target_updated}
        data.update(self.plan.as_dict())
        if self.resolution:
            data["resolved_in"] = self.resolution.where
            data["resolve_seconds"] = round(self.resolution.seconds, 3)
        if self.backup:
            data["backup"] = str(self.backup)
        return data


def run_lock(bundle: Bundle, *, cuda=None, rocm=None, cpu=False, torch=None, python=None, upgrade=False, dry_run=False, say=lambda text: None) -> LockResult:
    table = load_table()
    target = requested_target(bundle, table, cuda=cuda, rocm=rocm, cpu=cpu, torch=torch, python=python)
    plan = make_plan(bundle, target, table)
    if dry_run:
        return LockResult(plan, "planned", plan.lock_path)
    state = read_state(plan.lock_path, plan.requirements_in, target)
    if state.status == "tampered" and not upgrade:
        raise LockError(
            f"{state.detail} bundler will not resolve over a lock it did not write as it is.",
            hint=f"Look at the edit (e.g. `git diff {plan.lock_path.name}`); to regenerate it run `bundler lock --upgrade` "
            f"(the edited file is kept as {plan.lock_path.name}.edited).",
            path=plan.lock_path,
        )
    if state.status == "fresh" and not upgrade and target == bundle.target:
        say(f"{plan.lock_path.name} is up to date for {target.describe()} (input hash and body hash match); nothing to resolve.")
        return LockResult(plan, "unchanged", plan.lock_path)
    previous = None
    same_build = state.header is not None and state.header.build == plan.build.tag and state.header.target.get("python") == target.python
    if state.status in ("fresh", "stale") and same_build:
        previous = requirements_body(split_lock(plan.lock_path.read_text(encoding="utf-8"))[1])
    say(f"Resolving {target.describe()} against {plan.index_url} + {', '.join(plan.extra_index_urls)}"
        + (f" in a container ({plan.host_mismatch})" if plan.host_mismatch else " on this host") + " …")
    resolution = resolve(plan, previous, upgrade)
    header = LockHeader(
        target=target_fields(target), build=plan.build.tag, index_url=plan.index_url,
        extra_index_urls=tuple(plan.extra_index_urls + host_pip_settings().extra_index_urls),
        base_image=plan.base_image, bundler_version=__version__, input_sha256=plan.input_sha256,
    )
    text = render_lock(plan.lock_path.name, header, resolution.body)
    ensure_lintless(text, target, plan.pins, plan.needs_setuptools, plan.lock_path)
    backup = None
    if state.status == "tampered":
        backup = plan.lock_path.with_name(plan.lock_path.name + ".edited")
        shutil.copy2(plan.lock_path, backup)
    atomic_write_text(plan.lock_path, text)
    updated = target != bundle.target
    if updated:
        update_target(bundle, target)
    return LockResult(plan, "written", plan.lock_path, resolution, updated, backup)

