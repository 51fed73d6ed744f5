"""`bundler diagnose`: run the stand-alone diagnostics/ folder here or inside a built image.

The folder itself (diagnostics/run.py) does the checking; this module only chooses where it
runs, gives a container the device flags of its backend, and keeps the JSON report in the
project as ``runs/diagnostics-<UTC timestamp>.json``. The exit code is the report's: 0, or
10 + the number of the first failing stage (bundler.errors.DiagnosticsFailed).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bundler.errors import DiagnosticsFailed, ExternalError, UsageError, from_os_error
from bundler.fsutil import atomic_write_bytes, atomic_write_json
from bundler.image import layout
from bundler.resources import diagnostics_folder
from bundler.target.bundle import Bundle

CONTAINER_TIMEOUT_S = 900
IMAGE_REPORT_HTML = layout.DIAGNOSTICS_REPORT.replace(".json", ".html")  # where run.py writes --report inside the image

Echo = Callable[[str], None]


@dataclass
class DiagnoseResult:
    mode: str  # "local" | "image"
    report: dict
    report_path: Path
    exit_code: int
    notes: list = field(default_factory=list)
    report_html: Path | None = None

    def failure(self) -> DiagnosticsFailed | None:
        if self.exit_code == 0:
            return None
        stage = next((s for s in self.report.get("stages", []) if s.get("status") == "fail"), None)
        if stage is None:
            return DiagnosticsFailed(
                f"diagnostics exited {self.exit_code}; report: {self.report_path}.",
                stage="unknown",
                exit_code=self.exit_code,
                path=self.report_path,
            )
        reason = next((m.split(": ", 1)[1] for m in stage.get("messages", []) if m.startswith("fail: ")), "")
        return DiagnosticsFailed(
            f"diagnostics stage {stage['number']} '{stage['name']}' failed: {reason} (report: {self.report_path}).",
            stage=stage["name"],
            exit_code=self.exit_code,
            hint=stage.get("hint"),
            path=self.report_path,
        )


def report_destination(project: Path, now: datetime.datetime | None = None) -> Path:
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    runs = Path(project) / "runs"
    path, counter = runs / f"diagnostics-{stamp}.json", 1
    while path.exists():
        path, counter = runs / f"diagnostics-{stamp}-{counter}.json", counter + 1
    return path


def check_report_destination(path: Path) -> Path:
    """--report FILE.html: a file in a writable folder, checked before minutes are spent in the stages."""
    path = Path(path).absolute()
    if path.is_dir():
        raise UsageError(f"--report {path} is a folder, not a file.", hint="Name the HTML file to write, e.g. runs/diagnostics.html.")
    try:
        if not path.parent.is_dir():
            raise NotADirectoryError(20, "No such folder", str(path.parent))
        fd, scratch = tempfile.mkstemp(prefix=".bundler-diagnose-", dir=path.parent)
        os.close(fd)
        os.unlink(scratch)
    except OSError as error:
        raise from_os_error(error, f"--report {path}") from None
    return path


def run_local(
    bundle: Bundle, *, keep_going: bool = False, echo: Echo = sys.stderr.write, python: str | None = None, report_html: Path | None = None
) -> DiagnoseResult:
    """Run the folder with this interpreter (or ``python``), streaming its table through ``echo``."""
    run_py = diagnostics_folder(bundle.root) / "run.py"
    with tempfile.TemporaryDirectory(prefix="bundler-diagnose-") as work:
        report_file = Path(work) / "report.json"
        command = [python or sys.executable, str(run_py), "--project", str(bundle.root), "--json", str(report_file)]
        if keep_going:
            command.append("--keep-going")
        if report_html:
            command += ["--report", str(report_html)]
        try:
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        except OSError as error:
            raise ExternalError(
                f"cannot start {command[0]}: {error.strerror}.", hint="Pass an interpreter that exists.", path=command[0]
            ) from None
        refused = []  # run.py's "Error: … Hint: …" lines: relayed as bundler's one paragraph on bad usage
        for line in process.stdout:
            (refused.append if line.startswith("Error: ") else echo)(line)
        code = process.wait()
        if code == 2 and refused:
            message, _, hint = refused[-1].strip()[len("Error: ") :].partition(" Hint: ")
            raise UsageError(message, hint=hint or None)
        for line in refused:
            echo(line)
        report = _read_report(report_file.read_bytes() if report_file.is_file() else None, code, str(run_py))
    result = _keep(bundle, "local", report, code)
    result.report_html = report_html
    return result


def run_image(
    bundle: Bundle,
    tag: str,
    *,
    keep_going: bool = False,
    echo: Echo = sys.stderr.write,
    report_html: Path | None = None,
    engine_name: str | None = None,
) -> DiagnoseResult:
    """Run the image's own diagnostics folder in a container and copy its report back."""
    from bundler import engine

    client = engine.connect(engine_name, CONTAINER_TIMEOUT_S, why=f"the diagnostics run inside the image {tag}")
    image = client.image(tag)
    if image is None:
        raise UsageError(
            f"image {tag!r} is not on this {client.label} engine.",
            hint="Build it with `bundler build --tag TAG`, or pull it first.",
            value=tag,
        )
    python = image.env.get("BUNDLE_PYTHON", layout.PYTHON)
    diagnostics = image.env.get("BUNDLE_DIAGNOSTICS", layout.DIAGNOSTICS)
    backend = bundle.target.backend
    devices, notes, _ = engine.gpu_run_options(backend)
    for note in notes:
        echo(f"note: {note}\n")
    command = [python, f"{diagnostics}/run.py", "--backend", backend, "--json", layout.DIAGNOSTICS_REPORT]
    if keep_going:
        command.append("--keep-going")
    if report_html:
        command += ["--report", IMAGE_REPORT_HTML]
    wanted = [layout.DIAGNOSTICS_REPORT] + ([IMAGE_REPORT_HTML] if report_html else [])
    spec = engine.RunSpec(tag, command, network_mode="bridge", devices=devices)
    try:
        ran = client.run(spec, timeout=CONTAINER_TIMEOUT_S, follow=echo, copy_out=wanted)
    except engine.StartFailed as error:
        raise ExternalError(
            f"the container of {tag} could not run {python} {diagnostics}/run.py: {error.explanation}.",
            hint="Rebuild the image with `bundler build` (it places the interpreter and the diagnostics folder there).",
            value=tag,
        ) from None
    code = ran.exit_code
    report = _read_report(ran.files.get(layout.DIAGNOSTICS_REPORT), code, f"{tag}:{diagnostics}/run.py")
    page = ran.files.get(IMAGE_REPORT_HTML) if report_html else None
    result = _keep(bundle, "image", report, code)
    result.notes = notes
    if page is not None and report_html is not None:
        atomic_write_bytes(report_html, page)
        result.report_html = report_html
    return result


def _read_report(data: bytes | None, code: int, where: str) -> dict:
    if data is None:
        raise ExternalError(
            f"the diagnostics ({where}) exited {code} without writing a report.",
            hint="Run `python diagnostics/run.py` by hand to see the error; exit 2 means bad usage, 127 a missing interpreter.",
            value=code,
        )
    try:
        return json.loads(data)
    except ValueError:
        raise ExternalError(f"the diagnostics report from {where} is not JSON.", hint="Check the diagnostics folder is intact.") from None


def _keep(bundle: Bundle, mode: str, report: dict, code: int) -> DiagnoseResult:
    code = int(report.get("exit_code", code))
    path = report_destination(bundle.root)
    atomic_write_json(path, report)
    return DiagnoseResult(mode=mode, report=report, report_path=path, exit_code=code)
