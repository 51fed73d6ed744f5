"""`bundler run`: any entry command run into a new `runs/<id>/`, with its evidence.

The run folder is made only once everything is checked (the command exists, the inputs
are there), held by this process for the whole run (`runlock.py`), and recorded before
the entry starts, so a kill leaves a manifest that says "running" with nobody holding
the run: the next `bundler run` marks it killed, `runs summary` shows it killed. The
entry runs in a process group of its own; the signals bundler can catch are forwarded to
that group, and bundler exits with the entry's status (128 + N for signal N).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from bundler.contracts.runid import is_run_id
from bundler.contracts.secrets import looks_secret
from bundler.errors import ExistsError, ProjectFileError, UsageError
from bundler.evidence import entryrecord as record
from bundler.evidence import runlock
from bundler.evidence.runsfolder import confined_runs_dir
from bundler.fsutil import remove_tree

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
RESUMABLE = ("killed", "failed")


@dataclass(frozen=True)
class EntryProject:
    """What a run needs of the project (read from bundle.toml by the caller)."""

    root: Path
    entry: str
    lock: str
    target: dict
    inputs: dict[str, str] = field(default_factory=dict)


@dataclass
class EntryRun:
    run_dir: Path
    manifest: dict
    exit_code: int
    killed: list[str]

    def as_dict(self) -> dict:
        return {
            "run_id": self.run_dir.name,
            "run_dir": str(self.run_dir),
            "exit_code": self.exit_code,
            "signal": self.manifest.get("signal"),
            "seal": self.manifest.get("seal"),
            "outputs": len(self.manifest.get("outputs", [])),
            "marked_killed": self.killed,
        }


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)


def run_entry(
    project: EntryProject,
    *,
    run_id: str | None = None,
    resume: str | None = None,
    command: list[str] | None = None,
    echo_stdout: BinaryIO | None = None,
) -> EntryRun:
    """Run the entry (or ``command``) into runs/<id>/ and record it; refused before anything is written."""
    root = project.root
    runs = confined_runs_dir(root)
    if resume is not None:
        run_dir, manifest = _refuse_unresumable(project, runs, resume, command)
    else:
        argv = _command(project, command)
        run_dir = runs / _check_id(run_id or new_run_id())
        if run_dir.exists() or run_dir.is_symlink():
            raise ExistsError(
                f"run {run_dir.name} already exists in {runs}; a run's evidence is never overwritten.",
                hint="Leave --run-id out for a fresh ID, or continue an interrupted run with --resume ID.",
                path=run_dir,
            )
        manifest = _new_manifest(project, run_dir.name, argv, command is None)
    killed = mark_killed(runs, skip=run_dir.name)
    runs.mkdir(parents=True, exist_ok=True)
    if resume is None:
        run_dir.mkdir()
        try:
            (run_dir / record.OUT_DIR).mkdir()
            _copy_params(project.root, run_dir, manifest["params"])
        except BaseException:  # a half-made run folder never stays behind
            remove_tree(run_dir)
            raise
    with runlock.hold(run_dir, run_dir.name):
        for earlier in manifest["attempts"]:
            earlier.setdefault("finished", "killed (the process never recorded its end)")
        attempt = {"started": utc_now(), "pid": os.getpid()}
        manifest["attempts"].append(attempt)
        manifest["status"] = "running"
        record.write_manifest(run_dir, manifest)
        code, sig = _execute(manifest, run_dir, root, resumed=resume is not None, echo_stdout=echo_stdout)
        attempt.update(finished=utc_now(), exit_code=code, signal=sig)
        manifest.update(
            status="finished",
            finished=attempt["finished"],
            exit_code=code,
            signal=sig,
            outputs=record.tree_entries(run_dir / record.OUT_DIR),
            logs=[_log_entry(run_dir, name, manifest) for name in record.LOGS],
        )
        record.write_manifest(run_dir, manifest)
    exit_code = code if code is not None else 128 + int(signal.Signals[sig or "SIGKILL"])
    return EntryRun(run_dir, manifest, exit_code, killed)


def mark_killed(runs: Path, *, skip: str = "") -> list[str]:
    """Every entry run that says "running" while nobody holds it is marked killed (its manifest resealed)."""
    from bundler.evidence.entrycheck import read_entry_manifest

    marked: list[str] = []
    if not runs.is_dir():
        return marked
    for run_dir in sorted(p for p in runs.iterdir() if p.is_dir() and not p.is_symlink() and p.name != skip):
        manifest = read_entry_manifest(run_dir)
        if manifest is None or manifest.get("status") != "running" or runlock.is_held(run_dir):
            continue
        holder = runlock.read_holder(run_dir)
        manifest.update(status="killed", killed_detected=utc_now(), killed_holder=holder.describe() if holder else None)
        record.write_manifest(run_dir, manifest)
        marked.append(run_dir.name)
    return marked


# -- before the run ------------------------------------------------------------------------
def _check_id(run_id: str) -> str:
    if not is_run_id(run_id):
        raise UsageError(
            f"{run_id!r} is not a run ID.",
            hint="Use letters, digits, '.', '_' and '-' (at most 80), starting with a letter or digit.",
            value=run_id,
        )
    return run_id


def _command(project: EntryProject, command: list[str] | None) -> list[str]:
    if command:
        found = shutil.which(command[0], path=os.environ.get("PATH")) if "/" not in command[0] else command[0]
        if not found or not (project.root / found).exists():
            raise UsageError(
                f"command {command[0]!r} not found.", hint="Give a program on PATH or a path relative to the project.", value=command[0]
            )
        return list(command)
    if not project.entry.strip():
        raise ProjectFileError(
            f"{project.root / 'bundle.toml'}: [project] entry is empty: there is no command to run.",
            hint='Set entry = "python train.py …" in [project], or give the command after `--`: bundler run -- python train.py.',
            path=project.root / "bundle.toml",
        )
    return ["/bin/sh", "-c", project.entry]


def _new_manifest(project: EntryProject, run_id: str, argv: list[str], is_entry: bool) -> dict:
    root = project.root
    return {
        "kind": record.KIND,
        "run_id": run_id,
        "status": "starting",
        "command": {"argv": argv, "from": "[project] entry" if is_entry else "command line"},
        "started": utc_now(),
        "code": record.code_state(root, confined_runs_dir(root)),
        "lock": record.lock_state(root, project.lock),
        "target": project.target,
        "image": _image(),
        "params": [record.path_entry(root, name) | {"copy": f"{record.PARAMS_DIR}/{name}"} for name in _param_files(root, argv)],
        "inputs": [{"name": name} | record.path_entry(root, path) for name, path in _inputs(project).items()],
        "attempts": [],
    }


def _image() -> dict:
    """What the bundle's image shows from inside (its ENV); the digest only when the launcher passed it."""
    inside = bool(os.environ.get("BUNDLE_ROOT") and os.environ.get("BUNDLE_ENTRY") is not None)
    return {"inside_bundle_image": inside, "digest": os.environ.get("BUNDLE_IMAGE_DIGEST") or None}


