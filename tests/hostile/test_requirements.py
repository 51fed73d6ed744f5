"""Hostile requirements.in through the real `bundler lock`: one paragraph naming the line, the
documented exit code, nothing written — and no resolution started (the indexes are mapped to
a folder that does not exist, so reaching resolution would fail with exit 9 instead)."""

from __future__ import annotations

import pytest

from tests.deps_support import cpu_project
from tests.hostile.harness import assert_refused, run

NOWHERE = {"BUNDLER_INDEX_MAP": "https://download.pytorch.org/whl=file:///nonexistent/whl https://pypi.org/simple=file:///nonexistent/pypi"}
CASES = [
    ("-r ../common/common.txt\ntorch\n", 3, ["requirements.in:1", "outside the project", "Copy the file into the project"]),
    ("torch\n-r a.txt\n", 3, ["a.txt:1", "includes it back"]),
    ("torch\ngit+https://github.com/org/tool.git@v1\n", 6, ["requirements.in:2", "a VCS checkout", "./wheels/"]),
    ("torch\ntool @ https://example.org/tool-1.0.tar.gz\n", 6, ["requirements.in:2", "a direct URL", "released version"]),
    ("-e .\ntorch\n", 6, ["requirements.in:1", "an editable install"]),
    ("torch\n--index-url https://download.pytorch.org/whl/cu121\n", 6, ["requirements.in:2", "another build"]),
    ("torch\n--extra-index-url https://tok:hunter2@example.org/simple\n", 6, ["requirements.in:2", "credentials"]),
    ("torch\n--find-links ./wheels\n", 3, ["requirements.in:2", "--find-links"]),
    ('torch; platform_machine == "x86_64"\ntorch>=2; python_version >= "3"\n', 6, ["requirements.in:2", "listed twice"]),
    ("torch\nnumpy >>= 2\n", 3, ["requirements.in:2", "is not a requirement"]),
]


@pytest.mark.parametrize("requirements, code, mentions", CASES, ids=[case[0].split("\n")[-2][:30] for case in CASES])
@pytest.mark.parametrize("json_mode", [False, True])
def test_requirements_that_cannot_be_locked_are_refused_before_resolving(tmp_path, requirements, code, mentions, json_mode):
    project = cpu_project(tmp_path / "p", requirements)
    (project / "a.txt").write_text("-r requirements.in\n")
    outcome = run(["lock", str(project), *(["--json"] if json_mode else [])], cwd=tmp_path, env=NOWHERE, watched=(project,))
    assert_refused(outcome, code, *mentions, json_mode=json_mode)
    assert "hunter2" not in outcome.stdout + outcome.stderr
