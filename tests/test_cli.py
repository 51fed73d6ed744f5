import json
import subprocess
import sys

from bundler import __version__
from tests.conftest import run_cli

HEAVY = ("docker", "cookiecutter", "piptools", "torch", "jinja2")


def test_help_lists_commands_and_exits_zero():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "new" in result.stdout


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"bundler {__version__}"


def test_importing_the_cli_loads_no_heavy_library():
    code = f"import sys, bundler.cli; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_expected_error_is_one_paragraph_without_traceback(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    result = run_cli("new", str(tmp_path / "taken"), "--no-input")
    assert result.returncode == 5
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("Error: ")
    assert "Hint: " in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_json_error_goes_to_stdout_with_exit_code(tmp_path):
    result = run_cli("new", str(tmp_path / "x"), "--no-input", "--set", "package_name=class", "--json")
    assert result.returncode == 2
    payload = json.loads(result.stdout)
    assert payload["ok"] is False
    assert payload["error"]["kind"] == "usage"
    assert payload["error"]["value"] == "class"
    assert payload["error"]["exit_code"] == 2


def test_python_dash_m_bundler_works():
    result = subprocess.run([sys.executable, "-m", "bundler", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and __version__ in result.stdout
