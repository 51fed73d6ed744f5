"""Command line of diagnostics/run.py: parse, find the bundle, run the stages, report."""

from __future__ import annotations

import datetime
import os
import platform
import sys
import time
import traceback

from bdiag import VERSION, html, report, summary, usage
from bdiag.checkup import Checkup, find_bundle, load_toml
from bdiag.contracts.bundleschema import BACKENDS
from bdiag.order import OrderError, read_order
from bdiag.probe import Probe
from bdiag.result import FAIL, StageResult
from bdiag.stages import ORDER


def parser() -> usage.Parser:
    parse = usage.Parser(
        prog="python diagnostics/run.py",
        description="Staged checks of this machine for a bundle: interpreter, packages, torch, device, compute, "
        "extensions, memory, io, checkpoint, collectives. Exit 0 when no stage failed, "
        "10 + the number of the first failing stage otherwise, 2 for bad usage.",
    )
    parse.add_argument(
        "--backend", choices=BACKENDS, help="expected backend (default: the bundle's [target] backend, else what torch finds)"
    )
    parse.add_argument("--json", metavar="FILE", help="write the JSON report to FILE (atomically)")
    parse.add_argument("--report", metavar="FILE.html", help="write the report people read to FILE.html: one self-contained page")
    parse.add_argument("--keep-going", action="store_true", help="run every stage even after a failure")
    parse.add_argument("--project", metavar="DIR", help="project folder holding bundle.toml (default: see README.md)")
    parse.add_argument("--results", metavar="DIR", help="results folder to test for space, speed and checkpoints (default: <project>/runs)")
    return parse


def main(argv=None, probe: Probe | None = None, stream=None) -> int:
    try:
        args = parser().parse_args(argv)
        if args.project:
            usage.check_project(args.project)
        usage.check_destinations({"--json": args.json, "--report": args.report})
    except usage.Usage as error:
        sys.stderr.write(error.line())
        return usage.EXIT
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0)
    probe = probe or Probe()
    checkup = build_checkup(args, probe)
    started = time.time()
    backend_line = (
        f"backend {checkup.backend} (from {checkup.backend_source})" if checkup.backend else "backend not given: taken from the torch build"
    )
    report.header(backend_line, stream)
    probe.prestart()
    try:
        results = run_stages(checkup, lambda result: report.row(result, stream))
    finally:
        probe.close()
    code = report.exit_code(results)
    report.footer(results, code, stream)
    document = build_report(checkup, results, code, started)
    (stream or sys.stdout).write("\n" + summary.markdown(document))
    for flag, path, write in (("--json", args.json, report.write_json), ("--report", args.report, write_html)):
        if not path:
            continue
        try:
            write(path, document)
        except OSError as error:
            failed = usage.Usage(f"{flag} {path} cannot be written: {error.strerror or error}.", "Free space or pick another file.")
            sys.stderr.write(failed.line())
            code = code or usage.EXIT
    return code


def write_html(path: str, document: dict) -> None:
    report.write_text(path, html.render(document), ".html")


def build_checkup(args, probe) -> Checkup:
    environ = probe.environ()
    bundle = find_bundle(args.project, environ)
    backend, source = args.backend, "--backend"
    if backend is None and bundle is not None and not bundle.error:
        backend, source = bundle.target.get("backend"), f"{bundle.path}"
    results_dir = args.results
    if results_dir is None and bundle is not None and not bundle.error:
        results_dir = os.path.join(bundle.root, str(bundle.diagnostics.get("results_dir", "runs")))
    checkup = Checkup(
        probe=probe,
        backend=backend,
        backend_source=source if backend else "inferred",
        bundle=bundle,
        results_dir=results_dir,
        keep_going=args.keep_going,
    )
    if bundle is not None and not bundle.error:
        try:
            checkup.order = read_order(bundle.root, load_toml)
        except OrderError as error:
            checkup.order_error = error
    return checkup


def run_stages(checkup: Checkup, on_result=None) -> list:
    results, first_failure = [], None
    for number, stage in enumerate(ORDER, 1):
        result = StageResult(stage.NAME, number)
        if first_failure is not None and not checkup.keep_going:
            result.skip(f"not run: stage {first_failure.number} {first_failure.name} failed (--keep-going runs every stage)")
        elif stage.NEEDS_TORCH and checkup.torch is None:
            result.skip("torch is not importable")
        else:
            start = time.perf_counter()
            try:
                stage.run(checkup, result)
            except Exception as error:
                result.values["traceback"] = traceback.format_exc().splitlines()[-12:]
                result.fail(
                    f"unexpected {type(error).__name__}: {error}",
                    "The machine behaves in a way the diagnostics did not expect: the report's values hold the traceback.",
                )
            result.seconds = time.perf_counter() - start
        if result.status == FAIL and first_failure is None:
            first_failure = result
        results.append(result)
        if on_result:
            on_result(result)
    return results


def build_report(checkup: Checkup, results: list, code: int, started: float) -> dict:
    first = next((result for result in results if result.status == FAIL), None)
    order = next((result.values["order"] for result in results if "order" in result.values), None)
    if order is None and checkup.order is not None:
        order = dict(checkup.order.as_dict(), line=f"ordered {checkup.order.describe()}; not compared: stage 4 did not run", verdict="skip")
    return {
        "diagnostics_version": VERSION,
        "backend": checkup.backend,
        "backend_source": checkup.backend_source,
        "bundle": checkup.bundle.path if checkup.bundle else None,
        "results_dir": checkup.results_dir,
        "keep_going": checkup.keep_going,
        "started": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.time() - started, 3),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "order": order,
        "stages": [result.as_dict() for result in results],
        "first_failure": first.name if first else None,
        "exit_code": code,
    }
