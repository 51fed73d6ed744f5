"""Every direct dependency imports: bdiag.imports on this host with real installed distributions
(dist-info folders on sys.path) whose modules succeed, raise, crash or hang, and the
diagnostics' packages stage that uses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "diagnostics"))
from bdiag import imports  # noqa: E402

OLD_ABI = (
    "raise ValueError('numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, got 88 from PyObject')"
)
PACKAGES = {  # distribution -> (version, {file: text}, top_level.txt or None for RECORD only)
    "goodpkg": (
        "1.0",
        {"goodpkg/__init__.py": "X = 1\n", "tests/__init__.py": "raise SystemExit('never imported')\n", "goodpkg/_ext.py": ""},
        "goodpkg\ntests\n_ext\next\n",
    ),  # fmt: skip
    "oldabi": ("1.2.2", {"oldabi/__init__.py": OLD_ABI + "\n"}, "oldabi\n"),
    "record-only": ("0.1", {"recordonly.py": "Y = 2\n"}, None),
    "wants-extra": ("3.0", {"wantsextra/__init__.py": "import not_installed_here\n"}, "wantsextra\n"),
    "needsnewer": ("2.0", {"needsnewer/__init__.py": "raise ImportError('pyarrow requires NumPy 2.0 or newer, found 1.26.4')\n"}, None),
    "crasher": ("1.0", {"crasher/__init__.py": "import os\nos.abort()\n"}, "crasher\n"),
    "sleeper": ("1.0", {"sleeper/__init__.py": "import time\ntime.sleep(60)\n"}, "sleeper\n"),
    # GitPython's way: the error repeats its cause's words; a lazy importer's way: the cause is what says more
    "repeats": (
        "1.0",
        {
            "repeats/__init__.py": "try:\n    raise ImportError('Bad git')\nexcept ImportError as e:\n"
            "    raise ImportError('Failed to initialize: Bad git') from e\n"
        },
        "repeats\n",
    ),
    # a wheel that installs examples and plugins beside its own module (pybullet: pybullet_envs, eglRenderer)
    "multi-mod": (
        "3.2",
        {
            "multi_mod/__init__.py": "",
            "multi_mod_envs/__init__.py": "raise AttributeError('env_specs')\n",
            "plugin.py": "raise SystemError('x')\n",
        },
        "multi_mod\nmulti_mod_envs\nplugin\n",
    ),
    "broken-own": (
        "1.0",
        {"broken_own/__init__.py": "raise ImportError('own')\n", "broken_own_extra.py": "raise ImportError('x')\n"},
        None,
    ),
    "hides": (
        "1.0",
        {
            "hides/__init__.py": "try:\n    raise OSError('libGL.so.1: cannot open shared object file')\n"
            "except OSError as e:\n    raise RuntimeError('Failed to import hides.models') from e\n"
        },
        "hides\n",
    ),
}


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    """A folder of installed distributions, seen by this process and by the children."""
    folder = tmp_path / "site"
    for name, (version, files, top_level) in PACKAGES.items():
        info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        if top_level is not None:
            (info / "top_level.txt").write_text(top_level)
        record = [f"{path},," for path in files] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
        (info / "RECORD").write_text("\n".join(record) + "\n")
        for path, text in files.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", str(folder))
    return folder


def lock_with(folder: Path, direct: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"{name}=={PACKAGES[name][0]} \\\n    --hash=sha256:{'0' * 64}" for name in direct if name in PACKAGES]
    (folder / "requirements-rebuild.txt").write_text("--index-url https://pypi.org/simple\n\n" + "\n".join(lines) + "\n")
    (folder / "requirements-rebuild.json").write_text(json.dumps({"format": 1, "direct": direct}))
    return folder / "requirements-rebuild.txt"


def test_failures_name_the_module_the_error_and_a_hint(site, tmp_path):
    lock = lock_with(tmp_path / "p", ["goodpkg", "oldabi", "record-only", "wants-extra", "needsnewer", "not-installed"])
    report = imports.check(str(lock), sys.executable, budget_s=60)
    # tests/ is no module of goodpkg; ext is named by top_level.txt but installed inside goodpkg (as pesq's cypesq is)
    assert (report["distributions"], report["modules"], report["imported"]) == (5, 5, 2)
    failed = {item["module"] or item["distribution"]: item for item in report["failures"]}
    assert set(failed) == {"oldabi", "wantsextra", "needsnewer", "not-installed"}
    assert "pin an older pyarrow made for NumPy 1.x" in failed["needsnewer"]["hint"]
    assert failed["oldabi"]["distribution"] == "oldabi" and "numpy.dtype size changed" in failed["oldabi"]["error"]
    assert "pin `numpy<2`" in failed["oldabi"]["hint"] and "newer release of oldabi" in failed["oldabi"]["hint"]
    assert "not_installed_here" in failed["wantsextra"]["hint"] and failed["not-installed"]["status"] == "missing"


def test_a_crash_or_a_hang_is_named_and_the_other_modules_still_run(site):
    results = imports.run_imports(sys.executable, ["crasher", "sleeper", "goodpkg"], budget_s=60, per_module_s=3)
    assert results["crasher"]["status"] == "crash" and "signal 6" in results["crasher"]["error"]
    assert results["sleeper"]["status"] == "timeout" and "3 s" in results["sleeper"]["error"]
    assert results["goodpkg"]["status"] == "ok"


def test_the_time_bound_leaves_the_rest_unchecked_and_says_so(site):
    results = imports.run_imports(sys.executable, ["sleeper", "goodpkg"], budget_s=2, per_module_s=30)
    assert results["sleeper"]["status"] == "timeout"
    assert results["goodpkg"]["status"] == "unchecked" and "bound was reached" in results["goodpkg"]["error"]


def test_gpu_only_failures_are_warnings_for_a_gpu_target_on_a_host_without_one(site, tmp_path):
    (site / "oldabi" / "__init__.py").write_text(
        "raise OSError('libcuda.so.1: cannot open shared object file: No such file or directory')\n"
    )
    lock = lock_with(tmp_path / "p", ["oldabi"])
    gpu = imports.check(str(lock), sys.executable, budget_s=60, gpu_target=True)
    cpu = imports.check(str(lock), sys.executable, budget_s=60, gpu_target=False)
    assert not gpu["failures"] and gpu["warnings"][0]["module"] == "oldabi"
    assert cpu["failures"][0]["module"] == "oldabi" and "libcuda.so.1" in cpu["failures"][0]["hint"]


def test_the_script_form_prints_one_document_and_exits_1_on_a_failure(site, tmp_path):
    lock = lock_with(tmp_path / "p", ["goodpkg", "oldabi"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "diagnostics"), str(site)])}
    done = subprocess.run(
        [sys.executable, "-m", "bdiag.imports", "--lock", str(lock)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["failures"][0]["module"] == "oldabi"


def test_the_packages_stage_fails_naming_the_module_that_does_not_import(site, tmp_path):
    project = tmp_path / "p"
    lock_with(project, ["goodpkg", "oldabi"])
    (project / "bundle.toml").write_text(
        '[project]\nname = "P"\npackage = "p"\nentry = "python -m p"\n[target]\nbackend = "cpu"\naccelerator = ""\n'
        f'torch = "2.13.0"\npython = "{sys.version_info.major}.{sys.version_info.minor}"\n[build]\nlock = "requirements-rebuild.txt"\n'
    )
    report_path = tmp_path / "report.json"
    python = getattr(sys, "_base_executable", sys.executable)  # not a venv whose own setuptools fails `pip check`
    done = subprocess.run(
        [python, str(REPO / "diagnostics" / "run.py"), "--project", str(project), "--json", str(report_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 12, done.stdout + done.stderr  # 10 + stage 2
    stage = json.loads(report_path.read_text())["stages"][1]
    assert stage["name"] == "packages" and stage["status"] == "fail"
    assert "oldabi (oldabi 1.2.2): ValueError: numpy.dtype size changed" in stage["messages"][0]
    assert "numpy<2" in stage["hint"] and stage["values"]["imports"]["imported"] == 1


def test_the_hints_name_the_file_the_lock_is_made_from(site):
    """An adopted project locks its own requirements.txt ([build] requirements): the hint says to edit that file."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "diagnostics"), str(site)])}
    argv = [sys.executable, "-m", "bdiag.imports", "--direct", json.dumps(["wants-extra"]), "--input", "requirements.txt"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr
    hint = json.loads(done.stdout)["failures"][0]["hint"]
    assert "not_installed_here" in hint and "to requirements.txt" in hint and "requirements.in" not in hint


def test_a_dropped_module_is_told_from_the_one_table_by_the_diagnostics_the_lock_and_init():
    from bundler.contracts.dropped import DROPPED, pin_that_ships

    hint_for = imports.hint_for
    shipper, release, _ = DROPPED["pkg_resources"]
    hint = hint_for("ModuleNotFoundError: No module named 'pkg_resources.extern'", "oldpkg", "1.0", "reqs.in")
    assert f"which {shipper} dropped in release {release}" in hint and f"pin `{shipper}<{release}` in reqs.in" in hint
    assert pin_that_ships("pkg_resources.extern") == f"{shipper}<{release}" and pin_that_ships("yaml") == ""
    assert "pin `" not in hint_for("ModuleNotFoundError: No module named 'yaml'", "oldpkg", "1.0")


def test_an_errors_cause_is_named_only_where_it_says_more_than_the_error(site):
    results = imports.run_imports(sys.executable, ["repeats", "hides"], budget_s=60)
    assert results["repeats"]["error"] == "ImportError: Failed to initialize: Bad git"
    assert results["hides"]["error"] == (
        "RuntimeError: Failed to import hides.models (caused by OSError: libGL.so.1: cannot open shared object file)"
    )


def test_another_module_of_a_wheel_whose_own_module_imports_is_a_warning_not_a_failure(site, tmp_path):
    report = imports.check(str(lock_with(tmp_path / "p", ["multi-mod", "broken-own"])), sys.executable, budget_s=60)
    assert {item["module"] for item in report["warnings"]} == {"multi_mod_envs", "plugin"}
    assert "multi-mod's own module multi_mod imports" in report["warnings"][0]["hint"]
    # its own module failing: every module of it counts
    assert {item["module"] for item in report["failures"]} == {"broken_own", "broken_own_extra"}


def test_a_compiled_library_built_against_another_torch_is_named_as_such_with_the_route():
    error = (
        "ImportError: /opt/venv/lib/python3.11/site-packages/harmonics/_C.cpython-311-x86_64-linux-gnu.so: undefined symbol: "
        "_ZNR5torch7Library4_defEON3c1014FunctionSchemaEPNS1_12OperatorNameE"
    )
    hint = imports.hint_for(error, "harmonics", "0.9.1", "reqs.in")
    assert "harmonics 0.9.1's compiled library was built against another torch" in hint and "in reqs.in" in hint
    assert "the project was tested with" not in hint
    other = imports.hint_for("ImportError: x.so: undefined symbol: _ZN5boost6system15system_categoryEv", "b", "1")
    assert "another torch" not in other  # a symbol of another library says nothing about torch
