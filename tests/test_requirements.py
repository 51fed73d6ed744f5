"""requirements.in as real projects write it: includes, markers, index lines, URL requirements,
project wheels — decided before anything is resolved (no test here resolves unless it says so)."""

from __future__ import annotations

import json

import pytest

from bundler.errors import LockError, ProjectFileError
from bundler.lock.lockfile import bundle_lock, parse_pins, split_lock
from bundler.lock.requirements import input_text
from bundler.lock.run import run_lock
from bundler.lock.sidecar import read_sidecar
from bundler.lock.spec import make_spec
from bundler.target.bundle import Target, load_bundle
from tests.deps_support import cpu_project, fake_pypi, project_wheel
from tests.lock_support import HOST_PYTHON

CPU = Target("cpu", "", "2.9.1", HOST_PYTHON)
X86 = 'platform_machine == "x86_64"'
ELSEWHERE = 'sys_platform == "darwin" or platform_machine == "aarch64"'


def spec_for(project, target=CPU):
    return make_spec(load_bundle(project), target)


# ----- includes ----------------------------------------------------------------------------
def test_an_include_inside_the_project_is_followed_and_hashed(tmp_path):
    project = cpu_project(tmp_path / "p", "-r requirements/common.txt\ntorch\n")
    (project / "requirements").mkdir()
    (project / "requirements" / "common.txt").write_text("numpy<3  # shared\n-r more.txt\n")
    (project / "requirements" / "more.txt").write_text("jinja2\n")
    spec = spec_for(project)
    assert spec.compiled_input == ["numpy<3", "jinja2", "torch==2.9.1+cpu"]
    assert spec.requirements.direct == ["numpy", "jinja2", "torch"]
    before = input_text(project)
    (project / "requirements" / "more.txt").write_text("jinja2<4\n")
    assert input_text(project) != before  # editing an included file makes the lock stale


@pytest.mark.parametrize(
    "line, words",
    [
        ("-r ../outside.txt", ["requirements.in:1", "outside the project"]),
        ("-r /etc/hosts", ["requirements.in:1", "outside the project"]),
        ("--requirement=missing.txt", ["requirements.in:1", "does not exist"]),
        ("-r https://example.org/common.txt", ["requirements.in:1", "URL"]),
    ],
)
def test_includes_that_cannot_travel_are_refused_naming_the_line(tmp_path, line, words):
    (tmp_path / "outside.txt").write_text("numpy\n")
    project = cpu_project(tmp_path / "p", f"{line}\ntorch\n")
    with pytest.raises(ProjectFileError) as refused:
        spec_for(project)
    assert all(word in refused.value.message for word in words), refused.value.message


def test_an_include_loop_is_refused(tmp_path):
    project = cpu_project(tmp_path / "p", "-r a.txt\n")
    (project / "a.txt").write_text("-r b.txt\n")
    (project / "b.txt").write_text("-r a.txt\n")
    with pytest.raises(ProjectFileError, match=r"b.txt:1: .*includes it back \(requirements.in -> a.txt -> b.txt -> a.txt\)"):
        spec_for(project)


# ----- markers -----------------------------------------------------------------------------
def test_exclusive_torch_lines_are_one_line_for_the_target(tmp_path):
    project = cpu_project(tmp_path / "p", f"torch==2.9.1+cpu; {X86}\ntorch==2.9.1; {ELSEWHERE}\npywin32; sys_platform == 'win32'\n")
    spec = spec_for(project)
    assert spec.compiled_input == ["torch==2.9.1+cpu"]
    assert spec.requirements.direct == ["torch"]
    skipped = [note for note in spec.notes if "does not apply to the Target" in note]
    assert len(skipped) == 2 and "requirements.in:2" in skipped[0] and "pywin32" in skipped[1]


def test_torch_lines_that_both_apply_are_refused_naming_both(tmp_path):
    project = cpu_project(tmp_path / "p", f"torch==2.9.1; {X86}\nnumpy\ntorch>=2.0; python_version >= '3.9'\n")
    with pytest.raises(LockError, match=r"requirements.in:3: torch is listed twice .*requirements.in:1"):
        spec_for(project)


