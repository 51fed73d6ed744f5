"""A non-editable install from the wheel carries template/, images/ and diagnostics/."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)], check=True, capture_output=True)
    return next(out.glob("gpu_bundler-*.whl"))


def test_wheel_ships_the_data_folders(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "bundler/_data/template/cookiecutter.json" in names
    assert "bundler/_data/diagnostics/run.py" in names
    assert any(name.startswith("bundler/_data/images/") for name in names)
    assert any("{{cookiecutter.package_name}}/pilot.py" in name for name in names)


def test_installed_wheel_scaffolds_a_project(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = venv / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", str(wheel)], check=True, capture_output=True)
    result = subprocess.run(
        [str(venv / "bin" / "bundler"), "new", str(tmp_path / "made"), "--no-input"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "made" / "src" / "made" / "pilot.py").is_file()
    assert (tmp_path / "made" / "diagnostics" / "run.py").is_file()
    # the installed copy, not this checkout, provided the template
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "from bundler.resources import resource_path; print(resource_path('template'))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.strip()
    assert where.startswith(str(venv)) and where.endswith("_data/template")
