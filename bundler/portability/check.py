"""`bundler check`: the portability audit before leaving the workstation.

Each item is a function that takes the loaded Bundle and returns an ``Item``: passed,
failed or not checked, with a detail (what was found) and a hint (what to do).
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shlex
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bundler.contracts.pilotconfig import ConfigProblem, Parameters, parse_config
from bundler.contracts.pilotconfig import check_config as check_config_schema
from bundler.contracts.secrets import SECRET_SAMPLES, find_tokens, is_secret_path
from bundler.errors import ProjectFileError
from bundler.fsutil import read_json
from bundler.image.context import clean_patterns, is_ignored
from bundler.lock.lockfile import bundle_lock
from bundler.lock.sidecar import lock_sidecar_problems, pin_changes
from bundler.portability.scan import scan
from bundler.target.bundle import Bundle

PASS, FAIL, NOT_CHECKED = "pass", "fail", "not checked"
PILOT_CONFIG = "config/pilot.json"
DIAGNOSTICS_TIMEOUT_S = 60

# Files the build context must never carry (the secrets' own samples), and one trial output, as paths to test.
DOCKERIGNORE_SAMPLES = (*SECRET_SAMPLES, "runs/20260101-0000/metrics.json")
README_SECTIONS = ("install", "launch", "check")


@dataclass
class Item:
    name: str
    status: str
    detail: str
    hint: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def run_checks(bundle: Bundle) -> list[Item]:
    """Every item; the template pilot's own (its config, inputs, README sections) only where the pilot is."""
    pilot = has_pilot(bundle)
    return [check(bundle) for check in CHECKS if pilot or check not in PILOT_CHECKS]


def has_pilot(bundle: Bundle) -> bool:
    """A project made by `bundler new` (or keeping its pilot): config/pilot.json is there. An adopted one has its own layout."""
    return (bundle.root / PILOT_CONFIG).is_file()


# --- the items ---------------------------------------------------------------------------


def check_home_paths(bundle: Bundle) -> Item:
    from bundler.fsutil import put_back_unfinished

    unfinished = put_back_unfinished(bundle.root, apply=False)
    if unfinished:  # the files are half old, half new: no scan of them means anything
        return Item(
            "no home paths",
            FAIL,
            f"a fix or update was interrupted and left {unfinished[0]}/ with its journal: the project is half written",
            "Run `bundler paths`: it puts every file of that fix back first.",
        )
    result = scan(bundle.root)
    failing = result.failing
    if failing:
        first = failing[0]
        return Item(
            "no home paths",
            FAIL,
            f"{len(failing)} machine-specific path(s), first {first.file}:{first.line}: {first.text}",
            "Run `bundler paths` to list them and `bundler paths --fix` to rewrite them.",
        )
    if result.not_checked:  # never reported clean: a file the scan could not look at may hold one
        skipped = result.not_checked[0]
        return Item(
            "no home paths",
            FAIL,
            f"{len(result.not_checked)} file(s) could not be checked, first {skipped.file}: {skipped.reason}",
            "Run `bundler paths` to list them: save text as UTF-8, repair the notebook, or check those files by hand.",
        )
    docs = len(result.findings) - len(failing)
    extra = f" ({docs} in documentation or information, which never fails)" if docs else ""
    return Item("no home paths", PASS, f"{result.files_scanned} files scanned{extra}")


def check_lock(bundle: Bundle) -> Item:
    lock = bundle_lock(bundle)
    state = lock.state
    if state.ok:
        problems = lock_sidecar_problems(lock)  # the wheels built from source, the direct dependencies
        if problems:
            return Item("lock present and fresh", FAIL, "; ".join(problems), "Run `bundler lock` (it rewrites the sidecar).")
        return Item("lock present and fresh", PASS, state.detail)
    changes = pin_changes(lock) if state.status == "tampered" else []
    named = f" Changed by hand: {'; '.join(changes)}." if changes else ""
    return Item(
        "lock present and fresh",
        FAIL,
        f"{state.status}: {state.detail}{named}",
        f"Run `bundler lock` to (re)write the lock for {bundle.requirements} and the Target.",
    )


