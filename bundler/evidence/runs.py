"""The runs of a project: export a run's evidence, summarize all runs, record decisions.

Checks of a single run live in verify.py, and its verdict (accepted, stopped, incomplete,
failed) is the one `runs summary` and `plan` show. A decision is appended to
runs/<id>/decisions.jsonl (one JSON line each, never rewritten): the last line is the
current decision, the earlier ones its history. plan.toml is never touched. A run ID
names a folder of runs/ and nothing else; the runs folder lies inside the project.
"""

from __future__ import annotations

import errno
import getpass
import json
import math
import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from bundler.contracts.secrets import looks_secret
from bundler.errors import ExistsError, FindingsError, ProjectFileError, UsageError
from bundler.evidence.checksums import CHECKSUMS, checksum_bytes, compare_checksums, file_hashes
from bundler.evidence.entryrecord import KIND as ENTRY_KIND
from bundler.evidence.entryrecord import listed
from bundler.evidence.runsfolder import project_of, run_folder, runs_dir
from bundler.evidence.verify import Verification, verify_run
from bundler.fsutil import atomic_write_bytes, naming, parse_json, read_json, staged_directory, umask

DECISIONS = ("launch", "fix-env", "revise-config")
DECISIONS_FILE = "decisions.jsonl"


# -- export ---------------------------------------------------------------------------
@dataclass
class Export:
    source: Path
    dest: Path
    files: int
    checksums: Path
    verification: Verification
    links: dict[str, str] = field(default_factory=dict)
    withheld: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "source": str(self.source),
            "dest": str(self.dest),
            "files": self.files,
            "checksums": str(self.checksums),
            "copy_matches_checksums": True,
            "accepted": self.verification.accepted,
            "verify": self.verification.as_dict(),
            "pull_commands": pull_commands(self.source.name, self.dest),
            "links_kept_as_links": self.links,
            "withheld_as_secrets": self.withheld,
        }


def export_run(
    run_dir: Path,
    dest: Path,
    *,
    reload: bool = True,
    python: str | None = None,
) -> Export:
    """SHA-256 of every file into RUN_DIR/SHA256SUMS, copy to DEST, check the copy, verify it.

    A link inside the run is copied as the same link, never as what it points to; a file that
    contracts/secrets.py calls a secret is withheld. Both are listed on the Export."""
    run_dir, dest = Path(run_dir), Path(dest)
    if not run_dir.is_dir():
        raise UsageError(f"run folder {run_dir} does not exist.", hint="Pass a folder under runs/, e.g. runs/pilot-001.", path=run_dir)
    if run_dir.is_symlink():
        raise ProjectFileError(
            f"run folder {run_dir} is a link (to {run_dir.resolve()}): an export copies a run folder itself, never through a link.",
            hint="Export the folder the link points to, or move that folder into runs/ in place of the link.",
            path=run_dir,
        )
    if dest.exists() or dest.is_symlink():
        raise ExistsError(
            f"export destination {dest} already exists; an export never overwrites.",
            hint="Choose a new folder, e.g. add the date to its name.",
            path=dest,
        )
    if dest.resolve().is_relative_to(run_dir.resolve()):
        raise UsageError(
            f"export destination {dest} is inside the run folder {run_dir}.", hint="Export to a folder outside the run.", path=dest
        )
    plan = _export_plan(run_dir)
    hashes = file_hashes(run_dir)
    for name in plan.withheld:
        hashes.pop(name, None)
    sums = checksum_bytes(hashes)
    checksums = run_dir / CHECKSUMS
    with staged_directory(dest) as staging:  # DEST appears whole or not at all, on a signal too
        _copy(run_dir, staging, plan)
        staging.chmod(0o777 & ~umask())  # the copy is ours to complete, even of a read-only run folder
        atomic_write_bytes(staging / CHECKSUMS, sums)
        problems, unlisted = compare_checksums(staging)
        if problems or unlisted:
            raise FindingsError(
                f"the copy in {dest} does not match {checksums}: {'; '.join(problems + [f'{n} not listed' for n in unlisted])}.",
                hint="Nothing was kept at the destination; check the disk, then export again.",
                path=dest,
            )
        atomic_write_bytes(checksums, sums)  # last: a failure before leaves the run folder as it was
    verification = verify_run(dest, reload=reload, python=python, project=project_of(run_dir))
    return Export(run_dir, dest, len(hashes), checksums, verification, plan.links, plan.withheld)


