"""The Docker Engine API on the wire, standard library only: HTTP/1.1 over a unix socket or TCP.

Docker and Podman's compatible service speak the same API; this module carries its
requests (``http.client`` on ``AF_UNIX``, or TCP with ``DOCKER_TLS_VERIFY`` and
``DOCKER_CERT_PATH`` as the Docker CLI reads them) and reads its answers: one JSON
document, a stream of JSON documents (build, pull, push, load), a stream of bytes
(save, an archive) or a container's multiplexed output. Nothing here knows what a
request means: dockerapi.py does. A refused connection, a broken stream or an answer
of 400 and above is ``WireError``, with the engine's own message.

No third-party client: importing this module costs what ``http.client`` costs, where
the Docker SDK (requests, urllib3) cost a large part of a code-only rebuild's start-up.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

CHUNK = 64 * 1024


class WireError(Exception):
    """The engine could not be reached, broke off, or answered with an error status."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.message, self.status = message, status


class Timeout(WireError):
    """No answer within the request's time."""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float | None) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


@dataclass(frozen=True)
class Endpoint:
    """Where the engine listens: a unix socket's path, or a TCP host and port (TLS or not)."""

    unix_path: str = ""
    host: str = ""
    port: int = 0
    tls: ssl.SSLContext | None = None

    @classmethod
    def parse(cls, address: str, environ: Mapping[str, str] = os.environ) -> Endpoint:
        """unix:///path, tcp://host:port or http(s)://host:port; WireError for anything else (ssh://, npipe://)."""
        parts = urlsplit(address)
        if parts.scheme == "unix":
            return cls(unix_path=parts.path or parts.netloc)
        if parts.scheme in ("tcp", "http", "https") and parts.hostname:
            secured = parts.scheme == "https" or environ.get("DOCKER_TLS_VERIFY") or environ.get("DOCKER_CERT_PATH")  # as the CLI
            tls = _tls(environ) if secured else None
            return cls(host=parts.hostname, port=parts.port or (2376 if tls else 2375), tls=tls)
        raise WireError(
            f"the address {address!r} is not a unix socket or a TCP address; for an engine reached over SSH, "
            "forward its socket (`ssh -NL /tmp/engine.sock:/var/run/docker.sock HOST &`) and use unix:///tmp/engine.sock"
        )

    def connection(self, timeout: float | None) -> http.client.HTTPConnection:
        if self.unix_path:
            return _UnixConnection(self.unix_path, timeout)
        if self.tls is not None:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.tls)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)


def _tls(environ: Mapping[str, str]) -> ssl.SSLContext:
    """The Docker CLI's TLS: DOCKER_CERT_PATH's ca.pem, cert.pem and key.pem (default ~/.docker)."""
    folder = environ.get("DOCKER_CERT_PATH") or os.path.join(os.path.expanduser("~"), ".docker")
    ca = os.path.join(folder, "ca.pem")
    context = ssl.create_default_context(cafile=ca if os.path.isfile(ca) else None)
    if not environ.get("DOCKER_TLS_VERIFY"):
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    if os.path.isfile(cert) and os.path.isfile(key):
        context.load_cert_chain(cert, key)
    return context


class Response:
    """An answer being read; close() (or a ``with``) ends its connection."""

    def __init__(self, connection: http.client.HTTPConnection, answer: http.client.HTTPResponse) -> None:
        self._connection, self._answer = connection, answer
        self.status = answer.status

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._connection.close()

    def read(self) -> bytes:
        with _broken_off():
            return self._answer.read()

    def json(self) -> Any:
        data = self.read()
        try:
            return json.loads(data) if data.strip() else None
        except ValueError:
            raise WireError(f"the engine's answer is not JSON: {data[:200]!r}") from None

    def chunks(self, size: int = CHUNK) -> Iterator[bytes]:
        """The body as it comes."""
        while True:
            with _broken_off():
                data = self._answer.read1(size)
            if not data:
                return
            yield data

    def events(self) -> Iterator[dict[str, Any]]:
        """A stream of JSON documents, one after another (newlines between them or not)."""
        decoder, buffer = json.JSONDecoder(), ""
        for data in self.chunks():
            buffer += data.decode("utf-8", errors="replace")
            while True:
                buffer = buffer.lstrip()
                if not buffer:
                    break
                try:
                    event, end = decoder.raw_decode(buffer)
                except ValueError:
                    break  # the rest of this document is still to come
                buffer = buffer[end:]
                if isinstance(event, dict):
                    yield event
        if buffer.strip():
            raise WireError(f"the engine's answer ended inside a JSON document: {buffer[:200]!r}")

    def frames(self) -> Iterator[bytes]:
        """A container's output without a TTY: 8-byte headers (stream, 0, 0, 0, size) before each frame."""
        pending = b""
        for data in self.chunks():
            pending += data
            while len(pending) >= 8:
                size = int.from_bytes(pending[4:8], "big")
                if len(pending) < 8 + size:
                    break
                yield pending[8 : 8 + size]
                pending = pending[8 + size :]
        if pending:
            yield pending