def test_a_malformed_requirement_is_refused_naming_its_file_and_line(tmp_path):
    project = cpu_project(tmp_path / "p", "torch\n-r extra.txt\n")
    (project / "extra.txt").write_text("numpy\nnumpy >>= 2\n")
    with pytest.raises(ProjectFileError, match=r"extra.txt:2: 'numpy >>= 2' is not a requirement"):
        spec_for(project)


# ----- index lines -------------------------------------------------------------------------
def test_pytorch_index_of_the_targets_build_is_redundant_and_another_index_is_recorded(tmp_path):
    lines = "--extra-index-url https://download.pytorch.org/whl/cpu\n--extra-index-url=https://example.org/simple/\ntorch\n"
    spec = spec_for(cpu_project(tmp_path / "p", lines))
    assert spec.compiled_input == ["torch==2.9.1+cpu"]
    assert spec.extra_index_urls == ["https://pypi.org/simple", "https://example.org/simple"]
    assert any("requirements.in:1" in note and "redundant" in note for note in spec.notes)
    assert any("https://example.org/simple is kept as an extra index" in note for note in spec.notes)


@pytest.mark.parametrize(
    "line, error, words",
    [
        ("--extra-index-url https://download.pytorch.org/whl/cu121", LockError, ["another build", "cpu"]),
        ("--index-url https://example.org/simple", LockError, ["would replace PyPI"]),
        ("--extra-index-url http://example.org/simple", LockError, ["only https"]),
        ("--extra-index-url https://me:s3cret@example.org/simple", LockError, ["credentials", "***@example.org"]),
        ("--find-links https://data.example.org/whl.html", ProjectFileError, ["--find-links"]),
        ("--trusted-host example.org", ProjectFileError, ["certificate"]),
        ("-c constraints.txt", ProjectFileError, ["constraints"]),
    ],
)
def test_index_and_host_options_are_refused_naming_the_line(tmp_path, line, error, words):
    with pytest.raises(error) as refused:
        spec_for(cpu_project(tmp_path / "p", f"torch\n{line}\n"))
    assert "requirements.in:2" in refused.value.message and all(word in refused.value.message for word in words), refused.value.message
    assert "s3cret" not in refused.value.message + str(refused.value.value)


# ----- URL requirements and project wheels -----------------------------------------------------
@pytest.mark.parametrize(
    "line, kind, release",
    [
        ("numpy @ git+https://github.com/numpy/numpy.git@main", "a VCS checkout", "`numpy==2.1.0`"),
        ("git+https://github.com/pallets/jinja.git#egg=jinja2", "a VCS checkout", "`jinja2==3.1.6`"),
        ("https://example.org/packages/filelock-3.20.0-py3-none-any.whl", "a direct URL", "`filelock==3.20.0`"),
        ("-e ./vendor/thing", "an editable install", "a released version"),
        ("./vendor/thing", "a local folder or archive", "a released version"),
    ],
)
def test_url_vcs_and_editable_requirements_are_refused_with_the_routes_that_work(tmp_path, indexed, line, kind, release):
    with pytest.raises(LockError) as refused:
        spec_for(cpu_project(tmp_path / "p", f"torch\n{line}\n"))
    message, hint = refused.value.message, refused.value.hint
    assert message.startswith(f"requirements.in:2: {line!r} is {kind}"), message
    assert release in hint and "pip wheel --no-deps" in hint and "./wheels/" in hint, hint
    assert "Traceback" not in message + hint and "loosen" not in hint.lower()


def test_every_direct_reference_is_refused_in_one_paragraph_each_with_its_route(tmp_path, indexed):
    lines = ["git+https://github.com/pallets/jinja.git#egg=jinja2", "https://example.org/packages/filelock-3.20.0-py3-none-any.whl"]
    with pytest.raises(LockError) as refused:
        spec_for(cpu_project(tmp_path / "p", "torch\n" + "\n".join(lines) + "\n"))
    message, hint = refused.value.message, refused.value.hint
    assert message.startswith("2 lines of the requirements name code a hashed lock cannot pin"), message
    assert f"requirements.in:2: {lines[0]!r} is a VCS checkout; requirements.in:3: {lines[1]!r} is a direct URL." in message
    assert "requirements.in:2: pin the released version, `jinja2==3.1.6`" in hint and "`filelock==3.20.0`" in hint, hint
    assert hint.count("pip wheel --no-deps") == 2 and "./wheels/" in hint


