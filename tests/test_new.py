import hashlib
import json
import re

import pytest

from bundler import __version__, scaffold
from bundler.errors import ExistsError, UsageError
from bundler.target.bundle import load_bundle
from tests.conftest import run_cli, scaffold_project

EXPECTED_FILES = {
    "README.md",
    "bundle.toml",
    "requirements.in",
    "config/pilot.json",
    "data/pilot/MANIFEST.json",
    "src/example/__init__.py",
    "src/example/pilot.py",
    "src/example/model.py",
    "src/example/evidence/__init__.py",
    "src/example/evidence/trial.py",
    "src/example/evidence/reload.py",
    "runs/.gitkeep",
    "diagnostics/run.py",
    ".gitignore",
    ".dockerignore",
    ".bundler-answers.json",
}


def test_new_renders_the_portable_layout(tmp_path):
    result = run_cli("new", str(tmp_path / "example"), "--no-input", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    project = tmp_path / "example"
    assert payload["dest"] == str(project)
    files = {p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()}
    assert files >= EXPECTED_FILES
    assert sum(1 for f in files if f.startswith("data/pilot/doc-")) == 12


def test_what_a_user_edits_is_small_and_ships_no_test_hooks(example_project):
    package = example_project / "src/example"
    surface = sum(len((package / name).read_text().splitlines()) for name in ("model.py", "pilot.py", "__init__.py"))
    assert surface <= 150, surface
    shipped = "\n".join(p.read_text() for p in package.rglob("*.py"))
    assert not re.search(r"\bfaults?\b|PILOT_FAULT|SIGKILL|os\.kill", shipped)


def test_the_generated_code_is_clean_and_runs_on_python_3_10(example_project):
    import subprocess
    import sys

    src = str(example_project / "src")
    lint = [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--line-length", "140", "--target-version", "py310"]
    rules = ["--select", "E,F,W,I,B,UP,SIM", src]
    checked = subprocess.run([*lint, *rules], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout[-3000:]
    formatted = [sys.executable, "-m", "ruff", "format", "--no-cache", "--isolated", "--line-length", "140", "--check", src]
    assert subprocess.run(formatted, capture_output=True, text=True, timeout=120).returncode == 0
    floor = [
        sys.executable,
        "-c",
        "import sys; from vermin.main import main; sys.exit(main())",
        "-t=3.10-",
        "--no-tips",
        "--violations",
        src,
    ]
    vermin = subprocess.run(floor, capture_output=True, text=True, timeout=120)
    assert vermin.returncode == 0, vermin.stdout[-3000:]


def test_generated_bundle_toml_loads_as_a_target(example_project):
    bundle = load_bundle(example_project)
    assert bundle.package == "example"
    assert bundle.target.backend == "cpu"
    assert bundle.target.accelerator == ""
    assert bundle.target.torch == "2.13.0"
    assert bundle.target.python == "3.11"
    assert "example.pilot" in bundle.entry


@pytest.mark.parametrize(("backend", "accelerator"), [("cuda", "13.0"), ("rocm", "7.2")])
def test_gpu_backends_get_an_accelerator_version(tmp_path, backend, accelerator):
    result = run_cli("new", str(tmp_path / "p"), "--no-input", "--backend", backend)
    assert result.returncode == 0, result.stderr
    target = load_bundle(tmp_path / "p").target
    assert (target.backend, target.accelerator) == (backend, accelerator)


def test_set_overrides_any_template_variable(tmp_path):
    project = scaffold_project(
        tmp_path / "p", python_version="3.12", package_name="my_pilot", categories="invoice,contract,support_ticket,research_abstract,memo"
    )
    bundle = load_bundle(project)
    assert bundle.target.python == "3.12"
    assert bundle.package == "my_pilot"
    assert (project / "src/my_pilot/pilot.py").is_file()
    config = json.loads((project / "config/pilot.json").read_text())
    assert config["categories"][-1] == "memo"
    assert bundle.target.base_image == "python:3.12-slim-bookworm"


def test_answers_and_versions_are_recorded_in_the_project(example_project):
    record = json.loads((example_project / ".bundler-answers.json").read_text())
    assert record["bundler_version"] == __version__
    assert record["template_version"] == scaffold.template_version()
    assert record["answers"]["package_name"] == "example"
    assert record["answers"]["backend"] == "cpu"


def test_pilot_manifest_matches_the_twelve_documents(example_project):
    manifest = json.loads((example_project / "data/pilot/MANIFEST.json").read_text())
    documents = manifest["documents"]
    assert len(documents) == 12
    assert len({d["id"] for d in documents}) == 12
    for entry in documents:
        data = (example_project / "data/pilot" / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    rejects = [d for d in documents if d["expect"] == "reject"]
    assert [d["id"] for d in rejects] == ["doc-12"]
    with pytest.raises(UnicodeDecodeError):
        (example_project / "data/pilot/doc-12.txt").read_bytes().decode("utf-8")


def test_documents_have_clearly_different_lengths(example_project):
    words = sorted(len((example_project / f"data/pilot/doc-{i:02d}.txt").read_text().split()) for i in range(1, 12))
    assert words[0] < 100 and words[-1] > 1500


def test_ignore_files_keep_secrets_and_runs_out(example_project):
    for name in (".gitignore", ".dockerignore"):
        rules = (example_project / name).read_text()
        for pattern in (".env", ".pem", ".netrc", ".pypirc", "id_rsa", "runs/"):
            assert pattern in rules, (name, pattern)


class TestErrors:
    def test_non_empty_dest_is_refused_untouched(self, tmp_path):
        dest = tmp_path / "taken"
        dest.mkdir()
        (dest / "thesis.tex").write_text("years of work")
        with pytest.raises(ExistsError) as caught:
            scaffold_project(dest)
        assert caught.value.path == dest
        assert [p.name for p in dest.iterdir()] == ["thesis.tex"]
        assert (dest / "thesis.tex").read_text() == "years of work"

    def test_empty_dest_is_used(self, tmp_path):
        dest = tmp_path / "empty"
        dest.mkdir()
        assert (scaffold_project(dest) / "bundle.toml").is_file()

    @pytest.mark.parametrize("package", ["../x", "class", "my pilot", "1abc", "naïve"])
    def test_invalid_package_name(self, tmp_path, package):
        result = run_cli("new", str(tmp_path / "p"), "--no-input", "--set", f"package_name={package}")
        assert result.returncode == 2
        assert "package name" in result.stderr and repr(package) in result.stderr
        assert not (tmp_path / "p").exists()

    def test_unknown_backend(self, tmp_path):
        result = run_cli("new", str(tmp_path / "p"), "--no-input", "--backend", "tpu")
        assert result.returncode == 2
        assert "unknown backend 'tpu'" in result.stderr and "cuda, rocm, cpu" in result.stderr
        assert not (tmp_path / "p").exists()

    def test_unknown_template_variable(self, tmp_path):
        with pytest.raises(UsageError, match="names no template variable"):
            scaffold.build_answers(tmp_path / "p", name=None, backend=None, settings={"colour": "red"})

    def test_malformed_set(self, tmp_path):
        result = run_cli("new", str(tmp_path / "p"), "--no-input", "--set", "python_version")
        assert result.returncode == 2 and "KEY=VALUE" in result.stderr

    @pytest.mark.parametrize(
        ("key", "value", "words"),
        [
            ("torch_version", "2.13", "exact release"),
            ("python_version", "python3", "like 3.11"),
            ("categories", "invoice,Invoice!", "lowercase"),
            ("categories", "memo,letter", "leave out"),
            ("size_budget_mb", "-5", "megabytes"),
        ],
    )
    def test_invalid_answers_are_refused_before_writing(self, tmp_path, key, value, words):
        with pytest.raises(UsageError, match=words):
            scaffold.build_answers(tmp_path / "p", name=None, backend=None, settings={key: value})
        assert not (tmp_path / "p").exists()

    def test_failure_half_way_leaves_no_folder(self, tmp_path, monkeypatch):
        def broken_copytree(*args, **kwargs):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(scaffold.shutil, "copytree", broken_copytree)
        with pytest.raises(OSError):
            scaffold_project(tmp_path / "p")
        assert list(tmp_path.iterdir()) == []


def test_new_is_not_interactive_without_a_terminal(tmp_path):
    # stdin is not a TTY under subprocess: no prompt may block even without --no-input.
    result = run_cli("new", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "p" / "bundle.toml").is_file()