class _broken_off:
    """A read that times out or breaks off is a WireError (a Timeout for the clock)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _: object) -> None:
        if isinstance(error, TimeoutError):
            raise Timeout("the engine did not answer in time") from None
        if isinstance(error, (OSError, http.client.HTTPException)):
            raise WireError(f"the engine broke off its answer ({type(error).__name__}: {error})") from None


class Api:
    """Requests to one engine: ``api.call("GET", "/images/{}/json", name)`` and friends."""

    def __init__(self, address: str, timeout: float | None) -> None:
        self.endpoint = Endpoint.parse(address)
        self.timeout = timeout

    @staticmethod
    def path(template: str, *names: str, **query: object) -> str:
        """``template`` with each ``{}`` a quoted name, and the query (None values left out, booleans as 1/0).

        A name keeps its ``/`` and ``:`` (``127.0.0.1:5000/team/pilot``): the engines route on them."""
        path = template.format(*(quote(name, safe="/:") for name in names))
        given = {key: int(value) if isinstance(value, bool) else value for key, value in query.items() if value is not None}
        return f"{path}?{urlencode(given)}" if given else path

    def open(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "",
        headers: Mapping[str, str] | None = None,
        timeout: float | None | bool = True,
    ) -> Response:
        """Send one request; the answer with a status below 400, else WireError with the engine's message.

        ``timeout``: True for the client's, None for none (a stream that lasts as long as a build)."""
        connection = self.endpoint.connection(self.timeout if timeout is True else timeout or None)
        sent = dict(headers or {})
        if content_type:
            sent["Content-Type"] = content_type
        if isinstance(body, dict | list):
            body, sent["Content-Type"] = json.dumps(body).encode(), "application/json"
        elif body is not None and not isinstance(body, bytes):
            length = _remaining(body)
            if length is not None:
                sent["Content-Length"] = str(length)
        try:
            connection.request(method, path, body=body, headers=sent)  # a file's body goes chunked, as it is read
            answer = connection.getresponse()
        except TimeoutError:
            connection.close()
            raise Timeout("the engine did not answer in time") from None
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise WireError(f"cannot reach the engine ({type(error).__name__}: {error})") from None
        response = Response(connection, answer)
        if answer.status >= 400:
            with response:
                raise WireError(_message(response.read(), answer.status), answer.status)
        return response

    def ping(self) -> None:
        """Whether the engine answers (its ``OK``), else WireError."""
        with self.open("GET", "/_ping") as response:
            response.read()

    def call(self, method: str, path: str, *, body: Any = None, timeout: float | None | bool = True) -> Any:
        """One request whose answer is one JSON document (or nothing)."""
        with self.open(method, path, body=body, timeout=timeout) as response:
            return response.json()


def _remaining(body: Any) -> int | None:
    """The bytes left of a file from where it stands (None for a pipe or a stream: sent chunked)."""
    try:
        return os.fstat(body.fileno()).st_size - body.tell()
    except (AttributeError, OSError, ValueError):
        return None


def _message(data: bytes, status: int) -> str:
    """The engine's own words of an error answer: its JSON ``message``, else the text."""
    text = data.decode("utf-8", errors="replace").strip()
    try:
        found = json.loads(text)
        if isinstance(found, dict) and found.get("message"):
            text = str(found["message"])
    except ValueError:
        pass
    return text or f"HTTP {status} ({http.client.responses.get(status, 'error')})"