def _inputs(project: EntryProject) -> dict[str, str]:
    for name, path in project.inputs.items():
        if not (project.root / path).exists():
            raise ProjectFileError(
                f"{project.root / 'bundle.toml'}: [inputs] {name} = {path!r} does not exist.",
                hint="Put the input in place (or correct the path) before the run: every named input is hashed into its evidence.",
                path=project.root / path,
                value=path,
            )
    return project.inputs


def _param_files(root: Path, argv: list[str]) -> list[str]:
    """The configuration files the command names (an argument, or the value of --opt=FILE) inside the project."""
    words = list(argv)
    if argv[:2] == ["/bin/sh", "-c"]:
        try:
            words = shlex.split(argv[2])
        except ValueError:
            words = argv[2].split()
    found = []
    for word in words:
        for candidate in (word, word.partition("=")[2]):
            name = os.path.normpath(candidate) if candidate else ""
            if (
                name.endswith(record.CONFIG_SUFFIXES)
                and record.inside(root, name)
                and (root / name).is_file()
                and not (root / name).is_symlink()
                and not looks_secret(name, root / name)
                and name not in found
            ):
                found.append(name)
    return found


def _copy_params(root: Path, run_dir: Path, params: list[dict]) -> None:
    for entry in params:
        target = run_dir / entry["copy"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / entry["path"], target)


