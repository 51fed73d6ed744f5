"""The lock's hashes come from the index pages (PEP 503 fragments, PEP 691 JSON), not from
downloads: a real HTTP index on loopback records which URLs were fetched."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading

import pytest

from bundler.errors import ExternalError, LockError
from bundler.lock.hashes import hash_body, project_files
from bundler.pipsettings import PipSettings

WHEEL = b"not really a wheel, but bytes with a digest"
HASH_A, HASH_B = "a" * 64, "b" * 64
PAGES = {
    # PEP 503 HTML with fragments; a file of another version and another label on the same page
    "/simple/torch/": (
        "text/html",
        '<a href="/files/torch-2.9.1-cp311-cp311-manylinux_2_28_x86_64.whl#sha256=' + HASH_A + '">'
        "torch-2.9.1-cp311-cp311-manylinux_2_28_x86_64.whl</a>\n"
        '<a href="/files/torch-2.9.1%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl#sha256=' + "c" * 64 + '">'
        "torch-2.9.1+cu128-cp311-cp311-manylinux_2_28_x86_64.whl</a>\n"
        '<a data-requires-python="&gt;=3.9,&lt;3.14" href="/files/torch-2.9.0-cp311-cp311-manylinux_2_28_x86_64.whl#sha256='
        + "d"
        * 64
        + '">'
        "torch-2.9.0-cp311-cp311-manylinux_2_28_x86_64.whl</a>\n",
    ),
    # PEP 691 JSON with relative URLs (the shape of a mirror whose JSON API pip-tools cannot match)
    "/simple/triton/": (
        "application/vnd.pypi.simple.v1+json",
        json.dumps(
            {
                "files": [
                    {
                        "filename": "triton-3.5.1-cp311-cp311-manylinux_2_27_x86_64.whl",
                        "url": "../../files/t.whl",
                        "hashes": {"sha256": HASH_B},
                        "requires-python": ">=3.10",
                        "upload-time": "2025-11-20T10:00:00.000000Z",
                    },
                    {"filename": "triton-3.5.1.tar.gz", "url": "../../files/t.tar.gz", "hashes": {"sha256": HASH_A}},
                ]
            }
        ),
    ),
    # a link without a hash: the one file that has to be fetched and hashed
    "/simple/filelock/": ("text/html", '<a href="/files/filelock-3.20.0-py3-none-any.whl">filelock-3.20.0-py3-none-any.whl</a>'),
    "/files/filelock-3.20.0-py3-none-any.whl": ("application/octet-stream", WHEEL),
}


@pytest.fixture
def index():
    fetched: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            fetched.append(self.path)
            kind, body = PAGES.get(self.path, ("text/plain", None))
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", kind)
            self.end_headers()
            if body is not None:
                self.wfile.write(body if isinstance(body, bytes) else body.encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple", fetched
    server.shutdown()
    server.server_close()


def test_hashes_come_from_the_pages_and_only_a_hashless_link_is_fetched(index):
    url, fetched = index
    body = "filelock==3.20.0\n    # via torch\ntorch==2.9.1\n    # via -r requirements.in\ntriton==3.5.1\n    # via torch\n"
    hashed = hash_body(body, [url], PipSettings())
    assert f"torch==2.9.1 \\\n    --hash=sha256:{HASH_A}\n    # via -r requirements.in" in hashed  # neither 2.9.0 nor +cu128
    assert f"triton==3.5.1 \\\n    --hash=sha256:{HASH_A} \\\n    --hash=sha256:{HASH_B}\n" in hashed  # wheel and sdist
    assert f"filelock==3.20.0 \\\n    --hash=sha256:{hashlib.sha256(WHEEL).hexdigest()}\n" in hashed
    assert sorted(path for path in fetched if path.startswith("/files/")) == ["/files/filelock-3.20.0-py3-none-any.whl"]


def test_the_pages_give_each_files_requires_python_and_upload_time_in_either_format(index):
    url, _ = index
    torch = {f.filename: f for f in project_files(url, "torch", PipSettings())}
    assert torch["torch-2.9.0-cp311-cp311-manylinux_2_28_x86_64.whl"].requires_python == ">=3.9,<3.14"  # unescaped
    assert torch["torch-2.9.1-cp311-cp311-manylinux_2_28_x86_64.whl"].requires_python == ""
    triton = {f.filename: f for f in project_files(url, "triton", PipSettings())}
    wheel = triton["triton-3.5.1-cp311-cp311-manylinux_2_27_x86_64.whl"]
    assert (wheel.requires_python, wheel.upload_time) == (">=3.10", "2025-11-20T10:00:00.000000Z")
    assert triton["triton-3.5.1.tar.gz"].requires_python == "" and wheel.url.endswith("/files/t.whl")


def test_a_pin_no_index_lists_is_a_lock_error(index):
    url, _ = index
    with pytest.raises(LockError, match=r"no file of torch==2\.8\.0 is listed"):
        hash_body("torch==2.8.0\n", [url], PipSettings())


def test_an_index_that_cannot_be_read_is_named(tmp_path):
    with pytest.raises(ExternalError, match=r"127\.0\.0\.1:9/simple/torch/"):
        hash_body("torch==2.9.1\n", ["http://127.0.0.1:9/simple"], PipSettings())


def test_a_local_index_without_fragments_is_hashed_from_its_files(tmp_path, fake_index):
    filename = "triton-3.5.1-cp311-cp311-manylinux_2_27_x86_64.whl"
    hashed = hash_body("triton==3.5.1\n", [fake_index.pypi_url], PipSettings())
    assert f"--hash=sha256:{fake_index.file_hash(filename)}" in hashed
