"""A dependency that needs system libraries: the build's hint names the Debian packages, and the
one bundle.toml line it quotes makes the next build pass. The project wheel below carries a
shared object linked against libGL.so.1 and libxcb.so.1 (as opencv-python's cv2 is), compiled
here against stand-ins of those two, and loads it when imported: the import names the first
missing library, ldd the other. Tiny wheels from the fake index, the session's Debian base
image, the packages from Debian's mirror."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from bundler.lock.run import run_lock
from bundler.target.bundle import load_bundle
from tests.build_support import build, remove_built, run_container
from tests.deps_support import cpu_project
from tests.fakeindex import _wheel

pytestmark = [pytest.mark.docker, pytest.mark.slow]
LOADER = "import ctypes, os\n_native = ctypes.CDLL(os.path.join(os.path.dirname(__file__), '_native.so'))\n"


def native_wheel(folder: Path, work: Path) -> Path:
    """glview-0.1.0: glview/_native.so needs libGL.so.1 and libxcb.so.1 (linked against stand-ins made here)."""
    work.mkdir()
    (work / "stub.c").write_text("int stub(void) { return 0; }\n")
    (work / "native.c").write_text("int native(void) { return 0; }\n")
    for soname in ("libGL.so.1", "libxcb.so.1"):
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(work / soname), str(work / "stub.c")], check=True)
    native = work / "_native.so"
    link = ["-Wl,--no-as-needed", f"-L{work}", "-l:libGL.so.1", "-l:libxcb.so.1"]
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(native), str(work / "native.c"), *link], check=True)
    folder.mkdir(parents=True, exist_ok=True)
    modules = {"glview/__init__.py": LOADER, "glview/_native.so": native.read_bytes()}
    return folder / _wheel(folder, "glview", "0.1.0", "py3-none-any", [], modules)


def test_a_missing_libgl_names_libgl1_and_the_quoted_line_makes_the_build_pass(
    tmp_path, indexed, docker_client, docker_engine, debian_python_image
):
    project = cpu_project(tmp_path / "p", "torch\n./wheels/glview-0.1.0-py3-none-any.whl\n", base_image=debian_python_image)
    native_wheel(project / "wheels", tmp_path / "native")
    run_lock(load_bundle(project), cpu=True)
    tag = f"bundler-test/libgl-{uuid.uuid4().hex[:8]}:1"

    failed, data = build(project, "--tag", tag)
    assert failed.returncode == 8, failed.stderr[-3000:]
    error = data["error"]
    assert "glview (glview 0.1.0): OSError: libGL.so.1: cannot open shared object file" in error["message"]
    line = 'system_packages = ["libgl1", "libxcb1"]'  # libxcb.so.1 from ldd: both in one build, not one a build
    assert "the Debian package libgl1 provides" in error["message"] and line in error["hint"] and line in error["message"]
    assert not docker_client.images.list(name=tag.split(":")[0]), "an image that failed its import check was tagged"

    bundle_toml = project / "bundle.toml"
    bundle_toml.write_text(bundle_toml.read_text().replace("[build]\n", f"[build]\n{line}\n"))
    passed, data = build(project, "--tag", tag)
    try:
        assert passed.returncode == 0, passed.stderr[-3000:]
        code, logs, container = run_container(docker_client, tag, ["python", "-c", "import glview; print(glview._native._name)"])
        container.remove(force=True)
        assert code == 0 and "_native.so" in logs, logs
        history = json.dumps(docker_client.images.get(data["context"]["deps_image"]).history())
        assert "--no-install-recommends libgl1 libxcb1" in history
    finally:
        remove_built(docker_engine, data)
