"""The pilot's command line and its exit codes (errors.py):

    python -m <package>.pilot --config config/pilot.json [--run-id ID] [--resume ID]

Everything is checked before a run folder is created or touched: the configuration,
the input against its manifest, and on --resume that neither changed since the run
began. A failure is one paragraph on stderr ("Error: … Hint: …") and its exit code.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path

from . import store
from .config import load_config
from .errors import ConfigError, MissingPackageError, PilotError, StoppedError
from .inputs import load_documents
from .rules import StopRules
from .trial import Trial, refuse_changes

PROJECT_ROOT = Path(__file__).resolve().parents[3]  # src/<package>/evidence/ -> the project, wherever it lies


def run_pilot(model_name: str, parameters: dict, argv: list[str] | None = None) -> int:
    """Start or resume a run of the model ``model_name`` (a module keeping evidence.ModelModule)."""
    args = _parse(argv)
    command = ["python", "-m", f"{model_name.rpartition('.')[0]}.pilot", *(sys.argv[1:] if argv is None else argv)]
    name = args.resume or args.run_id or "?"
    try:
        for run_id in filter(None, (args.run_id, args.resume)):
            store.check_run_id(run_id)  # before anything slow: a run ID is a folder name of runs/, never a path
        config = load_config(args.config, PROJECT_ROOT, parameters)
        rules = StopRules.from_config(config.raw)
        if args.resume:
            if args.run_id and args.run_id != args.resume:
                raise ConfigError("--run-id and --resume name different runs.", "Resume continues the run it names; leave --run-id out.")
            run_dir, manifest = store.open_run_dir(config.runs_dir, args.resume)
            store.refuse_if_held(run_dir)
            refuse_changes(config, run_dir, manifest, getattr(importlib.util.find_spec(model_name), "origin", None))
            if manifest["status"] == "complete" and (run_dir / "summary.json").is_file():
                print(f"pilot: run {name} is already complete; nothing to resume.", file=sys.stderr)
                return 0
            documents = load_documents(config)  # a changed, missing or unlisted input is refused: the run stays as it is
            store.hold(run_dir)
            trial = Trial.resume(config, rules, _import_model(model_name), run_dir, manifest, documents, command)
        else:
            documents = load_documents(config)
            if rules.min_accuracy is not None:
                rules.check_set_ids(documents, config.categories)  # a bad check set is refused before the run exists
            model = _import_model(model_name)
            run_dir = store.create_run_dir(config.runs_dir, args.run_id or store.new_run_id(), config.sha256)
            name = run_dir.name
            trial = Trial.start(config, rules, model, run_dir, documents, command)
        summary = trial.run()
    except StoppedError as error:
        print(f"Error: run {name} stopped: {error}", file=sys.stderr)
        return error.exit_code
    except PilotError as error:
        print(f"Error: {error}", file=sys.stderr)
        return error.exit_code
    except OSError as error:
        where = f" {error.filename}" if error.filename else ""
        print(
            f"Error: cannot use{where}: {error.strerror or error}. Hint: check the permissions and free space there; "
            "--resume ID continues a run that was cut short.",
            file=sys.stderr,
        )
        return 10
    except KeyboardInterrupt:
        print(f"Error: interrupted. Hint: continue the run with --resume {name}.", file=sys.stderr)
        return 130
    counts = f"{summary['accepted']} accepted, {summary['rejected']} rejected of {summary['inputs']} inputs"
    print(f"pilot: run {run_dir.name}: {counts} -> {run_dir}", file=sys.stderr)
    return 0


def _import_model(model_name: str):
    """The model's module; a package it imports that this interpreter lacks is one paragraph, not a traceback."""
    try:
        return importlib.import_module(model_name)
    except ModuleNotFoundError as error:
        missing = error.name or "a module"
        raise MissingPackageError(
            f"{missing} is not installed for {sys.executable}, and the model ({model_name}) imports it.",
            "Run the pilot with the interpreter that has the project's lock installed "
            "(pip install --require-hashes -r requirements-rebuild.txt), or inside the bundle's image; "
            "python diagnostics/run.py names the first stage that fails.",
        ) from None


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pilot", description="Run the pilot into runs/<id>/, or resume an interrupted run.")
    parser.add_argument("--config", type=Path, default=Path("config/pilot.json"), help="parameter file (default: config/pilot.json)")
    parser.add_argument("--run-id", help="ID of this trial (default: a new unique, sortable one)")
    parser.add_argument("--resume", metavar="ID", help="continue the interrupted run ID: only the documents not yet written are processed")
    return parser.parse_args(argv)
