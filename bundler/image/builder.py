"""The builder container: a source archive made into a wheel on the Target's own base image.

It runs in the builder image (engine/builderimage.py: the base image, or ``bundler/builder:<key>``
with the compilers and system packages the archive builds with). The build runs ``pip wheel
--no-deps`` in a fresh venv as this user, with the host's CA bundle and proxy (its build requirements come from PyPI),
with ``SOURCE_DATE_EPOCH`` fixed so that a rebuild gives the same bytes where the
package's build allows it.
"""

from __future__ import annotations

import configparser
import os
import re
import shlex
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.contracts.dropped import build_constraint_for
from bundler.contracts.syslibs import bundle_line
from bundler.engine import Engine, EngineFailure, Mount, RunSpec
from bundler.engine.builderimage import compilers_for
from bundler.errors import BuildError, ExternalError
from bundler.image.torchenv import TorchBuildPlan
from bundler.lock.sources import listed_wheel_route
from bundler.lock.torchbuild import ARCHIVE_ERRORS, NEEDS_GPU_COMPILER, NINJA_STEP, compile_command, own_lines, read_member_names
from bundler.pipsettings import container_pip, host_pip_settings
from bundler.target.syspackages import build_needs

if TYPE_CHECKING:
    from bundler.target.bundle import Target

BUILD_TIMEOUT_S = int(os.environ.get("BUNDLER_WHEEL_BUILD_TIMEOUT", "3600"))  # PyG's torch-sparse took 28 min on 2 busy cores
SOURCE_DATE_EPOCH = "315532800"  # 1980-01-01, the earliest time a wheel (zip) can hold
Say = Callable[[str], None]


def needed_compilers(sdist: Path) -> list[str]:
    """The Debian packages the archive's sources call for ([] for pure Python)."""
    return compilers_for(member_list(sdist))


def member_list(sdist: Path) -> list[str]:
    """The archive's member names; BuildError naming it when it cannot be read."""
    try:
        return read_member_names(sdist)
    except ARCHIVE_ERRORS as error:
        raise BuildError(
            f"the source archive {sdist} cannot be read: {error}.",
            hint=f"Delete {sdist.parent} from the cache and build again.",
            path=sdist,
        ) from None


@dataclass(frozen=True)
class Inputs:
    """What a refusal's hint names: the lock's input file and the system packages the builder already has."""

    requirements: str = "requirements.in"
    system_packages: tuple[str, ...] = ()
    target: Target | None = None  # the release with a wheel for it, or that none has one, is read from the index


@dataclass(frozen=True)
class AgainstTorch:
    """What a build against torch installs first: the plan, the lock's wheels of torch and what it needs, the lock's pins."""

    plan: TorchBuildPlan
    wheels: list  # wheelhouse.Wheel, hash-checked, in the wheel cache
    constraints: list[str]
    cache: Path


