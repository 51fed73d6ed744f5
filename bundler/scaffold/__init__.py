"""`bundler new`: render the template into a portable pilot project, all or nothing.

Every answer is validated before anything is written (the Target against the
compatibility table, names against their shapes). Answers reach the rendered files as
values, never as template text: cookiecutter's file generator gets them as its context
(they are not rendered themselves), and bundle.toml takes each one through the TOML
serializer (the template's ``toml`` filter; README's title is Markdown-escaped), so a quote or a newline in a name cannot
change what the file means. The render happens in a private temporary folder, so that
no path chosen by the user is ever read as template text.
"""

from __future__ import annotations

import keyword
import re
import shutil
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from jinja2.ext import Extension

from bundler import __version__
from bundler.contracts.reference import ReferenceError, parse_reference
from bundler.errors import ExistsError, FileSystemError, UsageError
from bundler.fsutil import atomic_write_json, read_json, staged_directory
from bundler.resources import resource_path
from bundler.scaffold import base
from bundler.target.bundle import BACKENDS, Target, validate_target
from bundler.target.table_file import load_table

ANSWERS_FILE = ".bundler-answers.json"
CATEGORY_RE = re.compile(r"^[a-z][a-z0-9_]*$")
SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
MAX_SIZE_BUDGET_MB = 1_000_000  # a terabyte: beyond it a number is a typo, not an image size
LATIN = str.maketrans({"ß": "ss", "æ": "ae", "Æ": "AE", "ø": "o", "Ø": "O", "œ": "oe", "Œ": "OE", "đ": "d", "ł": "l", "Ł": "L", "þ": "th"})
SHADOWED = {"torch", "numpy", "bundler"}  # with the standard library: names a package in src/ must not hide


@dataclass(frozen=True)
class Scaffolded:
    dest: Path
    answers: dict
    files: int


class SerializerExtension(Extension):
    """The template's filters for free text: ``toml`` (a TOML literal, by tomlkit, never pasted
    between quotes) and ``markdown`` (every character Markdown would read as syntax escaped)."""

    def __init__(self, environment) -> None:
        super().__init__(environment)
        import tomlkit

        environment.filters["toml"] = lambda value: tomlkit.item(value).as_string()
        environment.filters["markdown"] = lambda text: re.sub(r"([\\`*_{}\[\]()#+\-.!<>|~])", r"\\\1", str(text))


def template_context(template: Path | None = None) -> dict:
    """cookiecutter.json of the shipped template, or of ``template`` (a template folder)."""
    path = (template or resource_path("template")) / "cookiecutter.json"
    context = read_json(path, hint="A template folder holds cookiecutter.json and a {{cookiecutter.project_slug}} folder.")
    if not isinstance(context, dict) or "_template_version" not in context:
        raise UsageError(
            f"{path} is not a bundler template: it has no _template_version.",
            hint="Name a copy of bundler's template/ folder (its cookiecutter.json sets _template_version).",
            path=path,
        )
    return context


def template_defaults(template: Path | None = None) -> dict:
    """The template's variables and defaults (private `_` keys left out)."""
    return {key: value for key, value in template_context(template).items() if not key.startswith("_")}


def default_answers(template: Path | None = None) -> dict:
    """Each question's default as cookiecutter reads it: the first of a list of choices."""
    return {key: (value[0] if isinstance(value, list) else value) for key, value in template_defaults(template).items()}


def template_version(template: Path | None = None) -> str:
    return str(template_context(template)["_template_version"])


def version_order(version: str) -> tuple:
    """A template version as a sortable key: "10" after "9"; a version that does not parse sorts after every one that does."""
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


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
    answers = default_answers()
    answers["project_name"] = name or settings.get("project_name") or _title(Path(dest).name)
    if "project_slug" not in settings:
        answers["project_slug"] = _derived(Path(dest).name, "-", "the folder name", "project_slug", "my-pilot")
    if "package_name" not in settings:
        answers["package_name"] = _derived(answers["project_name"], "_", "the project name", "package_name", "my_pilot")
    if backend:
        answers["backend"] = backend
    answers.update({key: value for key, value in settings.items() if key not in ("project_name",)})
    table = load_table()
    if "accelerator" not in settings and answers["backend"] in BACKENDS and answers["torch_version"] in table.releases:
        answers["accelerator"] = table.default_accelerator(answers["torch_version"], answers["backend"])
    if "base_image" not in settings:
        answers["base_image"] = table.runtime_base.format(python=answers["python_version"])
    answers["bundler_version"] = __version__
    validate_answers(answers)
    return answers


def validate_answers(answers: dict, *, target: bool = True) -> None:
    """Every answer's shape; with ``target``, the Target against the compatibility table too (`bundler update` keeps
    the recorded Target even where this bundler's table no longer lists it: bundle.toml is the user's to change)."""
    _validate_names(answers)
    if target:
        wanted = Target(
            backend=answers["backend"],
            accelerator=answers["accelerator"],
            torch=answers["torch_version"],
            python=answers["python_version"],
        )
        load_table().build_for(validate_target(wanted))  # a combination PyTorch ships, or TargetError naming those that exist
    budget = str(answers["size_budget_mb"])
    if not (budget.isascii() and budget.isdigit()) or not 0 < int(budget) <= MAX_SIZE_BUDGET_MB:
        raise UsageError(
            f"size_budget_mb {budget!r} is not a number of megabytes from 1 to {MAX_SIZE_BUDGET_MB}.",
            hint="--set size_budget_mb=3000",
            value=budget,
        )
    try:
        parse_reference(answers["base_image"])
    except ReferenceError as error:
        raise UsageError(
            f"base_image {answers['base_image']!r} is not an image reference: {error}.",
            hint="Write it as Docker does: [registry/]name[:tag][@sha256:digest], e.g. --set base_image=python:3.11-slim-bookworm.",
            value=answers["base_image"],
        ) from None
    _validate_categories(answers["categories"])


