"""`bundler init`: real repositories' shapes (small fixtures of our own) adopted through the
real CLI; what it reads, infers and writes; what it refuses; nothing of the repository
changed; and the commands that follow working on the adopted folder."""

from __future__ import annotations

import json

import pytest
import tomlkit

from bundler.adopt.poetry import NotTranslatable, translate
from bundler.target.bundle import load_bundle
from tests.adopt_support import SHAPES, tree_hashes, write_shape
from tests.conftest import run_cli

# shape -> (the source used, the lock's input, a line it must contain, the entry)
EXPECTED = {
    "requirements": ("requirements.txt", "requirements.txt", "tqdm>=4.60", "python train.py"),
    "pep621": ("pyproject.toml", "requirements.in", "tqdm>=4.60", "tiny-train"),  # installed with the project's wheel
    "setuppy": ("setup.py", "requirements.in", "tqdm>=4.60", "old-train"),
    "srclayout": ("pyproject.toml", "requirements.in", "packaging>=23", "src-hello"),
    "poetry": ("pyproject.toml", "requirements.in", "tqdm>=4.66,<4.67", "python -m poetpkg.train"),
    "conda": ("environment.yml", "requirements.in", "opencv-python==4.8.*", "python scripts/train.py"),
    "pipfile": ("Pipfile", "requirements.in", "tqdm>=4.60", "python main.py"),
}


def adopt(root, *flags):
    result = run_cli("init", str(root), "--no-input", "--json", *flags)
    return result, (json.loads(result.stdout) if result.stdout.strip() else {})


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_is_adopted_in_place_and_nothing_of_it_changes(tmp_path, shape):
    root = write_shape(tmp_path / shape, shape)
    before = tree_hashes(root)
    result, data = adopt(root, "--cpu")
    assert result.returncode == 0, result.stderr
    source, lock_input, line, entry = EXPECTED[shape]
    assert data["source"]["file"] == source and line in data["source"]["requirements"]
    assert data["lock_input"] == lock_input and data["entry"]["command"] == entry
    after = tree_hashes(root)
    assert {name: after[name] for name in before} == before  # every file of the repository is as it was
    added = set(after) - set(before)
    assert {"bundle.toml", ".dockerignore", "plan.toml", "catalog.toml", "runs/.gitignore", "diagnostics/run.py"} <= added
    assert ("requirements.in" in added) == (lock_input == "requirements.in")
    bundle = load_bundle(root)
    assert bundle.entry == entry and bundle.requirements == lock_input and bundle.target.backend == "cpu"
    packaged = shape in ("pep621", "setuppy", "poetry", "srclayout")  # a package of its own: its wheel goes into the image
    assert bundle.install_project == packaged == data["install_project"]
    if lock_input == "requirements.in":  # each line says where it came from
        written = [text for text in (root / "requirements.in").read_text().splitlines() if text and not text.startswith("#")]
        assert written and all("  # " in text for text in written)
    checked = run_cli("check", str(root), "--json")
    items = {item["name"]: item["status"] for item in json.loads(checked.stdout)["items"]}
    assert not any("pilot" in name or "README" in name for name in items)  # the template's pilot items are not asked of it
    assert items["entry command declared"] == "pass" and items[".dockerignore covers secrets and runs/"] == "pass"
    assert items["lock present and fresh"] == "fail" and checked.returncode == 1  # `bundler lock` comes next