def _refuse_unresumable(project: EntryProject, runs: Path, run_id: str, command: list[str] | None) -> tuple[Path, dict]:
    from bundler.evidence.entrycheck import project_differences, read_entry_manifest

    run_dir = runs / _check_id(run_id)
    manifest = read_entry_manifest(run_dir) if run_dir.is_dir() and not run_dir.is_symlink() else None
    if manifest is None:
        raise UsageError(
            f"no run {run_id} made by `bundler run` in {runs} to resume.",
            hint="`bundler runs summary` lists the runs; start a new one without --resume.",
            value=run_id,
        )
    if runlock.is_held(run_dir):
        holder = runlock.read_holder(run_dir)
        raise ExistsError(
            f"run {run_id} is held by another process ({holder.describe() if holder else 'unknown holder'}): it is still running.",
            hint="Wait for it to end (or stop it), then resume; a run folder is written by one process at a time.",
            path=run_dir,
        )
    status = "killed" if manifest.get("status") == "running" else manifest.get("status")
    if status == "finished" and manifest.get("exit_code") != 0:
        status = "failed"
    if status not in RESUMABLE:
        raise ExistsError(
            f"run {run_id} is {status}; only a killed or failed run is resumed.", hint="Start a new run (a new ID).", path=run_dir
        )
    recorded = manifest.get("command", {}).get("argv") if isinstance(manifest.get("command"), dict) else None
    if command and command != recorded:
        raise ExistsError(
            f"run {run_id} ran {shlex.join(map(str, recorded or []))}; a resume runs the same command.",
            hint="Leave the command out to resume, or start a new run for another command.",
            path=run_dir,
        )
    differences = project_differences(manifest, project.root)
    if differences:
        raise ExistsError(
            f"run {run_id} cannot be resumed: the project differs from what it recorded: {'; '.join(differences)}.",
            hint="Restore the code, lock, parameters and inputs the run started with, or start a new run (a new ID); nothing was changed.",
            path=run_dir,
        )
    return run_dir, manifest


# -- the run itself ----------------------------------------------------------------------
def _execute(manifest: dict, run_dir: Path, root: Path, *, resumed: bool, echo_stdout: BinaryIO | None) -> tuple[int | None, str | None]:
    env = {**os.environ, "BUNDLE_RUN_DIR": str((run_dir / record.OUT_DIR).resolve()), "BUNDLE_RUN_ID": run_dir.name}
    if resumed:
        env["BUNDLE_RESUME"] = "1"
    child = subprocess.Popen(
        manifest["command"]["argv"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    previous = {sig: signal.signal(sig, lambda number, _frame: _forward(child, number)) for sig in FORWARDED}
    try:
        counts = {name: _log_size(run_dir / name) for name in record.LOGS}
        streams = (
            (child.stdout, echo_stdout or sys.stdout.buffer, run_dir / "stdout.log"),
            (child.stderr, sys.stderr.buffer, run_dir / "stderr.log"),
        )
        tees = [threading.Thread(target=_tee, args=(*stream, counts), daemon=True) for stream in streams]
        for tee in tees:
            tee.start()
        for tee in tees:
            tee.join()
        returncode = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    manifest["dropped_log_bytes"] = {name: max(0, counts[name] - record.LOG_LIMIT) for name in record.LOGS}
    if returncode < 0:
        return None, signal.Signals(-returncode).name
    return returncode, None


def _die_with_parent() -> None:
    """In the child, before exec (Linux): killed when bundler dies, so a killed run is never a run
    still writing with nobody recording it."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _forward(child: subprocess.Popen, number: int) -> None:
    try:
        os.killpg(child.pid, number)
    except ProcessLookupError:
        pass


def _tee(source, terminal: BinaryIO, log: Path, counts: dict[str, int]) -> None:
    """Every chunk to the terminal; to the log while it is under LOG_LIMIT (the rest is counted)."""
    with open(log, "ab") as handle:
        while True:
            chunk = os.read(source.fileno(), 65536)
            if not chunk:
                break
            try:
                terminal.write(chunk)
                terminal.flush()
            except (OSError, ValueError):
                pass
            room = record.LOG_LIMIT - counts[log.name]
            if room > 0:
                handle.write(chunk[:room])
                handle.flush()
            counts[log.name] += len(chunk)


def _log_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _log_entry(run_dir: Path, name: str, manifest: dict) -> dict:
    path = run_dir / name
    entry = record.path_entry(run_dir, name) if path.is_file() else {"path": name, "bytes": 0, "sha256": None}
    return entry | {"dropped_bytes": manifest.get("dropped_log_bytes", {}).get(name, 0)}
