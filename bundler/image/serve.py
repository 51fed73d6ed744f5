"""The loopback route: the wheelhouse served to a build on this host over 127.0.0.1.

The classic builder has no cache or bind mounts: a wheel sent in the context and
COPY'd is committed into a layer, and a multi-stage build that drops it must commit the
installed environment twice. A build that shares this host's network
(``network_mode="host"``) can instead install straight from the cache through a small
HTTP server on 127.0.0.1: the only layer written is the installed environment.

Served, by name only (no path outside this list is reachable): ``index.html`` (a
find-links page: one link per wheel), ``requirements.txt`` (the lock's install body) and
the wheels themselves. Each wheel is hashed while it is sent; a file whose bytes differ
from the hash it is cached under is recorded in ``mismatches`` (pip, installing with
``--require-hashes``, refuses it too), so the build fails naming the cached file.
"""

from __future__ import annotations

import hashlib
import html
import http.server
import threading
import urllib.parse
from dataclasses import dataclass, field

CHUNK = 1 << 20


@dataclass
class Served:
    """What the build fetched: counts for the report, mismatches for the error."""

    requests: int = 0
    bytes: int = 0
    mismatches: list = field(default_factory=list)  # (Wheel, actual sha256)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def find_links_page(names: list[str]) -> bytes:
    links = "".join(f'<a href="{urllib.parse.quote(name)}">{html.escape(name)}</a>\n' for name in sorted(names))
    return f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n".encode()


class WheelhouseServer:
    """``with WheelhouseServer(wheels, requirements) as server:`` … ``server.url`` while the build runs."""

    def __init__(self, wheels: list, requirements: str) -> None:
        self.wheels = {wheel.filename: wheel for wheel in wheels}
        self.pages = {
            "": find_links_page(list(self.wheels)),
            "index.html": find_links_page(list(self.wheels)),
            "requirements.txt": requirements.encode("utf-8"),
        }
        self.served = Served()
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="bundler-wheelhouse", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/"

    def __enter__(self) -> WheelhouseServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def _handler(self):
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # the build's own output is what the user reads
                pass

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                name = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
                with server.served.lock:
                    server.served.requests += 1
                if name in server.pages:
                    data = server.pages[name]
                    kind = "text/plain; charset=utf-8" if name.endswith(".txt") else "text/html; charset=utf-8"
                    self._headers(len(data), kind)
                    if body:
                        self.wfile.write(data)
                elif name in server.wheels:
                    wheel = server.wheels[name]
                    self._headers(wheel.size, "application/octet-stream")
                    if body:
                        server.send_wheel(wheel, self.wfile)
                else:
                    self.send_error(404, "not in the wheelhouse")

            def _headers(self, size: int, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(size))
                self.end_headers()

        return Handler

    def send_wheel(self, wheel, out) -> None:
        digest, sent = hashlib.sha256(), 0
        with open(wheel.path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
                try:
                    out.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client went away: no verdict on a partial read
                sent += len(chunk)
        with self.served.lock:
            self.served.bytes += sent
            if digest.hexdigest() != wheel.sha256:
                self.served.mismatches.append((wheel, digest.hexdigest()))