def test_what_each_reader_reports_beside_the_requirements(tmp_path):
    _, setup = adopt(write_shape(tmp_path / "s", "setuppy"), "--cpu")
    assert any(item.startswith("setup.py:14: extras_require is computed") for item in setup["unreadable"])
    _, conda = adopt(write_shape(tmp_path / "c", "conda"))
    assert any(item.startswith("libfrobnicate=1.0") for item in conda["unmapped"])
    assert conda["target"] | {"base_image": ""} == {
        "backend": "cuda",
        "accelerator": "12.1",
        "torch": "2.5.1",
        "python": "3.11",
        "platform": "linux_x86_64",
        "base_image": "",
    }
    assert "torch==2.5.1" in conda["source"]["requirements"] and not conda["guesses"]
    _, pipfile = adopt(write_shape(tmp_path / "p", "pipfile"), "--cpu")
    assert any("mylib" in item and "git" in item for item in pipfile["unreadable"])
    _, poetry = adopt(write_shape(tmp_path / "o", "poetry"), "--cpu")
    assert any(item.startswith("networkx") for item in poetry["left_out"]) and "pytest" not in " ".join(poetry["source"]["requirements"])
    _, graph = adopt(write_shape(tmp_path / "g", "poetry"), "--cpu", "--extra", "graph")
    assert "networkx>=3.0,<4.0" in graph["source"]["requirements"]
    _, plots = adopt(write_shape(tmp_path / "x", "pep621"), "--cpu", "--extra", "plots")
    assert "matplotlib" in plots["source"]["requirements"]


def test_several_sources_say_which_was_used_and_where_they_disagree(tmp_path):
    root = write_shape(tmp_path / "both", "pep621", {"requirements.txt": "tqdm==4.66.1\npackaging\n"})
    result, data = adopt(root, "--cpu")
    assert (
        result.returncode == 0 and data["source"]["file"] == "requirements.txt" and "also read: pyproject.toml" in data["source"]["reason"]
    )
    assert data["disagreements"] == ["tqdm: ==4.66.1 (requirements.txt:1) vs >=4.60 (pyproject.toml [project] dependencies)"]
    assert "disagree" in result.stderr


def test_poetrys_multiple_constraints_for_one_package_are_one_statement_not_a_disagreement(tmp_path):
    root = write_shape(tmp_path / "multi", "poetry")
    constraints = 'virtualenv = [\n  { version = "^20.4.3" },\n  { version = "<20.16.4", markers = "sys_platform == \'win32\'" },\n]\n'
    pyproject = (root / "pyproject.toml").read_text().replace('tqdm = "~4.66"\n', 'tqdm = "~4.66"\n' + constraints)
    (root / "pyproject.toml").write_text(pyproject)
    result, data = adopt(root, "--cpu")
    assert result.returncode == 0 and data["disagreements"] == [], data["disagreements"]
    written = (root / "requirements.in").read_text()
    assert "virtualenv>=20.4.3,<21.0.0 " in written and "virtualenv<20.16.4; (sys_platform == 'win32')" in written  # both kept


@pytest.mark.parametrize(
    ("files", "target", "adjusted"),
    [
        ({"requirements.txt": "torch==2.5.1+cu121\n"}, ("cuda", "12.1", "2.5.1"), False),
        (
            {"requirements.txt": "--extra-index-url https://download.pytorch.org/whl/cu118\ntorch==2.5.1\n"},
            ("cuda", "11.8", "2.5.1"),
            False,
        ),
        ({"requirements.txt": "torch==2.5.1\nnvidia-cublas-cu12\n"}, ("cuda", "12.4", "2.5.1"), False),
        ({"requirements.txt": "torch==2.0.1\n"}, ("cuda", None, "2.1.0"), True),  # not in the table: the nearest release
        ({"requirements.txt": "torch==2.5.1+cu130\n"}, ("cuda", "12.4", "2.5.1"), True),  # no such build: the nearest
        ({"requirements.txt": "torch==2.5.1+cpu\n", ".python-version": "3.10.4\n"}, ("cpu", "", "2.5.1"), False),
    ],
)
def test_the_target_is_read_from_what_the_project_states(tmp_path, files, target, adjusted):
    root = write_shape(tmp_path / "t", "requirements", files)
    result, data = adopt(root)
    assert result.returncode == 0, result.stderr
    backend, accelerator, torch = target
    assert (data["target"]["backend"], data["target"]["torch"]) == (backend, torch)
    assert accelerator is None or data["target"]["accelerator"] == accelerator
    assert bool(data["adjusted"]) == adjusted
    if ".python-version" in files:
        assert data["target"]["python"] == "3.10" and "Python 3.10: .python-version" in data["stated"]


