"""Template answers: every answer is checked before anything is written (the Target against the
compatibility table, names against their shapes), and what is accepted reaches the files as a
value: a quote, a newline, a backslash or template syntax in a name never changes what
bundle.toml means, is never evaluated, and a non-ASCII name never silently becomes `n_c_d`.
"""

from __future__ import annotations

import json

import pytest

from bundler import tomlcompat
from tests.hostile.harness import assert_refused, run


@pytest.mark.parametrize(
    "settings, code, words",
    [
        (["--set", 'base_image=evil"\nx = 1'], 2, "is not an image reference"),
        (["--set", "base_image=python:3.11 slim"], 2, "is not an image reference"),
        (["--set", "base_image=Python:3.11"], 2, "is not an image reference"),
        (["--set", "base_image=python:3.11;rm -rf ~"], 2, "is not an image reference"),
        (["--backend", "cuda", "--set", "accelerator=99.0"], 4, "has no cu990 build"),
        (["--set", "python_version=3.8"], 4, "no wheels for Python 3.8"),
        (["--set", "torch_version=1.0.0"], 4, "torch 1.0.0 is not in the compatibility table"),
        (["--set", "torch_version=2.13"], 2, "not an exact release"),
        (["--backend", "tpu"], 2, "unknown backend 'tpu'"),
        (["--set", "accelerator=12.8"], 2, "backend 'cpu' takes no accelerator version"),
        (["--name", "文書分類"], 2, "no package_name can be derived"),
        (["--name", "x", "--set", "project_slug=../x"], 2, "project slug '../x'"),
        (["--name", "x", "--set", "project_slug=A B"], 2, "project slug 'A B'"),
        (["--name", "two\nlines"], 2, "not a single printable line"),
        (["--name", "bell\x07"], 2, "not a single printable line"),
        (["--name", "x" * 101], 2, "not a single printable line"),
        (["--set", "package_name=json"], 2, "package name 'json'"),
        (["--set", "package_name=torch"], 2, "package name 'torch'"),
        (["--set", "package_name=naïve"], 2, "package name 'naïve'"),
        (["--set", "categories=invoice;rm,contract"], 2, "distinct lowercase names"),
        (["--set", "colour=red"], 2, "names no template variable"),
        (["--set", "python_version"], 2, "is not KEY=VALUE"),
    ],
)
def test_an_answer_is_refused_before_anything_is_written(tmp_path, settings, code, words):
    outcome = run(["new", "p", "--no-input", *settings, "--json"], cwd=tmp_path, watched=(tmp_path,))
    assert_refused(outcome, code, words, json_mode=True)


def test_a_folder_name_without_an_ascii_form_asks_for_a_slug(tmp_path):
    assert_refused(run(["new", "文書", "--no-input", "--name", "x"], cwd=tmp_path, watched=(tmp_path,)), 2, "project_slug")


@pytest.mark.parametrize(
    "name, package",
    [
        ('He said "hi" \\ bye', "he_said_hi_bye"),
        ("Ñandú Café Dos", "nandu_cafe_dos"),  # transliterated, not n_c_d
        ("Straße 3", "strasse_3"),
        ("{{ 7*7 }} pilot", "p_7_7_pilot"),  # template syntax stays text: never 49
        ("{% for x in range(3) %}x{% endfor %}", "for_x_in_range_3_x_endfor"),
        ("{{ cycler.__init__.__globals__.os.system('touch PWNED') }}", "cycler_init_globals_os_system_touch_pwned"),
        ("$(touch PWNED); `id`", "touch_pwned_id"),
        ("emoji 😀 pilot", None),
    ],
)
def test_an_accepted_name_reaches_bundle_toml_as_a_value(tmp_path, name, package):
    outcome = run(
        ["new", "p", "--no-input", "--name", name, *(["--set", "package_name=emoji_pilot"] if package is None else [])], cwd=tmp_path
    )
    assert outcome.code == 0, outcome.stderr
    bundle = tomlcompat.loads((tmp_path / "p/bundle.toml").read_text(encoding="utf-8"))
    assert bundle["project"]["name"] == name
    assert bundle["project"]["package"] == (package or "emoji_pilot")
    assert (tmp_path / "p/src" / bundle["project"]["package"] / "pilot.py").is_file()
    assert not list(tmp_path.rglob("PWNED")) and "49" not in json.dumps(bundle)


@pytest.mark.parametrize("dest", ["{{ 7*7 }}", "{% if true %}yes{% endif %}", "{{ cycler.__init__.__globals__.os.system('touch PWNED') }}"])
def test_template_syntax_in_the_destination_path_is_never_evaluated(tmp_path, dest):
    outcome = run(["new", f"nest/{dest}/p", "--no-input", "--name", "x"], cwd=tmp_path)
    assert outcome.code == 0, outcome.stderr
    project = tmp_path / "nest" / dest / "p"
    assert (project / "src/x/evidence/trial.py").is_file() and (project / "bundle.toml").is_file()
    assert not list(tmp_path.rglob("PWNED")) and not (tmp_path / "nest/49").exists()


def test_a_name_with_markdown_syntax_stays_text_in_the_readme(tmp_path):
    name = "<img src=x onerror=alert(1)> # [link](http://x) *bold*"
    outcome = run(["new", "p", "--no-input", "--name", name, "--set", "package_name=p_readme"], cwd=tmp_path)
    assert outcome.code == 0, outcome.stderr
    title = (tmp_path / "p/README.md").read_text().splitlines()[0]
    assert title == r"# \<img src=x onerror=alert\(1\)\> \# \[link\]\(http://x\) \*bold\*"