@dataclass
class ExportPlan:
    folders: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)  # name -> the link's own text
    withheld: list[str] = field(default_factory=list)


def _export_plan(run_dir: Path) -> ExportPlan:
    """What the copy holds: every folder and file, links as links (never followed), secrets withheld."""
    plan = ExportPlan()
    for current, folders, files in os.walk(run_dir):
        here = Path(current)
        for name in sorted(folders + files):
            path = here / name
            relative = path.relative_to(run_dir).as_posix()
            if relative == CHECKSUMS:
                continue
            if looks_secret(relative, path if path.is_file() and not path.is_symlink() else None):
                plan.withheld += _inside(run_dir, path) if path.is_dir() and not path.is_symlink() else [relative]
            elif path.is_symlink():
                _refuse_a_loop(run_dir, path)
                plan.links[relative] = os.readlink(path)
            elif path.is_dir():
                plan.folders.append(relative)
            else:
                plan.files.append(relative)
        folders[:] = sorted(name for name in folders if (here / name).relative_to(run_dir).as_posix() in plan.folders)
    return plan


def _inside(run_dir: Path, folder: Path) -> list[str]:
    """Every file and link under a secret folder (``.ssh/``), each withheld and listed by name."""
    found = []
    for current, folders, files in os.walk(folder):
        found += [(Path(current) / name).relative_to(run_dir).as_posix() for name in files]
        found += [(Path(current) / name).relative_to(run_dir).as_posix() for name in folders if (Path(current) / name).is_symlink()]
    return sorted(found) or [folder.relative_to(run_dir).as_posix()]


def _refuse_a_loop(run_dir: Path, link: Path) -> None:
    """A link that leads back to itself is no evidence of anything: refused, named (a dangling link
    or one out of the run is kept as the link it is)."""
    try:
        os.stat(link)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ProjectFileError(
                f"{link} is a link loop ({os.readlink(link)!r} leads back to itself): the run {run_dir} cannot be exported as it is.",
                hint="Remove the link or point it at a file of the run, then export again; nothing was written.",
                path=link,
            ) from None


def _copy(run_dir: Path, staging: Path, plan: ExportPlan) -> None:
    for name in plan.folders:
        (staging / name).mkdir()
    for name in plan.files:
        shutil.copy2(run_dir / name, staging / name, follow_symlinks=False)
    for name, target in plan.links.items():
        os.symlink(target, staging / name)
    for name in reversed(plan.folders):
        shutil.copystat(run_dir / name, staging / name)


def pull_commands(run_id: str, dest: Path) -> dict:
    """How to get a run from a rented box when bundler runs on the workstation (shell-quoted;
    USER, BOX and PROJECT are the user's to fill in)."""
    remote = shlex.quote(f"PROJECT/runs/{run_id}")
    local = shlex.quote(str(dest) if not str(dest).startswith("-") else f"./{dest}")  # never read as an option
    return {
        "checksums_on_box": f"cd {remote} && find . -type f ! -name {CHECKSUMS} -print0 | sort -z | xargs -0 sha256sum > {CHECKSUMS}",
        "rsync": f"rsync -av --partial USER@BOX:{shlex.quote(f'PROJECT/runs/{run_id}/')} {shlex.quote(shlex.split(local)[0] + '/')}",
        "scp": f"scp -rp USER@BOX:{remote} {local}",
        "check_copy": f"(cd {local} && sha256sum -c --quiet {CHECKSUMS}) && bundler runs verify {local}",
    }


# -- the runs of a project --------------------------------------------------------------
@dataclass
class RunRow:
    run_id: str
    config_sha256: str
    status: str
    accepted: int | None
    rejected: int | None
    seconds: float | None
    input_sha256: str | None
    decision: dict | None
    reasons: list[str]

    def as_dict(self) -> dict:
        return self.__dict__.copy()


MAX_RUN_SECONDS = 10 * 366 * 86400  # a run's recorded duration past ten years is no measurement