def test_flags_override_what_the_project_states(tmp_path):
    root = write_shape(tmp_path / "f", "requirements", {"requirements.txt": "torch==2.5.1+cu121\n"})
    result, data = adopt(root, "--cpu", "--torch", "2.9.1", "--python", "3.12")
    assert result.returncode == 0, result.stderr
    assert (data["target"]["backend"], data["target"]["torch"], data["target"]["python"]) == ("cpu", "2.9.1", "3.12")


def refused(result, code: int, *words: str) -> str:
    assert result.returncode == code, (result.returncode, result.stderr)
    paragraph = result.stderr.strip()
    assert paragraph.startswith("Error: ") and "Hint: " in paragraph and "Traceback" not in paragraph and "\n" not in paragraph
    assert all(word in paragraph for word in words), paragraph
    return paragraph


def test_refusals_say_why_in_one_paragraph_and_change_nothing(tmp_path):
    project = write_shape(tmp_path / "done", "requirements")
    assert adopt(project, "--cpu")[0].returncode == 0
    before = tree_hashes(project)
    refused(run_cli("init", str(project), "--no-input"), 5, "already a bundler project", "Nothing was changed")
    assert tree_hashes(project) == before
    (tmp_path / "empty").mkdir()
    refused(run_cli("init", str(tmp_path / "empty"), "--no-input"), 3, "is empty")
    assert not any((tmp_path / "empty").iterdir())
    refused(run_cli("init", str(tmp_path / "missing"), "--no-input"), 2, "is not a folder")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "README.md").write_text("# notes\n")
    refused(run_cli("init", str(notes), "--no-input"), 3, "nothing to adopt")
    assert sorted(p.name for p in notes.iterdir()) == ["README.md"]
    both = write_shape(tmp_path / "both", "conda", {"requirements.txt": "torch==2.5.1+cu118\n"})
    before = tree_hashes(both)
    refused(run_cli("init", str(both), "--no-input"), 3, "cuda 11.8 (requirements.txt:1", "cuda 12.1 (environment.yml")
    assert tree_hashes(both) == before
    refused(run_cli("init", str(both), "--cpu", "--cuda", "12.1", "--no-input"), 2, "--cuda and --cpu")
    refused(run_cli("init", str(both), "--cpu", "--torch", "1.0.0", "--no-input"), 4, "torch 1.0.0")


def test_dry_run_prints_what_would_be_written_and_writes_nothing(tmp_path):
    root = write_shape(tmp_path / "dry", "pep621")
    before = tree_hashes(root)
    result, data = adopt(root, "--cpu", "--dry-run")
    assert result.returncode == 0 and data["dry_run"] is True
    assert tree_hashes(root) == before and not [p for p in root.iterdir() if p.name.startswith(".bundler-init")]
    assert tomlkit.parse(data["files"]["bundle.toml"])["project"]["entry"] == "tiny-train"
    assert tomlkit.parse(data["files"]["bundle.toml"])["build"]["install_project"] is True
    assert "--- bundle.toml" in run_cli("init", str(root), "--cpu", "--dry-run", "--no-input").stderr


def test_existing_ignore_files_and_dockerfiles_are_merged_only_losslessly(tmp_path):
    root = write_shape(tmp_path / "merge", "requirements", {".dockerignore": "# mine\n*.log\n.env\n", "Dockerfile": "FROM scratch\n"})
    result, data = adopt(root, "--cpu")
    assert result.returncode == 0, result.stderr
    text = (root / ".dockerignore").read_text()
    assert text.startswith("# mine\n*.log\n.env\n")  # the user's lines first, unchanged
    block = text[len("# mine\n*.log\n.env\n") :]
    assert block.startswith("# >>> bundler init") and block.rstrip().endswith("<<< bundler init <<<") and "runs/" in block
    assert data["appended"] == [".dockerignore"] and any(item.startswith("Dockerfile") for item in data["untouched"])
    assert (root / "Dockerfile").read_text() == "FROM scratch\n"
    nothing = write_shape(tmp_path / "nothing", "requirements", {".dockerignore": "*\n!requirements.txt\n"})
    result, data = adopt(nothing, "--cpu")
    assert result.returncode == 0 and (nothing / ".dockerignore").read_text() == "*\n!requirements.txt\n"
    assert any(item.startswith(".dockerignore (sends no code") for item in data["untouched"]) and "sends no code" in result.stderr