def torch_script(python: str, sdist: str, against: AgainstTorch, env_folder: Path, constraint: str = "") -> str:
    """The builder's shell script for a build against torch (its files written into ``env_folder``, mounted at /env);
    ``constraint`` (``setuptools<82``) is installed over the lock's release in this throwaway build environment."""
    lines = [f"/wheels/{w.path.relative_to(against.cache).as_posix()} --hash=sha256:{w.sha256}" for w in against.wheels]
    (env_folder / "torch.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (env_folder / "constraints.txt").write_text("\n".join(against.constraints) + "\n", encoding="utf-8")
    requires = " ".join(shlex.quote(item) for item in against.plan.build_requires)
    parallel = ""
    if against.plan.parallel_extensions:
        settings = configparser.ConfigParser()
        settings["build_ext"] = {"parallel": str(against.plan.parallel_extensions)}
        with open(env_folder / "distutils.cfg", "w", encoding="utf-8") as handle:
            settings.write(handle)
        parallel = "; export DIST_EXTRA_CONFIG=/env/distutils.cfg"  # setuptools reads it besides setup.cfg
    return "; ".join(
        [
            f"set -e; PY=$(command -v {python}); cd /tmp{parallel}",
            '"$PY" -m venv /tmp/venv; V=/tmp/venv/bin/python',
            'export PATH="/tmp/venv/bin:$PATH"',  # torch finds ninja (installed in the venv) on PATH, else compiles one file at a time
            "$V -m pip install -q --no-index --no-deps --require-hashes -r /env/torch.txt",
            f"$V -m pip install -q -c /env/constraints.txt {requires}" if requires else "true",
            f"$V -m pip install -q {shlex.quote(constraint)}" if constraint else "true",
            "echo \"bundler: building against torch $($V -c 'import torch; print(torch.__version__)') with MAX_JOBS=$MAX_JOBS\"",
            f'$V -m pip wheel -v --no-build-isolation --no-deps --no-cache-dir -w /out "/in/{sdist}"',  # -v: its compiler lines
        ]
    )


_SOURCE = re.compile(r"(?:^|\s)['\"]?(\S+?\.(?:c|cc|cpp|cxx|cu|hip))['\"]?(?=\s|$)")  # the file compiled (-c may come twice)
_BUILD_TREE = re.compile(r"^.*/pip-req-build-[^/]+/")
_COMPILE_ERROR = re.compile(r"^\S+?:\d+(?::\d+)?: (?:fatal )?error: ")


class CompileProgress:
    """A torch build's output as progress lines: each compile step (ninja's ``[k/N]``, else each compiler call) and
    the link, with the seconds since the build began; fed the container's output as it comes."""

    def __init__(self, name: str, say: Say, clock: Callable[[], float] = time.monotonic) -> None:
        self.name, self.say, self.clock = name, say, clock
        self.started = clock()
        self.partial = ""
        self.calls = 0
        self.failed = False

    def __call__(self, text: str) -> None:
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()
        for line in lines:
            self.line(line.strip())

    def elapsed(self) -> str:
        return f"{self.clock() - self.started:.0f} s"

    def line(self, line: str) -> None:
        if line.startswith("bundler: building against torch"):
            self.say(f"  {self.name}: torch and the build requirements installed ({self.elapsed()}); compiling…")
            return
        if _COMPILE_ERROR.match(line) and not self.failed:
            self.failed = True  # said at once: the files compiling beside it still run to their end before the build stops
            self.say(f"  {self.name}: the compiler reports an error ({self.elapsed()}): {_BUILD_TREE.sub('', line)[:300]}")
        if not compile_command(line):
            return
        step, source = NINJA_STEP.match(line), _SOURCE.search(line)
        what = _BUILD_TREE.sub("", source.group(1)) if source else ""
        if step:
            # ninja prints a step as it ends when its output is not a terminal
            self.say(f"  {self.name}: compiled {step.group(1)} of {step.group(2)}{': ' + what if what else ''} ({self.elapsed()})")
        elif " -c " in line and source:
            self.calls += 1
            self.say(f"  {self.name}: compiling {what} (file {self.calls}, {self.elapsed()})")
        else:
            self.say(f"  {self.name}: linking ({self.elapsed()})")


def build_in_container(
    engine: Engine,
    image: str,
    python: str,
    sdist: Path,
    name: str,
    version: str,
    say: Say,
    against: AgainstTorch | None = None,
    inputs: Inputs = Inputs(),
) -> tuple[Path, str]:
    """``pip wheel`` of ``sdist`` in ``image``; (the wheel, in a folder the caller removes; the log).
    ``inputs``: the lock's input (bundle.toml [build] requirements) and system packages, named in the refusal's hint."""
    out = Path(tempfile.mkdtemp(prefix="bundler-wheel-"))
    env, mounts = _builder_mounts(sdist.parent, out)
    script = _wheel_script(python, f'"/in/{sdist.name}"')
    if against is not None:
        env_folder = out / ".env"
        env_folder.mkdir()
        script = torch_script(python, sdist.name, against, env_folder)
        env.update(against.plan.environment)
        mounts += [Mount(str(against.cache), "/wheels"), Mount(str(env_folder), "/env")]
        say(
            f"Building a wheel of {name}=={version} from {sdist.name} against {against.plan.torch} (build isolation off, "
            f"MAX_JOBS={against.plan.environment.get('MAX_JOBS')}"
            + (f", its ninja off: {against.plan.parallel_extensions} extensions at once" if against.plan.parallel_extensions else "")
            + f", at most {BUILD_TIMEOUT_S} s)…"
        )
    else:
        say(f"Building a wheel of {name}=={version} from {sdist.name} for the Target…")
    progress = CompileProgress(name, say) if against is not None else None
    code, log = _run_builder(engine, image, script, env, mounts, f"{name}=={version}", progress)
    constraint = build_constraint_for(log) if code != 0 else ""
    if constraint:  # its setup imports what the build tools pip installs no longer ship: once more, with the release that does
        say(f"{name}=={version}'s setup imports a module only `{constraint}` still ships: building it again with that constraint…")
        (out / ".build-constraints.txt").write_text(constraint + "\n", encoding="utf-8")
        constrained = env | {"PIP_CONSTRAINT": "/out/.build-constraints.txt", "PIP_BUILD_CONSTRAINT": "/out/.build-constraints.txt"}
        if against is not None:  # no isolation: the build environment itself gets that release
            script, constrained = torch_script(python, sdist.name, against, out / ".env", constraint), env
        code, log = _run_builder(engine, image, script, constrained, mounts, f"{name}=={version}", progress)
    wheels = sorted(out.glob("*.whl"))
    if code != 0 or len(wheels) != 1:
        raise build_failure(name, version, sdist, code, log, against, inputs)
    if progress is not None:
        say(f"Built {wheels[0].name} in {progress.elapsed()}.")
    return wheels[0], log


def build_tree_in_container(
    engine: Engine, image: str, python: str, tree: Path, name: str, say: Say, environment: dict[str, str] | None = None
) -> tuple[Path, str]:
    """A PEP 517 build of the project folder ``tree`` (copied inside the container first, since
    backends write into the tree they build); (the wheel, in a folder the caller removes; the log)."""
    say(f"Building the project's own wheel ({name}) with its build backend, in the builder container…")
    code, log, wheels = _pip_wheel(
        engine, image, python, tree.parent, "/tmp/project-src", name, copy_from=f"/in/{tree.name}", environment=environment
    )
    if code != 0 or len(wheels) != 1:
        raise project_build_failure(name, code, log, len(wheels))
    return wheels[0], log


def _pip_wheel(
    engine: Engine,
    image: str,
    python: str,
    mounted: Path,
    what: str,
    name: str,
    copy_from: str = "",
    environment: dict[str, str] | None = None,
) -> tuple[int, str, list[Path]]:
    """``pip wheel --no-deps what`` in a fresh venv of ``image`` with ``mounted`` at /in; (exit, log, wheels)."""
    out = Path(tempfile.mkdtemp(prefix="bundler-wheel-"))
    env, mounts = _builder_mounts(mounted, out, environment)
    copy = f"cp -R {copy_from} {what}; " if copy_from else ""
    code, log = _run_builder(engine, image, _wheel_script(python, what, copy), env, mounts, name)
    return code, log, sorted(out.glob("*.whl"))


def _builder_mounts(mounted: Path, out: Path, environment: dict[str, str] | None = None) -> tuple[dict[str, str], list[Mount]]:
    """The builder's environment (the host's pip settings, a fixed build time) and mounts: ``mounted`` at /in, ``out`` at /out."""
    env, volumes = container_pip(host_pip_settings(), "/tmp/pip-cache")
    env.update({"SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH, "PIP_NO_INPUT": "1"} | (environment or {}))
    mounts = [Mount(source, bind["bind"], bind["mode"] == "ro") for source, bind in volumes.items()]
    return env, [*mounts, Mount(str(mounted), "/in"), Mount(str(out), "/out", read_only=False)]


def _wheel_script(python: str, what: str, before: str = "") -> str:
    """A PEP 517 ``pip wheel`` of ``what`` into /out, in a fresh venv of the image's ``python``."""
    return (
        f"set -e; PY=$(command -v {python}); cd /tmp; {before}"
        f'"$PY" -m venv /tmp/venv; /tmp/venv/bin/python -m pip wheel --use-pep517 --no-deps --no-cache-dir -w /out {what}'
    )


def _run_builder(
    engine: Engine, image: str, script: str, env: dict[str, str], mounts: list[Mount], what: str, follow: Say | None = None
) -> tuple[int, str]:
    """``script`` in a builder container as the calling user; (exit, log), exit -1 when it ran past BUILD_TIMEOUT_S.
    ``follow`` gets its output as it comes."""
    spec = RunSpec(
        image,
        [script],
        entrypoint=["/bin/sh", "-c"],
        environment=env,
        mounts=mounts,
        user=f"{os.getuid()}:{os.getgid()}",
        working_dir="/tmp",
        network_mode="bridge",
    )
    try:
        ran = engine.run(spec, timeout=BUILD_TIMEOUT_S, follow=follow)
    except EngineFailure as error:
        raise BuildError(
            f"the builder container for {what} could not run: {error.explanation[:300]}.",
            hint="Check the engine's log and its free disk space, then build again.",
            value=what.split("==")[0],
        ) from None
    return ran.exit_code, ran.output


def _log_tail(log: str) -> str:
    return "\n  ".join([line for line in log.splitlines() if line.strip()][-12:])


def _unreachable(what: str, name: str, log: str) -> Exception | None:
    """The builder could not reach PyPI for the build requirements: one refusal for every build."""
    if not re.search(r"Could not fetch URL|NewConnectionError|Temporary failure in name resolution|SSLError|ProxyError", log):
        return None
    return ExternalError(
        f"building {what} needs its build requirements from PyPI, which the builder container could not reach:\n  {_log_tail(log)}",
        hint="Check the proxy (PIP_PROXY / HTTPS_PROXY) and the CA bundle (PIP_CERT); the container gets both from this host.",
        value=name,
    )


def project_build_failure(name: str, code: int, log: str, wheels: int) -> Exception:
    unreachable = _unreachable(f"the project's own wheel ({name})", name, log)
    if unreachable is not None:
        return unreachable
    tail = _log_tail(log)
    why = "the build ran past its time limit" if code == -1 else f"the build exited {code}" if code else f"it gave {wheels} wheels, not one"
    return BuildError(
        f"the project's own package ({name}) did not build into a wheel from the files the image gets: {why}.\n  {tail}",
        hint="The build sees the project through .dockerignore (secrets and version control left out): a backend that reads its "
        "version from git is given the version `git describe` gives here (setuptools-scm, hatch-vcs); others need a static version. Try "
        "`pip wheel --no-deps .` here; or set [build] install_project = false in bundle.toml to run the code from the source tree.",
        value=name,
    )


def build_failure(
    name: str, version: str, sdist: Path, code: int, log: str, against: AgainstTorch | None = None, inputs: Inputs = Inputs()
) -> Exception:
    unreachable = _unreachable(f"{name}=={version} from {sdist.name}", name, log)
    if unreachable is not None:
        return unreachable
    tail = _log_tail(log)
    header = re.search(r"fatal error: ([\w./+-]+): No such file", log)
    needs = build_needs(log)
    why = (
        "it needs " + ", ".join(f"{what} (Debian's {package})" for what, package in needs) + ", which the builder does not have"
        if needs
        else f"it needs the headers of a system library ({header.group(1)}) that the builder does not have"
        if header
        else "the build ran past its time limit"
        if code == -1
        else f"the build exited {code}"
    )
    system = _system_route(needs, inputs)
    if against is not None:
        return torch_build_failure(
            name, version, sdist, why, own_lines(log), against, bool(NEEDS_GPU_COMPILER.search(log)), code == -1, system
        )
    release = (
        listed_wheel_route(name, version, inputs.target)
        if inputs.target is not None
        else f"Use a release of {name} that publishes a wheel for the Target (pin it in {inputs.requirements}, then `bundler lock`)"
    )
    return BuildError(
        f"{name}=={version} has no wheel for the Target and its source archive {sdist.name} did not build: {why}.\n  {tail}",
        hint=system + f"{release}; or "
        f"build the wheel where it builds (`pip wheel --no-deps {name}=={version} -w wheels/`) and list `./wheels/<the file>.whl` in "
        f"{inputs.requirements}: bundler then locks and installs that file.",
        value=name,
    )


def _system_route(needs: list[tuple[str, str]], inputs: Inputs) -> str:
    """The one bundle.toml line that gives the builder (and the image) what the log asks for; "" when nothing is known."""
    missing = [package for _, package in needs if package not in inputs.system_packages]
    if not missing:
        return ""
    line = bundle_line(list(inputs.system_packages) + missing)
    return (
        f"In bundle.toml's [build], {line}: bundler installs them in the builder, so the build finds them, and in the image "
        "(a -dev package brings the library it needs at run time); then `bundler build`. Otherwise: "
    )


# torch's headers refusing an older C++ standard (torch 2.1+ needs C++17): "#error C++17 or later compatible compiler is required"
_NEWER_STANDARD = re.compile(r"#error C\+\+(\d+) or later compatible compiler is required")


def torch_build_failure(
    name: str,
    version: str,
    sdist: Path,
    why: str,
    tail: str,
    against: AgainstTorch,
    needs_gpu_compiler: bool,
    timed_out: bool = False,
    system: str = "",
) -> BuildError:
    """A failed build against torch: the package's own last lines and the routes (wheels, the devel base, a system package)."""
    plan = against.plan
    routes = []
    if timed_out:
        routes.append(
            f"give it more time (BUNDLER_WHEEL_BUILD_TIMEOUT, now {BUILD_TIMEOUT_S} s; the progress lines said how far it came) "
            "or build on a machine with more cores (MAX_JOBS follows them)"
        )
    standard = _NEWER_STANDARD.search(tail)
    if standard:  # before any CUDA: its host compiler stopped at torch's own headers
        why = (
            f"{plan.torch}'s headers need C++{standard.group(1)}, and its build compiles with an older standard (its own "
            "-std= flag): a release made for an older torch"
        )
        routes.append(f"pin a later release of {name}, one that compiles with C++{standard.group(1)}")
    elif needs_gpu_compiler and not plan.devel:
        why = "it compiles CUDA/ROCm code, which needs nvcc or hipcc; a CPU Target's base has neither"
        routes.append(f"lock for a CUDA or ROCm Target, whose build runs on its devel base ({name} may not build for a CPU Target at all)")
    elif needs_gpu_compiler:
        routes.append(f"check that the devel base {plan.base} has the compiler and headers its log asks for")
    routes.append(f"pin a release of {name} that publishes a wheel for {plan.torch}")
    if not system:
        routes.append("when its log asks for a header, add the Debian package that provides it to bundle.toml's [build] system_packages")
    joined = "; or ".join(routes)
    return BuildError(
        f"{name}=={version} did not build from {sdist.name} against {plan.torch} on {plan.base}: {why}. Its last lines:\n  {tail}",
        hint=system + joined[0].upper() + joined[1:] + ". Or build the wheel where it builds (`pip wheel "
        f"--no-build-isolation --no-deps {name}=={version} -w wheels/` with the Target's torch installed) and list "
        "`./wheels/<the file>.whl` in requirements.in.",
        value=name,
    )
