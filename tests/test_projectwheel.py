"""The project's own wheel: the version a git-versioned backend is given, since the build never sees .git."""

from __future__ import annotations

import subprocess

from bundler.image.projectwheel import described_version, vcs_version

SCM = '[build-system]\nrequires = ["setuptools>=68", "setuptools-scm>=8"]\nbuild-backend = "setuptools.build_meta"\n'


def git(root, *args):
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b", "HOME": str(root)}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout.strip()


def test_a_git_versioned_backend_gets_the_version_git_describes_here(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text(SCM)
    assert vcs_version(root) == {"SETUPTOOLS_SCM_PRETEND_VERSION": "0+unknown"}  # not a git checkout
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-qm", "one")
    first = git(root, "rev-parse", "--short", "HEAD")
    assert described_version(root) == f"0+g{first}"  # no tag yet
    git(root, "tag", "v1.2")
    assert described_version(root) == "1.2"
    (root / "a.py").write_text("")
    git(root, "add", ".")
    git(root, "commit", "-qm", "two")
    second = git(root, "rev-parse", "--short", "HEAD")
    assert vcs_version(root) == {"SETUPTOOLS_SCM_PRETEND_VERSION": f"1.2.post1+g{second}"}


def test_any_other_backend_gets_no_version_override(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=68"]\n')
    assert vcs_version(tmp_path) == {}
    (tmp_path / "pyproject.toml").write_text("[build-system\n")  # unreadable: the build's own refusal will say why
    assert vcs_version(tmp_path) == {}


def test_a_project_with_compiled_sources_builds_in_a_builder_with_compilers():
    from bundler.image.builder import compilers_for

    assert compilers_for(["src/pkg/__init__.py", "README.md"]) == []  # pure Python: the base image as it is
    assert compilers_for(["src/pkg/_fast.pyx", "Cargo.toml"]) == ["build-essential", "cargo", "pkg-config"]