def test_new_dockerignore_keeps_gitignore_rules_and_leaves_out_unnamed_data(tmp_path):
    root = write_shape(tmp_path / "ignore", "requirements")
    assert adopt(root, "--cpu")[0].returncode == 0
    from bundler.image.context import collect

    included = collect(root).included
    assert "train.py" in included and "bundle.toml" in included and "requirements/common.txt" in included
    (root / "x.log").write_text("log\n")
    (root / "checkpoints").mkdir()
    (root / "checkpoints" / "last.pt").write_text("w")
    included = collect(root).included
    assert not any(name.startswith(("data/", "checkpoints/", "runs/")) or name.endswith(".log") for name in included)


def test_the_entry_found_runs_from_the_repository_root(tmp_path):
    import subprocess
    import sys

    # a console script (pep621, setuppy) runs once the project's wheel is installed: tests/test_init_build.py
    for shape, expected in (("poetry", "trained 3"), ("pipfile", "trained 3")):
        root = write_shape(tmp_path / shape, shape)
        assert adopt(root, "--cpu")[0].returncode == 0
        ran = subprocess.run(
            ["/bin/sh", "-c", load_bundle(root).entry],
            cwd=root,
            capture_output=True,
            text=True,
            env={"PATH": f"{sys.prefix}/bin:/usr/bin:/bin"},
        )
        assert ran.returncode == 0 and expected in ran.stdout, ran.stderr


def test_a_given_entry_reaches_bundle_toml_as_a_value(tmp_path):
    root = write_shape(tmp_path / "e", "requirements")
    entry = 'python train.py --note "a # b" \\\n--steps 2'
    result, _ = adopt(root, "--cpu", "--entry", entry)
    assert result.returncode == 0, result.stderr
    assert load_bundle(root).entry == entry


@pytest.mark.parametrize(
    ("poetry", "pep440"),
    [
        ("^1.2.3", ">=1.2.3,<2.0.0"),
        ("^0.2.3", ">=0.2.3,<0.3.0"),
        ("^0.0.3", ">=0.0.3,<0.0.4"),
        ("~1.2.3", ">=1.2.3,<1.3.0"),
        ("~1.2", ">=1.2,<1.3"),
        ("1.2.3", "==1.2.3"),
        ("1.2.*", "==1.2.*"),
        ("*", ""),
        (">=1.2,<2", ">=1.2,<2"),
        ("~=1.4", "~=1.4"),
    ],
)
def test_poetry_constraints_become_pep440(poetry, pep440):
    assert translate(poetry) == (pep440, "")


def test_poetry_labels_and_alternatives():
    assert translate("^2.1.0+cu121") == (">=2.1.0,<3.0.0", "cu121")
    with pytest.raises(NotTranslatable):
        translate("^1.0 || ^2.0")


def test_lock_reads_the_projects_own_requirements_file_and_its_includes(tmp_path, indexed):
    own = {"requirements.txt": "-r requirements/common.txt\njinja2>=3\n", "requirements/common.txt": "numpy>=1.26\n"}  # the fake index's
    root = write_shape(tmp_path / "own", "requirements", own)
    assert adopt(root, "--cpu", "--torch", "2.9.1", "--python", "3.11")[0].returncode == 0
    locked = run_cli("lock", str(root), "--json")
    assert locked.returncode == 0, locked.stderr
    lock = (root / "requirements-rebuild.txt").read_text()
    assert "jinja2==3.1.6" in lock and "numpy==2.1.0" in lock and "torch==2.9.1+cpu" in lock
    assert "requirements.txt does not list torch; torch==2.9.1+cpu is added from the Target." in json.loads(locked.stdout)["notes"]
    job = run_cli("job", "slurm", str(root), "--image", str(tmp_path / "own.sif"))  # a job of the adopted repository's own entry
    assert job.returncode == 0, job.stderr
    assert "torchrun" in (root / "job-slurm.sbatch").read_text() and " train.py" in (root / "job-slurm.sbatch").read_text()
    (root / "requirements" / "common.txt").write_text("numpy>=1.26,<3\n")  # an include edited: the lock is stale
    items = {item["name"]: item for item in json.loads(run_cli("check", str(root), "--json").stdout)["items"]}
    assert items["lock present and fresh"]["status"] == "fail" and "stale" in items["lock present and fresh"]["detail"]


