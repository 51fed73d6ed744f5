"""The build context: .dockerignore rules, bundler's defaults, secrets withheld and listed, a stable tar."""

from __future__ import annotations

import io
import tarfile

from bundler.contracts.secrets import looks_secret
from bundler.image.context import ContextTar, clean_patterns, collect, is_ignored


def write(root, relative, text="x"):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_dockerignore_rules_follow_docker_semantics():
    assert is_ignored(["runs/"], "runs/t1/summary.json")
    assert is_ignored(["*.log"], "a.log") and not is_ignored(["*.log"], "sub/a.log")
    assert is_ignored(["**/*.log"], "sub/deeper/a.log")
    assert is_ignored(["data/*/raw"], "data/x/raw/file.bin")
    assert not is_ignored(["data/*/raw"], "data/x/y/raw")
    assert is_ignored(["*.md", "!README.md"], "notes.md") and not is_ignored(["*.md", "!README.md"], "README.md")
    assert clean_patterns(["# comment", "  ", " *.log "]) == ["*.log"]


def test_secrets_are_withheld_even_when_re_included_and_listed(tmp_path):
    write(tmp_path, "bundle.toml")
    write(tmp_path, "src/pkg/model.py")
    write(tmp_path, ".env", "TOKEN=1")
    write(tmp_path, "config/.env.production", "TOKEN=2")
    write(tmp_path, "keys/id_ed25519", "key")
    write(tmp_path, ".netrc", "machine x login y password z")
    write(tmp_path, "deploy/server.pem", "cert")
    write(tmp_path, "home/.aws/credentials", "[default]")
    write(tmp_path, "notes/unnamed.txt", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n")
    write(tmp_path, ".dockerignore", "*.tmp\n!.env\n")
    files = collect(tmp_path)
    assert files.secrets == [
        ".env",
        ".netrc",
        "config/.env.production",
        "deploy/server.pem",
        "home/.aws/credentials",
        "keys/id_ed25519",
        "notes/unnamed.txt",
    ]
    assert "src/pkg/model.py" in files.included and ".dockerignore" in files.included
    assert not set(files.secrets) & set(files.included)


def test_defaults_and_project_rules_leave_out_runs_git_caches_and_checkpoints(tmp_path):
    write(tmp_path, "bundle.toml")
    write(tmp_path, "runs/t1/summary.json")
    write(tmp_path, ".git/config")
    write(tmp_path, "src/pkg/__pycache__/m.cpython-311.pyc")
    write(tmp_path, "notebooks/.ipynb_checkpoints/a.ipynb")
    write(tmp_path, "scratch.tmp")
    write(tmp_path, "keep.tmp")
    write(tmp_path, ".dockerignore", "*.tmp\n!keep.tmp\n")
    files = collect(tmp_path)
    assert files.included == [".dockerignore", "bundle.toml", "keep.tmp"]
    assert files.ignored_count == 5


def test_looks_secret_by_name():
    for name in (".env", ".env.local", "a/b/.pypirc", "id_rsa.pub", "x/credentials.json", ".kube/config", "tls.key"):
        assert looks_secret(name), name
    for name in ("environment.yml", "src/keys.py", "config/pilot.json"):
        assert not looks_secret(name), name


def test_context_tar_has_fixed_owners_and_times(tmp_path):
    path = write(tmp_path, "a.txt", "hello")
    first, second = io.BytesIO(), io.BytesIO()
    for buffer in (first, second):
        tar = ContextTar(buffer)
        tar.add_file("project/a.txt", path)
        tar.close()
        path.touch()  # a new mtime must not change the context
    assert first.getvalue() == second.getvalue()
    member = tarfile.open(fileobj=io.BytesIO(first.getvalue())).getmember("project/a.txt")
    assert (member.uid, member.gid, member.mode) == (0, 0, 0o644)


def test_project_context_holds_full_image_paths_with_a_timed_entry_for_every_folder(example_project, tmp_path):
    from bundler.image.context import write_project_context
    from bundler.target.bundle import load_bundle

    bundle = load_bundle(example_project)
    files = collect(example_project)
    sent = write_project_context(bundle, "FROM scratch\n", files, tmp_path / "project.tar")
    with tarfile.open(sent.path) as tar:
        members = tar.getmembers()
    names = [member.name for member in members]
    assert "bundle/opt/bundle/entrypoint.sh" in names and "bundle/opt/bundle/diagnostics/run.py" in names
    assert "project/opt/bundle/project/bundle.toml" in names and "config/opt/bundle/project/config/pilot.json" in names
    folders = {member.name for member in members if member.isdir()}
    for name in names:  # every folder above every entry has its own entry, written before it
        parts = name.split("/")
        for end in range(1, len(parts)):
            assert "/".join(parts[:end]) in folders
            assert names.index("/".join(parts[:end])) < names.index(name)
    assert {member.mtime for member in members} == {946684800} and {(m.uid, m.gid) for m in members} == {(0, 0)}
    entry = next(member for member in members if member.name == "bundle/opt/bundle/entrypoint.sh")
    assert entry.mode == 0o755


def test_dockerignore_globs_agree_with_docker_py_and_folders_cover_what_is_under_them():
    """docker-py's glob translation is the oracle; the folder rule is the Docker CLI's own (a pattern
    matching any folder above a path matches the path: ``a/**/b`` leaves out ``a/b/c``)."""
    import random

    from docker.utils.build import PatternMatcher

    from bundler.engine.dockerignore import matcher

    def docker_cli(patterns: list[str], path: str) -> bool:
        parts = path.split("/")
        parents = ["/".join(parts[:end]) for end in range(1, len(parts))]
        matched = False
        for pattern in PatternMatcher(patterns).patterns:
            if pattern.exclusion == matched and (pattern.match(path) or any(pattern.match(parent) for parent in parents)):
                matched = not pattern.exclusion
        return matched

    patterns = ["*.log", "**/*.log", "data/*/raw", "runs", "runs/", "/runs", "./src/**", "**", "a/**/b", "!keep.log", "!a/**/b/c"]
    patterns += ["src/*.py", "?.txt", "[ab].txt", "[!ab].txt", "**/__pycache__", "**/*.py[cod]", ".venv", "x/y", "x/**", "*/z"]
    patterns += ["!x/y/keep", "**/c", "a/**", "!a/b/keep.txt", "dir/**/", "**/x/**/y", "!*.txt", "sub/*"]
    paths = ["a.log", "sub/a.log", "sub/deeper/a.log", "data/x/raw/f", "data/x/y/raw", "runs/t/s.json", "runs", "src/a.py", "src/p/q.py"]
    paths += ["a/b", "a/x/b", "a/x/y/b/c", "a/b/c", "keep.log", "x.txt", "a.txt", "c.txt", "ab.txt", "pkg/__pycache__/m.pyc", "m.pyc"]
    paths += ["m.pyx", ".venv/bin/py", "x/y/keep", "x/y/other", "q/z", "axb", "c", "d/c", "a/b/keep.txt", "dir/e/f", "m/x/n/y/o"]
    chosen_lists = [random.Random(seed).sample(patterns, 1 + seed % 4) for seed in range(600)]
    differing = [(c, p) for c in chosen_lists for p in paths if matcher(c)(p) != docker_cli(c, p)]
    assert differing == []
    assert is_ignored(["a/**/b"], "a/b/c") and not is_ignored(["a/**/b", "!a/b/c"], "a/b/c")
    assert is_ignored(["a\\*b"], "a*b") and not is_ignored(["a\\*b"], "axb")
