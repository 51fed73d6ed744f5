"""`bundler new`: render the template into a portable pilot project, all or nothing."""

from __future__ import annotations

import json
import keyword
import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bundler import __version__
from bundler.errors import ExistsError, UsageError
from bundler.fsutil import atomic_write_json, staged_directory
from bundler.resources import resource_path
from bundler.target.bundle import BACKENDS, Target, validate_target
from bundler.target.table_file import load_table

ANSWERS_FILE = ".bundler-answers.json"
CATEGORY_RE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Scaffolded:
    dest: Path
    answers: dict
    files: int


def template_defaults() -> dict:
    """The template's variables and defaults (private `_` keys left out)."""
    context = json.loads((resource_path("template") / "cookiecutter.json").read_text(encoding="utf-8"))
    return {key: value for key, value in context.items() if not key.startswith("_")}


def template_version() -> str:
    context = json.loads((resource_path("template") / "cookiecutter.json").read_text(encoding="utf-8"))
    return str(context["_template_version"])


def build_answers(dest: Path, *, name: str | None, backend: str | None, settings: dict[str, str]) -> dict:
    """Every template variable resolved and validated; nothing is written here."""
    defaults = template_defaults()
    unknown = sorted(set(settings) - set(defaults))
    if unknown:
        raise UsageError(
            f"--set {unknown[0]}=… names no template variable.",
            hint=f"Known variables: {', '.join(sorted(defaults))}.",
            value=unknown[0],
        )
    answers = {key: (value[0] if isinstance(value, list) else value) for key, value in defaults.items()}
    answers["project_name"] = name or settings.get("project_name") or _title(dest.name)
    answers["project_slug"] = _slug(dest.name)
    answers["package_name"] = _package(answers["project_name"])
    if backend:
        answers["backend"] = backend
    answers.update(settings)
    table = load_table()
    if "accelerator" not in settings and answers["backend"] in BACKENDS and answers["torch_version"] in table.releases:
        answers["accelerator"] = table.default_accelerator(answers["torch_version"], answers["backend"])
    if "base_image" not in settings:
        answers["base_image"] = table.runtime_base.format(python=answers["python_version"])
    answers["bundler_version"] = __version__
    validate_answers(answers)
    return answers


def validate_answers(answers: dict) -> None:
    package = answers["package_name"]
    if not package.isidentifier() or keyword.iskeyword(package) or not package.isascii():
        raise UsageError(
            f"package name {package!r} is not a valid Python import name.",
            hint="Use lowercase letters, digits and underscores, not starting with a digit and not a Python keyword (e.g. --set "
            "package_name=doc_pilot).",
            value=package,
        )
    target = Target(
        backend=answers["backend"],
        accelerator=answers["accelerator"],
        torch=answers["torch_version"],
        python=answers["python_version"],
    )
    load_table().build_for(validate_target(target))  # a combination PyTorch ships, or TargetError naming those that exist
    if not str(answers["size_budget_mb"]).isdigit() or int(answers["size_budget_mb"]) <= 0:
        raise UsageError(
            f"size_budget_mb {answers['size_budget_mb']!r} is not a positive number of megabytes.",
            hint="--set size_budget_mb=3000",
            value=answers["size_budget_mb"],
        )
    _validate_categories(answers["categories"])


def _validate_categories(value: str) -> None:
    categories = [c.strip() for c in value.split(",")]
    bad = [c for c in categories if not CATEGORY_RE.match(c)]
    if bad or len(set(categories)) != len(categories):
        raise UsageError(
            f"categories {value!r} must be distinct lowercase names separated by commas.",
            hint="For example --set categories=invoice,contract,support_ticket,research_abstract.",
            value=value,
        )
    example = set(template_defaults()["categories"].split(","))
    missing = sorted(example - set(categories))
    if missing:
        raise UsageError(
            f"categories {value!r} leave out {', '.join(missing)}, which the example documents in data/pilot are labelled with.",
            hint="Keep the example categories and add your own after them; replace the example data before changing them.",
            value=value,
        )


def scaffold(dest: Path, answers: dict) -> Scaffolded:
    """Render into a staging folder beside DEST; DEST appears only when everything worked."""
    dest = Path(dest).absolute()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ExistsError(
            f"{dest} already exists and is not empty; bundler new never writes into an existing project.",
            hint="Choose a new folder name, or empty that folder yourself first.",
            path=dest,
        )
    from cookiecutter.main import cookiecutter

    with staged_directory(dest) as staging:
        render_dir = staging / ".render"
        rendered = Path(
            cookiecutter(
                str(resource_path("template")),
                no_input=True,
                extra_context=answers,
                output_dir=str(render_dir),
                accept_hooks=False,
            )
        )
        for child in rendered.iterdir():
            shutil.move(str(child), staging / child.name)
        shutil.rmtree(render_dir)
        shutil.copytree(resource_path("diagnostics"), staging / "diagnostics", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        atomic_write_json(staging / ANSWERS_FILE, _answers_record(answers))
    files = sum(1 for p in dest.rglob("*") if p.is_file())
    return Scaffolded(dest=dest, answers=answers, files=files)


def _answers_record(answers: dict) -> dict:
    return {
        "template_version": template_version(),
        "bundler_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "answers": answers,
    }


def _title(folder: str) -> str:
    return re.sub(r"[-_]+", " ", folder).strip().title() or "Pilot"


def _slug(folder: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", folder.lower()).strip("-") or "pilot"


def _package(project_name: str) -> str:
    package = re.sub(r"[^a-z0-9]+", "_", project_name.lower()).strip("_")
    return f"p_{package}" if package[:1].isdigit() else package or "pilot"
