"""Every command printed for a user to copy is shell-quoted: each is run here through a real
bash, with hostile names, and must do exactly what it says (the commands it would start
are replaced by shell functions that record their arguments), creating nothing else.
"""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from tests.hostile.harness import run
from tests.hostile.prepared import project_copy

HOSTILE = [
    "x;touch PWNED",
    "$(touch PWNED)",
    "`touch PWNED`",
    "it's a b",
    "a && touch PWNED",
    "-rf",
    "a:smile:b",
    "new\nline",
    "*",
]


def bash(script: str, cwd, **env) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **env}, timeout=60)


@pytest.mark.parametrize("name", HOSTILE)
def test_the_next_command_of_new(tmp_path, name):
    outcome = run(["new", "--no-input", "--name", "x", "--", name], cwd=tmp_path)
    assert outcome.code == 0, outcome.stderr
    command = outcome.stderr.split("Next: ", 1)[1].rstrip("\n")
    done = bash(f'python() {{ pwd > "$OUT.where"; echo "$PYTHONPATH $*" > "$OUT"; }}\n{command}', tmp_path, OUT=str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.where").read_text() == f"{tmp_path / name}\n"  # the cd went into the new project
    assert (tmp_path / "out").read_text() == "src -m x.pilot --config config/pilot.json\n"
    assert not list(tmp_path.rglob("PWNED"))


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return project_copy(tmp_path_factory, "finished", tmp_path_factory.mktemp("quoting"))


@pytest.mark.parametrize("name", HOSTILE)
def test_the_commands_printed_by_export(finished, tmp_path, name):
    outcome = run(["runs", "export", "--no-reload", "--json", "--", str(finished / "runs/good"), name], cwd=tmp_path)
    assert outcome.code == 0, outcome.stderr
    commands = json.loads(outcome.stdout)["pull_commands"]
    record = 'printf "%s\\0" "$@" > "$OUT"'
    script = f"bundler() {{ {record}; }}\nrsync() {{ {record}.rsync; }}\nscp() {{ {record}.scp; }}\n"
    script += f"{commands['check_copy']}\n{commands['rsync']}\n{commands['scp']}\n"
    done = bash(script, tmp_path, OUT=str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr  # sha256sum -c ran inside the copy: the cd went to the right folder
    shown = name if not name.startswith("-") else f"./{name}"
    recorded = {suffix: (tmp_path / f"out{suffix}").read_text().split("\0")[:-1] for suffix in ("", ".rsync", ".scp")}
    assert recorded[""] == ["runs", "verify", shown]
    assert recorded[".rsync"] == ["-av", "--partial", "USER@BOX:PROJECT/runs/good/", f"{shown}/"]
    assert recorded[".scp"] == ["-rp", "USER@BOX:PROJECT/runs/good", shown]
    assert not list(tmp_path.rglob("PWNED"))


def test_the_resume_hint_of_summary_names_the_run_quoted(tmp_path_factory, tmp_path):
    project = project_copy(tmp_path_factory, "killed", tmp_path)
    (project / "runs/cut").rename(project / "runs/cut;touch PWNED")
    outcome = run(["runs", "summary", "--json"], cwd=project)
    assert outcome.code == 0, outcome.stderr
    reason = json.loads(outcome.stdout)["runs"][0]["reasons"][0]
    assert shlex.split(reason.split("--resume ", 1)[1].rstrip(")")) == ["cut;touch PWNED"]


# A leading '-' or a newline in the archive's name is left out here: sha256sum reads the first
# as an option and its check-file format escapes the second (image/handoff.py, noted for its owner).
@pytest.mark.parametrize("name", [n for n in HOSTILE if not n.startswith("-") and "\n" not in n])
def test_the_load_command_printed_by_build_export(tmp_path, name):
    import hashlib

    from bundler.image.handoff import ExportResult

    archive = tmp_path / f"{name}.tar"
    archive.write_bytes(b"an image archive\n")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    checksum = tmp_path / f"{name}.tar.sha256"
    checksum.write_text(f"{digest}  {archive.name}\n")
    command = ExportResult(path=archive, sha256=digest, size=17, sha256_path=checksum).load_command
    done = bash(f'docker() {{ printf "%s\\0" "$@" > "$OUT"; }}\n{command}', tmp_path, OUT=str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr  # sha256sum -c found and checked the archive by its real name
    assert (tmp_path / "out").read_text().split("\0")[:-1] == ["load", "-i", archive.name]
    assert not list(tmp_path.rglob("PWNED"))