@pytest.mark.parametrize("resolver", ["pip-tools", "uv"])
def test_a_project_wheel_is_resolved_from_the_project_and_locked_by_its_hash(tmp_path, indexed, resolver):
    project = cpu_project(tmp_path / "p", "torch\n./wheels/helper-0.3-py3-none-any.whl\n")
    wheel = project_wheel(project / "wheels", "helper", "0.3", "VALUE = 3\n")
    run_lock(load_bundle(project), cpu=True, resolver=resolver)
    text = (project / "requirements-rebuild.txt").read_text()
    pins = {pin.name: pin for pin in parse_pins(split_lock(text)[1])}
    digest = __import__("hashlib").sha256(wheel.read_bytes()).hexdigest()
    assert pins["helper"].version == "0.3" and pins["helper"].hashes == (digest,)
    assert str(project) not in text and "wheels/" not in text  # no host path in the lock
    side = read_sidecar(project / "requirements-rebuild.txt")
    assert side.project_wheels == [{"name": "helper", "version": "0.3", "path": "wheels/helper-0.3-py3-none-any.whl", "sha256": digest}]
    assert side.direct == ["torch", "helper"]
    project_wheel(project / "wheels", "helper-other", "0.1", "")  # unrelated files do not matter
    wheel.unlink()
    project_wheel(project / "wheels", "helper", "0.3", "VALUE = 4\n")  # same name, other bytes
    assert bundle_lock(load_bundle(project)).state.status == "stale"


# ----- a lock made from them -----------------------------------------------------------------
def test_a_lock_with_includes_and_markers_records_direct_dependencies_and_stays_fresh(tmp_path, indexed):
    project = cpu_project(tmp_path / "p", f"-r common.txt\ntorch==2.9.1+cpu; {X86}\ntorch==2.9.1; {ELSEWHERE}\n")
    (project / "common.txt").write_text("jinja2\nnumpy<2\n")
    result = run_lock(load_bundle(project), cpu=True)
    assert result.action == "written" and result.as_dict()["source_builds"] == []
    side = json.loads((project / "requirements-rebuild.json").read_text())
    assert side["direct"] == ["jinja2", "numpy", "torch"]
    assert bundle_lock(load_bundle(project)).state.status == "fresh"
    (project / "common.txt").write_text("jinja2\nnumpy\n")
    assert bundle_lock(load_bundle(project)).state.status == "stale"


def test_tightening_a_pin_that_the_previous_pins_contradict_resolves_again(tmp_path, monkeypatch):
    index = fake_pypi(
        tmp_path / "index",
        {"sklearnish": [("1.0", ["numpy<2"], None), ("2.0", ["numpy>=2"], None)]},
    )
    monkeypatch.setenv("BUNDLER_INDEX_MAP", index.index_map())
    monkeypatch.setenv("BUNDLER_PIP_RETRIES", "0")
    project = cpu_project(tmp_path / "p", "torch\nsklearnish\n")
    run_lock(load_bundle(project), cpu=True)
    first = {pin.name: pin.version for pin in parse_pins(split_lock((project / "requirements-rebuild.txt").read_text())[1])}
    assert (first["sklearnish"], first["numpy"]) == ("2.0", "2.1.0")
    (project / "requirements.in").write_text("torch\nsklearnish\nnumpy<2\n")
    result = run_lock(load_bundle(project))  # the previous lock pins sklearnish 2.0, which needs numpy>=2
    again = {pin.name: pin.version for pin in parse_pins(split_lock((project / "requirements-rebuild.txt").read_text())[1])}
    assert (again["sklearnish"], again["numpy"]) == ("1.0", "1.26.4")
    assert any("resolved again" in note for note in result.spec.notes), result.spec.notes
