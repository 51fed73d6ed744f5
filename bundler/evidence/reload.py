"""The checkpoint reload of `bundler runs verify`: the PROJECT's model and reload code in a fresh
process, never the copies in the run folder.

A run folder is evidence, not code: a reload.py that prints "ok" or a model.py that does
anything else must not run. The run's manifest names where its model lies in the project
(``reload.model_source``); the project's own reload code beside it (its
``evidence/reload.py``, else the copy bundler ships in its template) reloads the checkpoint.
A copy outside any project reloads with bundler's own template code, and only when the
run's model.py is that model byte for byte. The reload reads the checkpoint
(``torch.load(weights_only=True)``: data only) and re-predicts every accepted document as
predictions.jsonl stores it. The IDs it re-predicted are checked here against the accepted
ones. The run's copies of model.py and reload.py are compared by their recorded SHA-256.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path, PurePosixPath

from bundler.fsutil import parse_json, sha256_file
from bundler.resources import resource_path

LISTED = 5


TEMPLATE_PACKAGE = ("{{cookiecutter.project_slug}}", "src", "{{cookiecutter.package_name}}")
# Loads the project's model and reload code by path (isolated: no PYTHONPATH, no script folder), prints the report
BOOTSTRAP = (
    "import importlib.util, json, sys\n"
    "def load(name, path):\n"
    "    spec = importlib.util.spec_from_file_location(name, path)\n"
    "    module = importlib.util.module_from_spec(spec)\n"
    "    sys.modules[name] = module\n"
    "    spec.loader.exec_module(module)\n"
    "    return module\n"
    "model = load('model', sys.argv[2])\n"
    "reload = load('bundler_project_reload', sys.argv[3])\n"
    "print(json.dumps(reload.reload_run(sys.argv[1], model)))\n"
)


def project_code(run_dir: Path, manifest: object, project: Path | None) -> tuple[Path, Path] | str:
    """(the model file, the reload code to run), or why the reload cannot be done: the project's own,
    or outside a project bundler's copies when the run's model is bundler's template model byte for byte."""
    shipped = resource_path("template").joinpath(*TEMPLATE_PACKAGE)
    if project is None:
        copy = run_dir / "model.py"
        if copy.is_file() and not copy.is_symlink() and sha256_file(copy) == sha256_file(shipped / "model.py"):
            return shipped / "model.py", shipped / "evidence" / "reload.py"
        return (
            "the run lies outside its project and its model.py is not bundler's template model: the checkpoint is "
            "reloaded only with the project's own code, never the run's copy (pass --project PROJECT)"
        )
    reload = manifest.get("reload") if isinstance(manifest, dict) else None
    named = reload.get("model_source") if isinstance(reload, dict) else None
    source = named if isinstance(named, str) else ""
    pure = PurePosixPath(source)
    if not source or pure.is_absolute() or ".." in pure.parts or pure.suffix != ".py" or "\\" in source:
        return "the manifest does not name the project's model (reload.model_source): the run was made by an older pilot"
    model = project / source
    if not model.is_file() or not model.resolve().is_relative_to(project.resolve()):
        return f"the project's model {source}, which the manifest names, is not a file of {project}"
    own = model.parent / "evidence" / "reload.py"
    return model, own if own.is_file() else shipped / "evidence" / "reload.py"


def reload_in_fresh_process(
    run_dir: Path, manifest: object, accepted: list[str], project: Path | None, python: str | None = None
) -> tuple[bool, str]:
    """(ok, what was found): the checkpoint reloads and re-predicts every one of ``accepted`` as stored."""
    code = project_code(run_dir, manifest, project)
    if isinstance(code, str):
        return False, code
    model, script = code
    if not (run_dir / "checkpoint.pt").is_file():
        return False, "checkpoint.pt is missing"
    interpreter = python or sys.executable
    if python is None and importlib.util.find_spec("torch") is None:
        return False, (
            f"torch is not installed in bundler's interpreter ({sys.executable}): the checkpoint cannot be reloaded here. "
            "Hint: install torch next to bundler, or pass --python PATH of an interpreter that has it."
        )
    argv = [interpreter, "-I", "-B", "-c", BOOTSTRAP, str(run_dir.resolve()), str(model), str(script)]
    try:
        result = subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"the reload process could not run with {interpreter}: {error}"
    try:
        report = parse_json(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"the reload process failed (exit {result.returncode}): {tail}"
    if not isinstance(report, dict) or not report.get("ok"):
        problems = report.get("problems") if isinstance(report, dict) else None
        return False, "; ".join(map(str, problems or ["reload failed"]))
    predicted = {str(entry.get("id")) for entry in report.get("predicted") or [] if isinstance(entry, dict)}
    missed = [i for i in accepted if i not in predicted]
    if missed:
        shown = ", ".join(missed[:LISTED]) + (f" and {len(missed) - LISTED} more" if len(missed) > LISTED else "")
        return False, f"reloaded, but re-predicted {len(predicted)} of {len(set(accepted))} accepted documents: {shown} not re-predicted"
    return True, f"reloaded in a fresh process; re-predicted all {len(predicted)} accepted documents as stored"