def _validate_names(answers: dict) -> None:
    name, slug, package = answers["project_name"], answers["project_slug"], answers["package_name"]
    if not name.strip() or len(name) > 100 or not name.isprintable():
        raise UsageError(
            f"project name {name!r} is not a single printable line of at most 100 characters.",
            hint='Give a short human name, e.g. --name "Invoice pilot".',
            value=name,
        )
    if not SLUG_RE.match(slug):
        raise UsageError(
            f"project slug {slug!r} is not lowercase letters, digits and '-' (at most 63, not starting with '-').",
            hint="It names the image archive and the folder; e.g. --set project_slug=invoice-pilot.",
            value=slug,
        )
    if not (package.isascii() and package.isidentifier()) or keyword.iskeyword(package) or package in _shadowed():
        raise UsageError(
            f"package name {package!r} is not a valid Python import name of its own.",
            hint="Use lowercase letters, digits and underscores, not starting with a digit, not a Python keyword and not the "
            "name of a module the pilot imports (e.g. --set package_name=doc_pilot).",
            value=package,
        )


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
    check_destination(dest)
    with staged_directory(dest) as staging:
        render(staging, answers)
        stored = base.store(staging, base.read_tree(staging))
        atomic_write_json(staging / ANSWERS_FILE, answers_record(answers, template_version(), stored))
    files = sum(1 for p in dest.rglob("*") if p.is_file())
    return Scaffolded(dest=dest, answers=answers, files=files)


def render(folder: Path, answers: dict, template: Path | None = None) -> None:
    """The template (the shipped one, or ``template``) rendered with ``answers`` into the empty ``folder``, diagnostics/ beside.

    `bundler new` and `bundler update` both render through here: the answers are the context, never template text.
    """
    from cookiecutter.generate import generate_files

    template = template or resource_path("template")
    private = {key: value for key, value in template_context(template).items() if key.startswith("_")}
    with tempfile.TemporaryDirectory(prefix="bundler-render-") as render_dir:
        if re.search(r"[{}%#]", render_dir):
            raise UsageError(f"the temporary folder {render_dir} holds template syntax.", hint="Set TMPDIR to a plain folder.")
        rendered = generate_files(
            str(template), context={"cookiecutter": {**answers, **private}}, output_dir=render_dir, accept_hooks=False
        )
        _drop_bytecode(Path(rendered))
        for child in Path(rendered).iterdir():
            shutil.move(str(child), Path(folder) / child.name)
    shutil.copytree(resource_path("diagnostics"), Path(folder) / "diagnostics", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def _drop_bytecode(rendered: Path) -> None:
    """Bytecode an installer compiled inside bundler's own template is no part of the project
    (it carries the install path): it never reaches a new project."""
    for path in sorted(rendered.rglob("*"), reverse=True):
        if path.name == "__pycache__" and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.suffix in (".pyc", ".pyo") and path.is_file():
            path.unlink()


def check_destination(dest: Path) -> None:
    """DEST must be a new folder, or an empty one, below folders (not files)."""
    if dest.is_symlink():
        raise ExistsError(
            f"{dest} is a symbolic link (to {dest.readlink()}); bundler new never writes through one.",
            hint="Name a new folder, or remove the link yourself first.",
            path=dest,
        )
    if dest.exists() and not dest.is_dir():
        raise ExistsError(f"{dest} is a file; bundler new creates a folder.", hint="Name a new folder instead.", path=dest)
    if dest.is_dir() and any(dest.iterdir()):
        raise ExistsError(
            f"{dest} already exists and is not empty; bundler new never writes into an existing project.",
            hint="Choose a new folder name, or empty that folder yourself first.",
            path=dest,
        )
    above = next((parent for parent in dest.parents if parent.exists()), None)
    if above is not None and not above.is_dir():
        raise FileSystemError(
            f"cannot create {dest}: {above} is a file, not a folder.",
            hint="Choose a path whose parents are folders.",
            path=above,
        )


def answers_record(answers: dict, version: str, stored: dict, created: str | None = None) -> dict:
    """What .bundler-answers.json holds: the template version rendered, the answers, the stored base and its sha256."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    record = {"template_version": version, "bundler_version": __version__, "created": created or now, "answers": answers, "base": stored}
    if created:
        record["updated"] = now
    return record


def _title(folder: str) -> str:
    return re.sub(r"[-_]+", " ", folder).strip().title() or "Pilot"


def _derived(text: str, separator: str, source: str, key: str, example: str) -> str:
    """A slug or an import name from ``text``; accents are dropped, letters without an ASCII form refused."""
    decomposed = unicodedata.normalize("NFKD", text.translate(LATIN))
    lost = sorted({c for c in decomposed if not c.isascii() and unicodedata.category(c)[0] in "LN"})
    if lost:
        raise UsageError(
            f"{source} {text!r} holds letters without an ASCII form ({''.join(lost)}), so no {key} can be derived from it.",
            hint=f"Choose it yourself: --set {key}={example}.",
            value=text,
        )
    derived = re.sub(r"[^a-z0-9]+", separator, decomposed.encode("ascii", "ignore").decode().lower()).strip(separator)
    if separator == "_" and derived[:1].isdigit():
        derived = f"p_{derived}"
    return derived or "pilot"


def _shadowed() -> set[str]:
    return SHADOWED | set(getattr(sys, "stdlib_module_names", ()))