def duration(value: object) -> float | None:
    """A run's recorded duration in seconds, or None when it is no duration (NaN, negative, text, 1e30)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and 0 <= value <= MAX_RUN_SECONDS else None


def verdict(run_dir: Path, *, reload: bool = True, python: str | None = None) -> tuple[str, list[str]]:
    """accepted / stopped / incomplete / failed, with the reasons: `runs verify`'s own verdict."""
    verification = verify_run(run_dir, reload=reload, python=python, reload_failed=False)
    status = verification.status
    if status == "incomplete":
        return status, [f"no summary.json: interrupted (resume with --resume {shlex.quote(run_dir.name)})"]
    if status == "stopped":
        stopped = _read_json(run_dir / "summary.json").get("stopped") or {}
        return status, [f"stop rule {stopped.get('rule')}: {stopped.get('reason')}"]
    return status, [f"{check.name}: {check.detail}" for check in verification.problems]


def collect_runs(project: Path, *, reload: bool = True, python: str | None = None) -> list[RunRow]:
    folder = runs_dir(project)
    if not folder.is_dir():
        return []
    rows = []
    # a link (runs/latest -> first) is another name of a run, never a second run
    for run_dir in sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and (p / "manifest.json").is_file()):
        manifest, summary = _read_json(run_dir / "manifest.json"), _read_json(run_dir / "summary.json")
        if manifest.get("kind") == ENTRY_KIND:
            summary = {"seconds": _duration(manifest)}
        status, reasons = verdict(run_dir, reload=reload, python=python)
        decisions = read_decisions(run_dir)
        rows.append(
            RunRow(
                run_id=run_dir.name,
                config_sha256=str(manifest.get("config_sha256", "")),
                status=status,
                accepted=summary.get("accepted"),
                rejected=summary.get("rejected"),
                seconds=duration(summary.get("seconds")),
                input_sha256=manifest.get("input_manifest_sha256"),
                decision=decisions[-1] if decisions else None,
                reasons=reasons,
            )
        )
    return rows


# -- decisions ----------------------------------------------------------------------------
def record_decision(project: Path, run_id: str, decision: str, why: str) -> dict:
    if decision not in DECISIONS:
        raise UsageError(f"unknown decision {decision!r}.", hint=f"Use one of: {', '.join(DECISIONS)}.", value=decision)
    if not why or not why.strip():
        raise UsageError("a decision needs its rationale.", hint='Add --why "what you saw and why this decision".')
    run_dir = run_folder(project, run_id)
    if not (run_dir / "manifest.json").is_file():
        raise UsageError(
            f"no run {run_id} in {run_dir.parent}.", hint="`bundler runs summary` lists the runs of the project.", value=run_id
        )
    status, reasons = verdict(run_dir)
    from datetime import datetime, timezone

    entry = {
        "run_id": run_id,
        "decision": decision,
        "why": why.strip(),
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "by": _user(),
        "run_status": status,
        "run_reasons": reasons,
    }
    line = (json.dumps(entry, separators=(",", ":")) + "\n").encode("utf-8")
    with naming(run_dir / DECISIONS_FILE):
        fd = os.open(run_dir / DECISIONS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)  # the umask decides who reads it
        try:
            os.write(fd, line)  # one whole line per write: the history is only ever appended
            os.fsync(fd)
        finally:
            os.close(fd)
    return entry


def _duration(manifest: dict) -> float | None:
    """Seconds from the first attempt's start to the last one's end (a run of `bundler run`)."""
    from datetime import datetime

    attempts = listed(manifest.get("attempts"))
    try:
        start, end = datetime.fromisoformat(attempts[0]["started"]), datetime.fromisoformat(attempts[-1]["finished"])
    except (IndexError, KeyError, TypeError, ValueError):
        return None
    return (end - start).total_seconds()


def read_decisions(run_dir: Path) -> list[dict]:
    path = run_dir / DECISIONS_FILE
    if not path.is_file():
        return []
    decisions = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            decision = parse_json(line)
        except ValueError:
            continue
        if isinstance(decision, dict):  # a line that is JSON but no decision is skipped like a torn one
            decisions.append(decision)
    return decisions


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _read_json(path: Path) -> dict:
    """The object in ``path``; {} when it is missing or unreadable (the run's status then says so)."""
    try:
        data = read_json(path, hint="")
    except ProjectFileError:
        return {}
    return data if isinstance(data, dict) else {}