def check_config(bundle: Bundle) -> Item:
    """The pilot's own schema (contracts/pilotconfig.py, which the generated pilot carries), with
    the model sections its pilot.py declares in PARAMETERS: what the pilot refuses fails here."""
    name = "config/pilot.json valid and secret-free"
    path = bundle.root / PILOT_CONFIG
    text = _load_text(path)
    if text is None:
        return Item(name, FAIL, f"{PILOT_CONFIG} cannot be read", f"Write {PILOT_CONFIG} (see a fresh `bundler new` project).")
    parameters = pilot_parameters(bundle)
    if isinstance(parameters, str):
        return Item(name, FAIL, parameters, "Declare PARAMETERS in pilot.py as a fresh `bundler new` project does.")
    problems, hint, loaded = [], "", None
    try:
        loaded = parse_config(text)
        check_config_schema(loaded, parameters)
    except ConfigProblem as problem:
        problems.append(f"{PILOT_CONFIG}: {problem.key or 'the top level'} {problem.text}")
        hint = problem.hint
    secrets = find_tokens(text)
    if secrets:
        problems.append("token-looking values: " + ", ".join(secrets))
        hint = "Keep parameters only in the config; give secrets through environment variables at launch."
    if problems or not isinstance(loaded, dict):
        return Item(name, FAIL, "; ".join(problems), hint)
    return Item(name, PASS, f"{len(loaded['categories'])} categories, {loaded['expected_documents']} expected documents")


def pilot_parameters(bundle: Bundle) -> Parameters | str:
    """PARAMETERS of src/<package>/pilot.py, read without running it; the sentence saying why not otherwise."""
    path = bundle.root / "src" / bundle.package / "pilot.py"
    shown = path.relative_to(bundle.root)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
        return f"{shown} cannot be read ({error.__class__.__name__}), so the config's model sections are unknown"
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PARAMETERS" for t in node.targets):
            try:
                value = _literal(node.value)
            except (ValueError, TypeError) as error:
                return f"{shown}: PARAMETERS is not a plain literal ({error})"
            if isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
                return value
            return f"{shown}: PARAMETERS is not {{section: {{key: (int|float, lowest, highest)}}}}"
    return f"{shown} declares no PARAMETERS (the config's model sections)"


_TYPES = {"int": int, "float": float}
_ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}


