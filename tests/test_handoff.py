"""The load command printed after ``--export``: quoted, and a file name is never read as an option."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from bundler.image.handoff import ExportResult


@pytest.mark.parametrize("name", ["-x y.tar", "my image.tar", "plain.tar"])
def test_the_printed_checksum_step_passes_as_printed_whatever_the_name(tmp_path, name):
    archive = tmp_path / name
    archive.write_bytes(b"not really an image")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    sums = tmp_path / f"{name}.sha256"
    sums.write_text(f"{digest}  {name}\n")
    command = ExportResult(archive, digest, archive.stat().st_size, sums).load_command
    check, load = command.split(" && ")
    assert load.startswith("docker load -i ") and " -i -" not in load
    ran = subprocess.run(["bash", "-c", check], cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.strip().endswith(": OK"), ran.stderr
