"""`bundler update` through the real CLI: real `bundler new` renders, a newer template standing for the next release."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bundler.resources import resource_path
from bundler.scaffold.base import BASE_FILE
from tests.conftest import run_cli

SLUG = "{{cookiecutter.project_slug}}"
PACKAGE = "src/{{cookiecutter.package_name}}"


def hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} is not once in {path}"
    path.write_text(text.replace(old, new))


def resolved(text: str, side: str) -> str:
    """The file with every conflict block resolved to one side: 'template' or 'yours'."""
    pattern = re.compile(r"<<<<<<< template [^\n]*\n(.*?)=======\n(.*?)>>>>>>> yours\n", re.S)
    return pattern.sub(lambda m: m.group(1) if side == "template" else m.group(2), text)


def new_project(tmp_path: Path, name: str = "example") -> Path:
    completed = run_cli("new", str(tmp_path / name), "--no-input")
    assert completed.returncode == 0, completed.stderr
    return tmp_path / name


def newer_template(tmp_path: Path, version: str = "3") -> Path:
    """A copy of the installed template with its version raised and changes in the files a user edits and in others."""
    template = raised(resource_path("template"), tmp_path / f"template-{version}", version)
    context = json.loads((template / "cookiecutter.json").read_text())
    (template / "cookiecutter.json").write_text(json.dumps({**context, "new_question": "a default"}, indent=2))
    root = template / SLUG
    edit(root / "config/pilot.json", '"min_chars": 40', '"min_chars": 20')
    edit(root / "README.md", "(template version 2)", "(template version 3)")
    edit(root / PACKAGE / "model.py", "torch.set_num_threads(1)\n", "torch.set_num_threads(1)  # template 3\n")
    edit(root / "catalog.toml", "# Prices in USD", "# Prices (template 3) in USD")
    edit(root / ".dockerignore", "*.bak\n", "*.bak\n*.orig\n")
    (root / "NOTES.md").write_text("Notes of {{ cookiecutter.project_name }}, answer {{ cookiecutter.new_question }}.\n")
    (root / "runs/.gitkeep").unlink()
    (root / "campaign").mkdir()
    plan = (root / "plan.toml").read_text()
    (root / "campaign/plan.toml").write_text(plan.replace("# bundler never rewrites", "# bundler (template 3) never rewrites"))
    (root / "plan.toml").unlink()
    return template


def user_edits(project: Path) -> None:
    edit(project / "config/pilot.json", '"steps": 1,', '"steps": 3,')
    (project / "README.md").write_text((project / "README.md").read_text() + "\n## Our notes\n\nKept by us.\n")
    edit(project / "src/example/model.py", "torch.set_num_threads(1)\n", "torch.set_num_threads(2)\n")
    edit(project / "plan.toml", 'card = "RTX 4090"', 'card = "H100 SXM"')
    (project / "catalog.toml").unlink()
    (project / "src/example/extra.py").write_text("EXTRA = 1\n")


@pytest.fixture
def edited(tmp_path) -> tuple[Path, Path]:
    project = new_project(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)  # a dirty tree: nothing is committed
    user_edits(project)
    return project, newer_template(tmp_path)


def test_every_user_edit_survives_and_every_template_change_lands(edited, tmp_path):
    project, template = edited
    before = hashes(project)
    dry = run_cli("update", str(project), "--template", str(template), "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert hashes(project) == before and not (project / ".bundler/backups").exists()
    planned = {c["path"]: c["kind"] for c in json.loads(dry.stdout)["changes"]}

    completed = run_cli("update", str(project), "--template", str(template), "--json")
    assert completed.returncode == 1, completed.stderr  # conflicts left to resolve
    report = json.loads(completed.stdout)
    kinds = {c["path"]: c["kind"] for c in report["changes"]}
    assert kinds == planned
    assert kinds == {
        ".dockerignore": "updated",
        "NOTES.md": "added",
        "README.md": "merged",
        "campaign/plan.toml": "moved",
        "catalog.toml": "deleted",
        "config/pilot.json": "merged",
        "runs/.gitkeep": "removed",
        "src/example/model.py": "conflict",
    }
    assert report["conflicts"] == ["src/example/model.py"] and report["git_dirty"] is True
    assert "src/example/model.py" in completed.stderr and "uncommitted changes" in completed.stderr

    config = json.loads((project / "config/pilot.json").read_text())
    assert config["training"]["steps"] == 3 and config["limits"]["min_chars"] == 20
    readme = (project / "README.md").read_text()
    assert "(template version 3)" in readme and readme.endswith("## Our notes\n\nKept by us.\n")
    model = (project / "src/example/model.py").read_text()
    rendered = (template / SLUG / PACKAGE / "model.py").read_text()
    assert resolved(model, "yours") == before_text(project, report, "src/example/model.py")
    assert resolved(model, "template") == rendered
    assert model.count("<<<<<<< ") == 1 and not list(project.rglob("*.rej"))
    moved = (project / "campaign/plan.toml").read_text()
    assert 'card = "H100 SXM"' in moved and "(template 3) never rewrites" in moved and not (project / "plan.toml").exists()
    assert not (project / "catalog.toml").exists() and not (project / "runs/.gitkeep").exists()
    assert (project / "NOTES.md").read_text() == "Notes of Example, answer a default.\n"
    assert (project / ".dockerignore").read_text() == (template / SLUG / ".dockerignore").read_text()
    record = json.loads((project / ".bundler-answers.json").read_text())
    assert record["template_version"] == "3" and record["answers"]["new_question"] == "a default"
    assert record["answers"]["project_name"] == "Example"

    after = hashes(project)
    touched = set(kinds) | {"plan.toml", ".bundler-answers.json", BASE_FILE}
    backups = {path for path in after if path.startswith(".bundler/backups/")}
    assert {path: after[path] for path in after if path not in touched | backups} == {
        path: before[path] for path in before if path not in touched
    }
    stamp = report["backup_dir"]
    assert {p[len(stamp) + 1 :] for p in backups} == {
        ".dockerignore",
        "README.md",
        "config/pilot.json",
        "src/example/model.py",
        "plan.toml",
        "runs/.gitkeep",
        ".bundler-answers.json",
        BASE_FILE,
    }
    assert all(after[f"{stamp}/{p}"] == before[p] for p in ("README.md", "plan.toml", "src/example/model.py"))
    status = ["git", "status", "--porcelain", "--untracked-files=all"]
    untracked = subprocess.run(status, cwd=project, capture_output=True, text=True, check=True).stdout
    assert f"?? {BASE_FILE}" in untracked and ".bundler/backups" not in untracked  # the render is versioned, backups are not

    again = run_cli("update", str(project), "--template", str(template))
    assert again.returncode == 0, again.stderr
    assert "already at template 3" in again.stderr and hashes(project) == after

    four = raised(template, tmp_path / "template-4", "4")
    unresolved = run_cli("update", str(project), "--template", str(four))
    assert unresolved.returncode == 3 and "still holds the conflict markers" in unresolved.stderr and hashes(project) == after
    (project / "src/example/model.py").write_text(resolved(model, "yours"))
    assert run_cli("update", str(project), "--template", str(four)).returncode == 0


def before_text(project: Path, report: dict, path: str) -> str:
    return (project / report["backup_dir"] / path).read_text()


def interrupted_update(project: Path, template: Path, how: str) -> subprocess.CompletedProcess:
    """The real CLI, stopped at the third file moved into the project: by Ctrl-C, or killed outright."""
    stop = "raise KeyboardInterrupt" if how == "ctrl-c" else "os.kill(os.getpid(), signal.SIGKILL)"
    program = (
        "import os, signal, sys\n"
        "from bundler import fsutil\n"
        "real, calls = os.replace, []\n"
        "def replace(source, target):\n"
        "    if '.bundler/backups' not in str(target):  # a move into the project, not a file staged\n"
        "        calls.append(target)\n"
        "    if len(calls) == 3:\n"
        f"        {stop}\n"
        "    real(source, target)\n"
        "fsutil.os.replace = replace\n"
        "from bundler.cli import main\n"
        "sys.argv = ['bundler', *sys.argv[1:]]\n"
        "main()\n"
    )
    command = [sys.executable, "-c", program, "update", str(project), "--template", str(template)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_an_interrupted_update_leaves_the_project_as_it_was(edited):
    project, template = edited
    before = hashes(project)
    completed = interrupted_update(project, template, "ctrl-c")
    assert completed.returncode == 130, completed.stderr
    assert hashes(project) == before and not (project / ".bundler/backups").exists()


def test_an_update_killed_half_way_is_put_back_by_the_next_one(edited, tmp_path):
    project, template = edited
    before = hashes(project)
    assert interrupted_update(project, template, "kill").returncode == -9
    half = hashes(project)
    assert [path for path in before if not path.startswith(".bundler") and half.get(path) != before[path]]  # half written
    assert run_cli("update", str(project), "--template", str(template), "--dry-run").returncode == 3
    completed = run_cli("update", str(project), "--template", str(template), "--json")
    assert completed.returncode == 1, completed.stderr
    assert len(json.loads(completed.stdout)["put_back"]) == 1 and "interrupted update was undone" in completed.stderr
    twin = new_project(tmp_path / "twin")
    user_edits(twin)
    assert run_cli("update", str(twin), "--template", str(template)).returncode == 1
    own = {path: digest for path, digest in hashes(project).items() if not path.startswith(".bundler")}
    assert own == {path: digest for path, digest in hashes(twin).items() if not path.startswith(".bundler")}


def test_check_reports_a_template_older_than_the_installed_one(tmp_path):
    project = new_project(tmp_path)
    item = check_item(project)
    assert item["status"] == "pass" and "template 2" in item["detail"]
    answers = project / ".bundler-answers.json"
    record = json.loads(answers.read_text())
    answers.write_text(json.dumps({**record, "template_version": "1"}))
    item = check_item(project)
    assert item["status"] == "fail" and "template 1" in item["detail"] and "2" in item["detail"]
    assert "bundler update" in item["hint"]
    answers.unlink()
    assert check_item(project)["status"] == "not checked"


def check_item(project: Path) -> dict:
    completed = run_cli("check", str(project), "--json")
    items = json.loads(completed.stdout)["items"]
    return next(i for i in items if i["name"].startswith("template"))


def test_a_project_made_before_the_stored_render_is_updated_from_its_version_re_rendered(tmp_path):
    project = new_project(tmp_path)
    shutil.rmtree(project / ".bundler")
    answers = project / ".bundler-answers.json"
    record = json.loads(answers.read_text())
    del record["base"]
    answers.write_text(json.dumps(record))
    edit(project / "config/pilot.json", '"steps": 1,', '"steps": 3,')
    before = hashes(project)
    current = run_cli("update", str(project), "--json")  # the installed template: current, and its render stored now
    assert current.returncode == 0 and json.loads(current.stdout)["stored"] is True, current.stderr
    own = {path: digest for path, digest in before.items() if not path.startswith(".bundler")}
    assert {path: digest for path, digest in hashes(project).items() if not path.startswith(".bundler")} == own
    assert json.loads(answers.read_text())["base"]["sha256"] == hashlib.sha256((project / BASE_FILE).read_bytes()).hexdigest()
    shutil.rmtree(project / ".bundler")
    answers.write_text(json.dumps(record))
    completed = run_cli("update", str(project), "--template", str(newer_template(tmp_path)), "--json")
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert report["base"] == "re-rendered"
    config = json.loads((project / "config/pilot.json").read_text())
    assert config["training"]["steps"] == 3 and config["limits"]["min_chars"] == 20
    assert (project / BASE_FILE).is_file()

    record = json.loads(answers.read_text())
    del record["base"]
    answers.write_text(json.dumps({**record, "template_version": "1"}))
    shutil.rmtree(project / ".bundler")
    refused = run_cli("update", str(project))
    assert refused.returncode == 3
    assert "template-base.tar.gz is missing" in refused.stderr and "template 1" in refused.stderr and "Hint:" in refused.stderr


def test_a_project_not_made_by_bundler_new_is_refused_naming_what_is_missing(tmp_path):
    adopted = tmp_path / "adopted"
    adopted.mkdir()
    (adopted / "bundle.toml").write_text('[project]\nname = "x"\n')
    completed = run_cli("update", str(adopted))
    assert completed.returncode == 3
    assert ".bundler-answers.json" in completed.stderr and "bundler init" in completed.stderr and "Hint:" in completed.stderr
    assert sorted(os.listdir(adopted)) == ["bundle.toml"]


def test_bad_input_is_one_paragraph_and_an_exit_code(tmp_path):
    project = new_project(tmp_path)
    not_a_template = run_cli("update", str(project), "--template", str(tmp_path))
    assert not_a_template.returncode == 2 and "cookiecutter.json" in not_a_template.stderr
    assert "Traceback" not in not_a_template.stderr and not_a_template.stderr.count("\n") == 1
    newer = newer_template(tmp_path, "3")
    assert run_cli("update", str(project), "--template", str(newer)).returncode == 0
    back = run_cli("update", str(project))
    assert back.returncode == 2 and "never goes back" in back.stderr
    archive = project / BASE_FILE
    archive.write_bytes(archive.read_bytes() + b"x")
    damaged = run_cli("update", str(project), "--template", str(newer))
    assert damaged.returncode == 3 and "sha256" in damaged.stderr
    outside = tmp_path / "outside"
    shutil.move(project / ".bundler", outside)
    (project / ".bundler").symlink_to(outside)
    kept = hashes(outside)
    linked = run_cli("update", str(project), "--template", str(newer))
    assert linked.returncode == 3 and "symbolic link" in linked.stderr and hashes(outside) == kept


def test_the_stored_render_never_reaches_the_build_context(tmp_path):
    from bundler.image.context import collect

    project = new_project(tmp_path)
    included = collect(project).included
    assert "README.md" in included and not [path for path in included if path.startswith(".bundler/")]


def raised(source: Path, dest: Path, version: str) -> Path:
    shutil.copytree(source, dest)
    context = json.loads((dest / "cookiecutter.json").read_text())
    (dest / "cookiecutter.json").write_text(json.dumps({**context, "_template_version": version}, indent=2))
    return dest


def test_binary_files_are_never_merged_and_dropped_files_go_only_when_unchanged(tmp_path):
    project = new_project(tmp_path)
    three = raised(resource_path("template"), tmp_path / "t3", "3")
    (three / SLUG / "assets").mkdir()
    (three / SLUG / "assets/logo.bin").write_bytes(b"\x89PNG\0\0one")
    assert run_cli("update", str(project), "--template", str(three)).returncode == 0
    assert (project / "assets/logo.bin").read_bytes() == b"\x89PNG\0\0one"

    (project / "assets/logo.bin").write_bytes(b"\x89PNG\0\0mine")
    (project / ".gitignore").write_text((project / ".gitignore").read_text() + "mine/\n")
    (project / "TODO.md").write_text("our list\n")
    four = raised(three, tmp_path / "t4", "4")
    (four / SLUG / "assets/logo.bin").write_bytes(b"\x89PNG\0\0two")
    (four / SLUG / ".gitignore").unlink()
    (four / SLUG / "requirements.in").unlink()
    (four / SLUG / "TODO.md").write_text("the template's list\n")
    completed = run_cli("update", str(project), "--template", str(four), "--json")
    assert completed.returncode == 1, completed.stderr
    kinds = {c["path"]: (c["kind"], c["written"]) for c in json.loads(completed.stdout)["changes"]}
    assert kinds == {
        ".gitignore": ("kept", None),
        "TODO.md": ("conflict", None),
        "assets/logo.bin": ("beside", "assets/logo.bin.template-4"),
        "requirements.in": ("removed", None),
    }
    assert (project / "assets/logo.bin").read_bytes() == b"\x89PNG\0\0mine"
    assert (project / "assets/logo.bin.template-4").read_bytes() == b"\x89PNG\0\0two"
    assert (project / ".gitignore").read_text().endswith("mine/\n") and not (project / "requirements.in").exists()
    todo = (project / "TODO.md").read_text()
    assert resolved(todo, "yours") == "our list\n" and resolved(todo, "template") == "the template's list\n"


def test_a_tampered_record_never_writes_outside_the_project(tmp_path):
    import io
    import tarfile

    project = new_project(tmp_path)
    answers = project / ".bundler-answers.json"
    record = json.loads(answers.read_text())
    answers.write_text(json.dumps({**record, "answers": {**record["answers"], "package_name": "../../escaped"}}))
    newer = newer_template(tmp_path)
    before = hashes(tmp_path)
    completed = run_cli("update", str(project), "--template", str(newer))
    assert completed.returncode == 2 and "package name" in completed.stderr and hashes(tmp_path) == before

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    (project / BASE_FILE).write_bytes(raw.getvalue())
    digest = hashlib.sha256(raw.getvalue()).hexdigest()
    answers.write_text(json.dumps({**record, "base": {"file": BASE_FILE, "sha256": digest}}))
    before = hashes(tmp_path)
    completed = run_cli("update", str(project), "--template", str(newer))
    assert completed.returncode == 3 and "'../outside.txt'" in completed.stderr and hashes(tmp_path) == before


def sides(base: dict, theirs: dict, ours: dict, untouchable: frozenset = frozenset()):
    from bundler.scaffold.merge import Sides

    def encoded(files: dict) -> dict:
        return {path: text.encode() for path, text in files.items()}

    return Sides(encoded(base), encoded(theirs), encoded(ours), untouchable, "2", "3")


def kinds_of(changes) -> dict[str, tuple[str, str | None]]:
    return {change.path: (change.kind, change.removes) for change in changes}


def test_moves_follow_the_content_and_a_deleted_file_stays_away():
    from bundler.scaffold.merge import plan

    body = "".join(f"line {n}\n" for n in range(20))
    base = {"a.py": body, "b.py": body.replace("line 1\n", "b\n"), "c.py": "c\n", "link.py": "l\n"}
    ours = {"src/a.py": body.replace("line 19", "line 19 (template 3)"), "src/b.py": body.replace("line 1\n", "b\n"), "c.py": "c2\n"}
    ours["link.py"] = "l2\n"
    theirs = {"a.py": body.replace("line 0", "line 0 (yours)"), "c.py": "c2\n"}  # b.py deleted by the user
    changes = plan(sides(base, theirs, ours, frozenset({"link.py"})), lambda path: False)
    assert kinds_of(changes) == {
        "src/a.py": ("moved", "a.py"),
        "b.py": ("deleted", None),
        "link.py": ("skipped", None),
    }
    moved = next(change for change in changes if change.path == "src/a.py")
    assert moved.data == body.replace("line 0", "line 0 (yours)").replace("line 19", "line 19 (template 3)").encode()