def _literal(node: ast.AST) -> object:
    """A literal of dicts, tuples, numbers, strings, int/float and small arithmetic (``1 << 20``, ``2**32 - 1``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
        return node.value
    if isinstance(node, ast.Name) and node.id in _TYPES:
        return _TYPES[node.id]
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_literal(key): _literal(value) for key, value in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_literal(item) for item in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_number(_literal(node.operand))
    if isinstance(node, ast.BinOp):
        left, right = _number(_literal(node.left)), _number(_literal(node.right))
        if isinstance(node.op, ast.Pow) and abs(right) <= 64:
            return left**right
        if isinstance(node.op, ast.LShift) and isinstance(left, int) and isinstance(right, int) and 0 <= right <= 64:
            return left << right
        if type(node.op) in _ARITHMETIC:
            return _ARITHMETIC[type(node.op)](left, right)
    raise ValueError(f"line {getattr(node, 'lineno', '?')}: {ast.unparse(node)[:40]}")


def _number(value: object) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is not a number")
    return value


def check_pilot_inputs(bundle: Bundle) -> Item:
    name = "pilot inputs match their manifest"
    config, _ = _load_json(bundle.root / PILOT_CONFIG)
    if not isinstance(config, dict):
        return Item(name, NOT_CHECKED, f"{PILOT_CONFIG} could not be read", "Fix the config item first.")
    manifest_rel = str(config.get("manifest", "data/pilot/MANIFEST.json"))
    data_rel = str(config.get("data_dir", "data/pilot"))
    manifest, unreadable = _load_json(bundle.root / manifest_rel)
    if unreadable is not None:
        return Item(name, FAIL, unreadable, "Restore the manifest of the pilot inputs from version control.")
    problems = manifest_problems(bundle.root / data_rel, manifest, config)
    if problems:
        return Item(
            name,
            FAIL,
            "; ".join(problems[:4]) + (f" (+{len(problems) - 4} more)" if len(problems) > 4 else ""),
            "The pilot inputs are immutable: restore the files listed, or regenerate the manifest on purpose.",
        )
    documents = manifest["documents"]
    rejects = sum(1 for d in documents if d.get("expect") == "reject")
    return Item(name, PASS, f"{len(documents)} documents, {rejects} planned rejection(s), hashes match")


def manifest_problems(data_dir: Path, manifest: object, config: dict) -> list[str]:
    if not isinstance(manifest, dict) or not isinstance(manifest.get("documents"), list):
        return ["the manifest has no list of documents"]
    documents = manifest["documents"]
    problems = []
    ids = [d.get("id") for d in documents if isinstance(d, dict)]
    if len(ids) != len(documents):
        problems.append("an entry of documents is not an object")
    duplicates = sorted({i for i in ids if ids.count(i) > 1}, key=str)
    if duplicates:
        problems.append(f"duplicate IDs: {', '.join(map(str, duplicates))}")
    expected = config.get("expected_documents")
    if isinstance(expected, int) and len(documents) != expected:
        problems.append(f"{len(documents)} documents listed, {expected} expected")
    wanted_rejects = config.get("expected_rejections")
    rejects = sum(1 for d in documents if isinstance(d, dict) and d.get("expect") == "reject")
    if isinstance(wanted_rejects, int) and rejects != wanted_rejects:
        problems.append(f"{rejects} planned rejection(s), {wanted_rejects} expected")
    for document in documents:
        if not isinstance(document, dict):
            continue
        problem = _document_problem(data_dir, document)
        if problem:
            problems.append(problem)
    return problems


def _document_problem(data_dir: Path, document: dict) -> str | None:
    file = document.get("file")
    if not isinstance(file, str) or not file:
        return f"{document.get('id')}: no file"
    path = data_dir / file
    try:
        data = path.read_bytes()
    except OSError:
        return f"{file}: missing"
    if document.get("sha256") and hashlib.sha256(data).hexdigest() != document["sha256"]:
        return f"{file}: sha256 differs from the manifest"
    if isinstance(document.get("bytes"), int) and len(data) != document["bytes"]:
        return f"{file}: {len(data)} bytes, manifest says {document['bytes']}"
    return None


def check_diagnostics(bundle: Bundle) -> Item:
    name = "diagnostics present and runnable"
    script = bundle.root / "diagnostics" / "run.py"
    if not script.is_file():
        return Item(name, FAIL, "diagnostics/run.py not found", "Create the project with `bundler new` or copy diagnostics/ from bundler.")
    try:
        completed = subprocess.run(
            [sys.executable, str(script), "--help"], cwd=bundle.root, capture_output=True, text=True, timeout=DIAGNOSTICS_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return Item(
            name, FAIL, f"`python diagnostics/run.py --help` ran over {DIAGNOSTICS_TIMEOUT_S} s", "Keep heavy imports out of its start-up."
        )
    if completed.returncode != 0:
        last = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        return Item(
            name,
            FAIL,
            f"`python diagnostics/run.py --help` exited {completed.returncode}: {last}",
            "Run it yourself to see the error; restore diagnostics/ from bundler if it was edited.",
        )
    return Item(name, PASS, "`python diagnostics/run.py --help` exits 0")


def check_dockerignore(bundle: Bundle) -> Item:
    name = ".dockerignore covers secrets and runs/"
    path = bundle.root / ".dockerignore"
    if not path.is_file():
        return Item(
            name,
            FAIL,
            ".dockerignore not found: the whole folder, secrets included, would enter the image",
            "Add a .dockerignore excluding .env*, *.pem, id_rsa*, .netrc, .pypirc, credentials* and runs/.",
        )
    patterns = clean_patterns(path.read_text(encoding="utf-8", errors="replace").splitlines())
    uncovered = [sample for sample in DOCKERIGNORE_SAMPLES if not is_ignored(patterns, sample)]
    present = secrets_outside_dockerignore(bundle, patterns)
    if uncovered or present:
        shown = [f"{name} (in the project)" for name in present[:8]] + [name for name in uncovered if name not in present]
        return Item(
            name,
            FAIL,
            "not excluded: " + ", ".join(shown),
            "Add patterns such as **/.env*, **/*.pem, **/id_rsa*, **/.netrc, **/.pypirc, **/credentials*, **/kaggle.json, "
            "**/.huggingface/, runs/ (bundler withholds secrets from its own builds; another builder would not).",
        )
    return Item(name, PASS, f"{len(DOCKERIGNORE_SAMPLES)} secret and trial-output samples excluded")


def secrets_outside_dockerignore(bundle: Bundle, patterns: list[str] | None = None) -> list[str]:
    """The project's files that are secrets (contracts/secrets.py) and that .dockerignore lets through."""
    if patterns is None:
        ignore_file = bundle.root / ".dockerignore"
        text = ignore_file.read_text(encoding="utf-8", errors="replace") if ignore_file.is_file() else ""
        patterns = clean_patterns(text.splitlines())
    found = []
    for folder, dirs, files in os.walk(bundle.root):
        base = Path(folder).relative_to(bundle.root).as_posix()
        dirs[:] = sorted(d for d in dirs if d not in (".git", ".venv", "node_modules", "__pycache__"))
        for file in sorted(files):
            relative = file if base == "." else f"{base}/{file}"
            if is_secret_path(relative) and not is_ignored(patterns, relative):
                found.append(relative)
    return found


