"""The checks of a run made by `bundler run` (kind ``entry``): read-only, and nothing from the
run folder is ever executed.

A run is accepted when its manifest is whole and sealed, the entry finished with exit status
0, every recorded output, log and parameter copy exists with its recorded size and SHA-256
(a link as the same link), nothing was added to ``out/`` after the run, and — when the run
lies in its project — the project's lock and code are still what the run recorded.
"""

from __future__ import annotations

from pathlib import Path

from bundler.evidence import entryrecord as record
from bundler.evidence import runlock
from bundler.evidence.outcome import Check, Verification, named, verdict
from bundler.evidence.runsfolder import confined_runs_dir
from bundler.fsutil import parse_json, sha256_file


def read_entry_manifest(run_dir: Path) -> dict | None:
    """The manifest of a `bundler run` run, or None (another kind of run, or none)."""
    try:
        manifest = parse_json((run_dir / record.MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("kind") == record.KIND else None


def ended(run_dir: Path, manifest: dict) -> str:
    status = manifest.get("status")
    if status in ("running", "starting"):
        return "running" if runlock.is_held(run_dir) else "killed"
    if status == "killed":
        return "killed"
    return "complete" if status == "finished" else "failed"


def entry_verification(run_dir: Path, manifest: dict, project: Path | None) -> Verification:
    result = Verification(run_dir, ended=ended(run_dir, manifest))
    result.checks += [
        check_seal(manifest),
        check_exit(run_dir, manifest),
        check_outputs(run_dir, manifest),
        check_recorded_files(run_dir, manifest),
        check_project(manifest, project),
    ]
    return result


def check_seal(manifest: dict) -> Check:
    problems = []
    for key, kind in (("run_id", str), ("command", dict), ("attempts", list), ("code", dict), ("lock", dict)):
        if not isinstance(manifest.get(key), kind):
            problems.append(f"manifest.json lacks {key} ({kind.__name__})")
    seal = manifest.get("seal")
    if not isinstance(seal, str):
        problems.append("manifest.json has no seal")
    elif seal != record.seal_of(manifest):
        problems.append("manifest.json was edited after the run: its seal does not match its content")
    return verdict("manifest", problems, "complete, and its seal matches its content")


def check_exit(run_dir: Path, manifest: dict) -> Check:
    state = ended(run_dir, manifest)
    if state == "running":
        holder = runlock.read_holder(run_dir)
        return Check("run_status", False, f"still running ({holder.describe() if holder else 'held'}): not finished yet")
    if state == "killed":
        last = runlock.read_holder(run_dir)
        who = str(manifest.get("killed_holder") or (last.describe() if last else ""))
        return Check("run_status", False, f"killed: its process{' (' + who + ')' if who else ''} died before recording the end")
    code, sig = manifest.get("exit_code"), manifest.get("signal")
    if sig:
        return Check("run_status", False, f"the entry was ended by {sig}")
    if type(code) is not int:
        return Check("run_status", False, f"exit status {code!r} is not a whole number")
    if code != 0:
        return Check("run_status", False, f"the entry exited with status {code}")
    return Check("run_status", True, "finished, exit status 0")


def check_outputs(run_dir: Path, manifest: dict) -> Check:
    outputs = manifest.get("outputs")
    if not isinstance(outputs, list):
        return Check("outputs", False, "manifest.json records no outputs list")
    out = run_dir / record.OUT_DIR
    problems = _compare_entries(out, outputs, prefix=f"{record.OUT_DIR}/")
    recorded = {entry.get("path") for entry in outputs if isinstance(entry, dict)}
    added = (
        [f"{record.OUT_DIR}/{e['path']}" for e in record.tree_entries(out, hashed=False) if e["path"] not in recorded]
        if out.is_dir()
        else []
    )
    problems += named("added after the run", added)
    return verdict("outputs", problems, f"all {len(outputs)} outputs present with their recorded size and SHA-256")


def check_recorded_files(run_dir: Path, manifest: dict) -> Check:
    problems = []
    logs = record.listed(manifest.get("logs"))
    problems += _compare_entries(run_dir, [e for e in logs if isinstance(e, dict) and e.get("sha256")], prefix="")
    params = record.listed(manifest.get("params"))
    copies = [{**e, "path": e.get("copy")} for e in params if isinstance(e, dict)]
    problems += _compare_entries(run_dir, copies, prefix="")
    return verdict("recorded_files", problems, f"{len(logs)} logs and {len(params)} parameter copies match their SHA-256")


def check_project(manifest: dict, project: Path | None) -> Check:
    if project is None:
        return Check("project", True, "outside its project (an exported copy): the lock and code were not compared")
    problems = project_differences(manifest, project, with_inputs=False)
    return verdict("project", problems, "the project's lock and code are those the run recorded")


def project_differences(manifest: dict, root: Path, *, with_inputs: bool = True) -> list[str]:
    """What in the project differs from the run's record: lock, code, and (for a resume) parameters and inputs."""
    problems = []
    lock = record.table(manifest.get("lock"))
    name = lock.get("path")
    if isinstance(name, str) and record.inside(root, name):
        now = record.lock_state(root, name)
        if now["sha256"] != lock.get("sha256"):
            before, after = str(lock.get("sha256"))[:12], str(now["sha256"])[:12]
            problems.append(f"the lock {name} differs from the run's (SHA-256 {before}… recorded, {after}… now)")
    else:
        problems.append(f"the manifest names no lock file inside the project ({name!r})")
    problems += record.code_differences(manifest.get("code"), record.code_state(root, confined_runs_dir(root)), root)
    if with_inputs:
        for key in ("params", "inputs"):
            entries = record.listed(manifest.get(key))
            problems += _compare_entries(root, [e for e in entries if isinstance(e, dict)], prefix="")
    return problems


def _compare_entries(folder: Path, entries: list, *, prefix: str) -> list[str]:
    problems = []
    for entry in entries:
        relative = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(relative, str) or not record.inside(folder, relative) and not (folder / relative).is_symlink():
            problems.append(f"{prefix}{relative!r} is not a path inside the run")
            continue
        path, shown = folder / relative, f"{prefix}{relative}"
        if "link" in entry:
            if not path.is_symlink() or str(Path(path).readlink()) != entry["link"]:
                problems.append(f"{shown} is no longer the link to {entry['link']!r} the run recorded")
        elif path.is_symlink() or not path.exists():
            problems.append(f"{shown} is missing" if not path.is_symlink() else f"{shown} is now a link")
        elif path.is_dir():
            if record.path_entry(folder, relative).get("sha256") != entry.get("sha256"):
                problems.append(f"{shown} (a folder) differs from its recorded SHA-256")
        elif type(entry.get("bytes")) is not int or path.stat().st_size != entry["bytes"] or sha256_file(path) != entry.get("sha256"):
            problems.append(f"{shown} differs from its recorded size and SHA-256")
    return problems
