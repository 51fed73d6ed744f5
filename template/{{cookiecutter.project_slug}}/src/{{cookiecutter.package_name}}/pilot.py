"""The pilot: read the immutable input, one training update, a checkpoint, a prediction each.

    python -m {{ cookiecutter.package_name }}.pilot --config config/pilot.json [--run-id ID]
    python -m {{ cookiecutter.package_name }}.pilot --config config/pilot.json --resume ID

Writes runs/<id>/: manifest.json, inputs.json (the input manifest it ran on),
predictions.jsonl, rejections.jsonl, summary.json, checkpoint.pt, reload-sample.json and
model.py and reload.py (so the checkpoint reloads without the project). Exit codes
are listed in errors.py; 0 only when every input ID is accounted for exactly once and
the rejections are the planned ones.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import stoprules
from .config import load_config
from .errors import ConfigError, PilotError, StoppedError
from .inputs import load_documents
from .runstore import create_run_dir, new_run_id, open_run_dir, read_manifest
from .trial import Trial, refuse_changes


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    argv = list(argv if argv is not None else sys.argv[1:])
    run_name = args.resume or args.run_id or "?"
    try:
        config = load_config(args.config)
        rules = stoprules.parse(config.raw, config.path)
        if args.resume:
            if args.run_id and args.run_id != args.resume:
                raise ConfigError("--run-id and --resume name different runs.", "Resume continues the run it names; leave --run-id out.")
            run_dir = open_run_dir(config.runs_dir, args.resume)
            manifest = read_manifest(run_dir)
            refuse_changes(config, run_dir, manifest, check_status=False)
            if manifest.get("status") == "complete":
                print(f"pilot: run {args.resume} is already complete; nothing to resume.", file=sys.stderr)
                return 0
            trial = Trial.resume(config, rules, run_dir, argv)
        else:
            documents = load_documents(config)
            if rules.min_accuracy is not None:
                stoprules.check_set_ids(rules, documents, config.categories)  # a bad check set is refused before the run exists
            run_dir = create_run_dir(config.runs_dir, args.run_id or new_run_id(), config.sha256)
            run_name = run_dir.name
            trial = Trial.start(config, rules, run_dir, documents, argv)
        summary = trial.run()
    except StoppedError as error:
        print(f"pilot: run {run_name} stopped: {error}", file=sys.stderr)
        return error.exit_code
    except PilotError as error:
        print(f"pilot: error: {error}", file=sys.stderr)
        return error.exit_code
    print(
        f"pilot: run {run_dir.name}: {summary['accepted']} accepted, {summary['rejected']} rejected "
        f"of {summary['inputs']} inputs -> {run_dir}",
        file=sys.stderr,
    )
    return 0


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pilot", description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=Path("config/pilot.json"), help="parameter file (default: config/pilot.json)")
    parser.add_argument("--run-id", help="ID of this trial (default: a new unique, sortable one)")
    parser.add_argument("--resume", metavar="ID", help="continue the interrupted run ID: only the documents not yet written are processed")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