def check_entry(bundle: Bundle) -> Item:
    name = "entry command declared"
    if not bundle.entry.strip():
        return Item(
            name,
            FAIL,
            "[project] entry is empty",
            "Set [project] entry in bundle.toml to the command the bundle runs, from the project root.",
        )
    try:
        words = shlex.split(bundle.entry)
    except ValueError as error:
        return Item(
            name, FAIL, f"[project] entry does not parse: {error}", "Write it like `python -m package.pilot --config config/pilot.json`."
        )
    words = [w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]  # leading VAR=value
    if "-m" in words and words.index("-m") + 1 < len(words):
        module = words[words.index("-m") + 1]
        for base, shown in ((bundle.root / "src", "src/"), (bundle.root, "the project root")):
            found = base / Path(*module.split("."))
            if found.with_suffix(".py").is_file() or (found / "__main__.py").is_file():
                return Item(name, PASS, f"{bundle.entry} (module {module} under {shown})")
        return Item(
            name,
            FAIL,
            f"entry runs module {module}, but neither src/ nor the project root holds {module.replace('.', '/')}.py",
            "Point [project] entry in bundle.toml at a module of the project (it runs from the project root).",
        )
    if len(words) > 1 and words[1] == "-c":
        return Item(name, PASS, f"{bundle.entry} (inline code)")
    if bundle.install_project and words and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", words[0]) and not words[0].startswith("python"):
        return Item(name, PASS, f"{bundle.entry} (a console script: [build] install_project installs the project's wheel)")
    scripts = [w for w in words[1:] if w.endswith(".py")]
    if scripts and (bundle.root / scripts[0]).is_file():
        return Item(name, PASS, f"{bundle.entry} (script {scripts[0]})")
    return Item(name, FAIL, f"cannot find what `{bundle.entry}` runs", "Write [project] entry as `python -m package.module ...`.")


def check_readme(bundle: Bundle) -> Item:
    name = "README has install, launch and check sections"
    path = bundle.root / "README.md"
    if not path.is_file():
        return Item(name, FAIL, "README.md not found", "Write README.md with sections Install, Launch and Check.")
    headings = readme_headings(path.read_text(encoding="utf-8", errors="replace"))
    missing = [word for word in README_SECTIONS if not any(word in heading for heading in headings)]
    if missing:
        return Item(
            name,
            FAIL,
            "no heading containing: " + ", ".join(missing),
            "Add a section for each: how to install, launch and check the project.",
        )
    return Item(name, PASS, "install, launch and check sections found")


def readme_headings(text: str) -> list[str]:
    lines = text.splitlines()
    headings = [line.lstrip("#").strip().lower() for line in lines if re.match(r"^#{1,6}\s", line)]
    for previous, line in zip(lines, lines[1:], strict=False):
        if previous.strip() and re.match(r"^(=+|-+)\s*$", line):
            headings.append(previous.strip().lower())
    return headings


def _load_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def check_template(bundle: Bundle) -> Item:
    from bundler.scaffold import ANSWERS_FILE, template_version, version_order

    name = "template as new as the installed one"
    if not (bundle.root / ANSWERS_FILE).is_file():
        return Item(name, NOT_CHECKED, f"no {ANSWERS_FILE}: not made by `bundler new`, so no template to compare")
    record, _ = _load_json(bundle.root / ANSWERS_FILE)
    recorded = record.get("template_version") if isinstance(record, dict) else None
    if not isinstance(recorded, str):
        return Item(name, FAIL, f"{ANSWERS_FILE} records no template version", "Restore .bundler-answers.json from version control.")
    installed = template_version()
    if version_order(recorded) < version_order(installed):
        return Item(
            name,
            FAIL,
            f"made from template {recorded}; this bundler ships template {installed}",
            "Run `bundler update --dry-run` to see the plan, then `bundler update`: your edits are kept, conflicts marked.",
        )
    return Item(name, PASS, f"template {recorded} (installed: {installed})")


def _load_json(path: Path) -> tuple[Any, str | None]:
    """(the parsed document, None), or (None, the sentence saying why it could not be read)."""
    try:
        return read_json(path, hint=""), None
    except ProjectFileError as error:
        return None, error.message


PILOT_CHECKS = (check_config, check_pilot_inputs, check_readme)
CHECKS = (
    check_home_paths,
    check_lock,
    check_config,
    check_pilot_inputs,
    check_diagnostics,
    check_dockerignore,
    check_entry,
    check_readme,
    check_template,
)