def test_a_line_break_inside_a_value_never_becomes_a_line_of_a_written_file(tmp_path):
    pyproject = SHAPES["poetry"]["pyproject.toml"].replace('tqdm = "~4.66"', 'tqdm = "~4.66"\n"evil\\u2028--index-url" = "*"')
    root = write_shape(tmp_path / "lb", "poetry", {"pyproject.toml": pyproject})
    result, data = adopt(root, "--cpu", "--entry", "python -m poetpkg.train\u2028--evil")
    assert result.returncode == 0, result.stderr
    written = (root / "requirements.in").read_text()
    assert not any(line.startswith(("--index-url", "evil")) for line in written.splitlines())
    assert any("holds a line break" in item for item in data["unreadable"])
    assert load_bundle(root).entry == "python -m poetpkg.train\u2028--evil"  # a TOML value, escaped by tomlkit
    assert all(not line.startswith("--evil") for line in (root / "bundle.toml").read_text().splitlines())


def test_a_gitignore_rule_that_would_drop_tracked_code_is_not_carried_over(tmp_path):
    root = write_shape(
        tmp_path / "lib", "requirements", {".gitignore": "lib/\n*.log\n", "tiny/lib/ops.py": "X = 1\n", "tiny/__init__.py": ""}
    )
    assert adopt(root, "--cpu")[0].returncode == 0
    from bundler.image.context import collect

    assert "tiny/lib/ops.py" in collect(root).included and "**/*.log" in (root / ".dockerignore").read_text()


def test_modules_the_code_imports_that_no_requirement_provides_are_named(tmp_path):
    code = (
        "import os\nimport psutil\nimport yaml\nimport helpers\nfrom pkg_resources import parse_version\n"
        "try:\n    import fancy\nexcept ImportError:\n    fancy = None\nimport numpy as np\nimport torch\n"
    )  # torch's wheels do not depend on numpy: it is named unless a requirement provides it
    extra = {"train.py": code, "helpers.py": "", "requirements.txt": "pyyaml\n", "tests/test_x.py": "import pytest_only\n"}
    result, data = adopt(write_shape(tmp_path / "u", "requirements", extra), "--cpu")
    assert result.returncode == 0
    assert data["undeclared_imports"] == ["numpy (train.py:10)", "pkg_resources (train.py:5)", "psutil (train.py:2)"]
    assert "psutil (train.py:2)" in result.stderr and "add it to requirements.txt)" in result.stderr  # the lock's input
    extra["requirements.txt"] = "pyyaml\npsutil\nsetuptools<82\nnumpy\n"
    assert adopt(write_shape(tmp_path / "v", "requirements", extra), "--cpu")[1]["undeclared_imports"] == []


def test_a_script_inside_a_package_runs_as_a_module_and_next_steps_count_the_paths(tmp_path):
    readme = "Train with `python tinypkg/train.py --steps 5`.\n"
    root = write_shape(tmp_path / "m", "pep621", {"README.md": readme, "tinypkg/load.py": "DATA = '/home/alice/data/x.csv'\n"})
    pyproject = (root / "pyproject.toml").read_text().replace('[project.scripts]\ntiny-train = "tinypkg.train:main"\n', "")
    (root / "pyproject.toml").write_text(pyproject)
    result, data = adopt(root, "--cpu")
    assert result.returncode == 0 and data["entry"]["command"] == "python -m tinypkg.train" and data["path_findings"] == 1
    assert f"bundler paths {root}   # 1 machine-specific path(s) found" in result.stderr
    assert f"bundler lock {root}" in result.stderr
