"""Docker: the Engine interface over the Docker Engine API (wire.py carries the requests).

What each of bundler's questions is in the Engine API, and the engine's answers read into
engine/base.py's dataclasses; a refusal is ``EngineFailure`` with the engine's own words
(``ImageMissing`` for an image that is not there). Podman's compatible service answers
the same requests (podman.py says where it differs).
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import tarfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, BinaryIO

from bundler.contracts.reference import registry_host
from bundler.engine import wire
from bundler.engine.base import (
    BuildFailed,
    Devices,
    Engine,
    EngineFailure,
    EngineHost,
    EngineVersion,
    HistoryEntry,
    Image,
    ImageMissing,
    Lines,
    PushEvent,
    RunResult,
    RunSpec,
    StartFailed,
)

DEFAULT_ADDRESS = "unix:///var/run/docker.sock"
_BUILT = re.compile(r"Successfully built ([0-9a-f]{12,64})")
_PUSHED = re.compile(r"digest: (sha256:[0-9a-f]{64})")
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
NO_AUTH = base64.urlsafe_b64encode(b"{}").decode()  # Docker refuses a push without the header


def _sha(identifier: str) -> str:
    """An image ID in one spelling: sha256:<hex> (Podman's API leaves the prefix off some)."""
    if not identifier or identifier.startswith("sha256:") or not re.fullmatch(r"[0-9a-f]{64}", identifier):
        return identifier
    return f"sha256:{identifier}"


def memory_bytes(text: str) -> int:
    """'8g' -> bytes, as `docker run --shm-size` reads it; ValueError otherwise."""
    found = re.fullmatch(r"\s*([0-9]+)\s*([bkmg]?)b?\s*", text.lower())
    if found is None:
        raise ValueError(f"{text!r} is not a size (like 8g or 512m)")
    return int(found.group(1)) * _UNITS[found.group(2)]


class DockerEngine(Engine):
    name = "docker"
    label = "Docker"

    def __init__(self, address: str, *, timeout: int) -> None:
        super().__init__(address)
        with self._calls():
            self._api = wire.Api(address, timeout)
            self._api.ping()

    # ----- errors --------------------------------------------------------------------------
    @contextmanager
    def _calls(self, missing: type[EngineFailure] = ImageMissing) -> Iterator[None]:
        """Every request inside: the wire's errors become EngineFailure (``missing`` for a 404)."""
        try:
            yield
        except wire.WireError as error:
            kind = missing if error.status == 404 else EngineFailure
            raise kind(error.message[:500], engine=self.label) from None

    # ----- the engine ----------------------------------------------------------------------
    def ping(self) -> None:
        with self._calls():
            self._api.ping()

    def version(self) -> EngineVersion:
        with self._calls():
            answer = self._api.call("GET", "/version") or {}
        return EngineVersion(self.name, str(answer.get("Version", "")))

    def host(self) -> EngineHost:
        with self._calls():
            info = self._api.call("GET", "/info") or {}
        rootless = any("rootless" in str(option) for option in info.get("SecurityOptions") or [])
        return EngineHost(str(info.get("Name", "")), str(info.get("OperatingSystem", "")), rootless)

    # ----- builds --------------------------------------------------------------------------
    def build(
        self,
        context: BinaryIO,
        *,
        on_line: Lines,
        network_mode: str | None = "none",
        labels: Mapping[str, str] | None = None,
        buildargs: Mapping[str, str] | None = None,
        no_cache: bool = False,
        tag: str | None = None,
        source_date: int | None = None,
    ) -> str:
        image_id, log = "", list[str]()
        query = self._build_query(tag, network_mode, dict(labels or {}), dict(buildargs or {}), no_cache, source_date)
        with (
            self._calls(),
            self._api.open(
                "POST", wire.Api.path("/build", **query), body=context, content_type="application/x-tar", timeout=None
            ) as answer,
        ):
            for event in answer.events():
                if "error" in event or "errorDetail" in event:
                    message = str(event.get("error") or (event.get("errorDetail") or {}).get("message", "")).strip()
                    raise BuildFailed(message, log=log, engine=self.label)
                for line in str(event.get("stream", "")).rstrip("\n").splitlines():
                    if line.strip():
                        log.append(line.rstrip())
                        on_line(line.rstrip())
                    found = _BUILT.search(line)
                    if found:
                        image_id = found.group(1)
                aux = event.get("aux") or {}
                if isinstance(aux, dict) and aux.get("ID"):
                    image_id = str(aux["ID"])
        if not image_id:
            raise BuildFailed("the build finished without an image ID", log=log, engine=self.label)
        built = self.image(image_id)
        if built is None:
            raise BuildFailed(f"the built image {image_id} is not on the engine", log=log, engine=self.label)
        return built.id

    def _build_query(
        self, tag: str | None, network_mode: str | None, labels: dict, buildargs: dict, no_cache: bool, source_date: int | None
    ) -> dict[str, object]:
        """The build's query (``source_date`` is not Docker's classic builder's to honour)."""
        query: dict[str, object] = {"t": tag, "rm": True, "forcerm": True, "pull": False, "nocache": no_cache, "networkmode": network_mode}
        return query | {"labels": json.dumps(labels), "buildargs": json.dumps(buildargs)}

    # ----- images --------------------------------------------------------------------------
    def _image(self, attrs: Mapping[str, Any]) -> Image:
        config = attrs.get("Config") or {}
        env = dict(item.split("=", 1) for item in config.get("Env") or [] if "=" in item)
        entrypoint = config.get("Entrypoint")
        return Image(
            id=_sha(str(attrs.get("Id") or "")),
            tags=tuple(self._tag_name(tag) for tag in attrs.get("RepoTags") or [] if tag != "<none>:<none>"),
            labels=dict(config.get("Labels") or {}),
            digests=tuple(attrs.get("RepoDigests") or []),
            size=int(attrs.get("Size") or 0),
            created=str(attrs.get("Created") or ""),
            parent=_sha(str(attrs.get("Parent") or "")),
            architecture=str(attrs.get("Architecture") or ""),
            user=str(config.get("User") or ""),
            entrypoint=tuple(entrypoint) if isinstance(entrypoint, list) else None,
            env=env,
            layers=tuple((attrs.get("RootFS") or {}).get("Layers") or []),
        )

    def _tag_name(self, tag: str) -> str:
        return tag

    def image(self, reference: str) -> Image | None:
        try:
            with self._calls():
                return self._image(self._api.call("GET", wire.Api.path("/images/{}/json", reference)) or {})
        except ImageMissing:
            return None

    def images(self, *, all: bool = False, name: str | None = None) -> list[Image]:
        filters = json.dumps({"reference": [name]}) if name else None
        with self._calls():
            listed = self._api.call("GET", wire.Api.path("/images/json", all=all, filters=filters)) or []
        found = (self.image(str(entry.get("Id") or "")) for entry in listed)
        return [image for image in found if image is not None]  # one removed meanwhile is left out

    def pull(self, reference: str) -> Image:
        repository, tag = _split_reference(reference)
        query = {"fromImage": repository, "tag": tag, **self._registry_query(repository)}
        with self._calls(), self._api.open("POST", wire.Api.path("/images/create", **query), timeout=None) as answer:
            for event in answer.events():
                if event.get("error") or event.get("errorDetail"):
                    raise EngineFailure(str(event.get("error") or event["errorDetail"].get("message", "")), engine=self.label)
        pulled = self.image(reference)
        if pulled is None:
            raise ImageMissing(f"{reference} is not on the engine after its pull", engine=self.label)
        return pulled

    def tag(self, image: str, repository: str, tag: str) -> None:
        with self._calls():
            self._api.call("POST", wire.Api.path("/images/{}/tag", image, repo=repository, tag=tag, force=True))

    def remove_image(self, reference: str, *, force: bool = False, prune: bool = True) -> None:
        with self._calls():
            self._api.call("DELETE", wire.Api.path("/images/{}", reference, force=force, noprune=not prune))

    def history(self, image: str) -> list[HistoryEntry]:
        with self._calls():
            entries = self._api.call("GET", wire.Api.path("/images/{}/history", image)) or []
        return [
            HistoryEntry(_sha(str(entry.get("Id") or "<missing>")), str(entry.get("CreatedBy") or ""), int(entry.get("Size") or 0))
            for entry in entries
        ]

    def unique_sizes(self) -> dict[str, int]:
        with self._calls():
            listed = (self._api.call("GET", "/system/df") or {}).get("Images") or []
        return {_sha(str(entry["Id"])): int(entry.get("Size", 0)) - max(int(entry.get("SharedSize", 0)), 0) for entry in listed}

    def save(self, reference: str, chunk_size: int) -> Iterator[bytes]:
        with self._calls(), self._api.open("GET", wire.Api.path("/images/{}/get", reference), timeout=None) as answer:
            yield from answer.chunks(chunk_size)

    def load(self, archive: BinaryIO) -> None:
        with self._calls(), self._api.open("POST", "/images/load", body=archive, content_type="application/x-tar", timeout=None) as answer:
            for event in answer.events():
                if event.get("error") or event.get("errorDetail"):
                    raise EngineFailure(str(event.get("error") or event["errorDetail"].get("message", "")), engine=self.label)

    def push(self, repository: str, tag: str) -> Iterator[PushEvent]:
        path = wire.Api.path("/images/{}/push", repository, tag=tag, **self._registry_query(repository))
        headers = {"X-Registry-Auth": registry_auth(repository)}
        with self._calls(), self._api.open("POST", path, headers=headers, timeout=None) as answer:
            for event in answer.events():
                if "error" in event or "errorDetail" in event:
                    yield PushEvent(error=str(event.get("error") or (event.get("errorDetail") or {}).get("message") or "unknown error"))
                    return
                aux = event.get("aux") or {}
                current = (event.get("progressDetail") or {}).get("current") or 0
                digest = str(aux.get("Digest", "")) if isinstance(aux, dict) else ""
                digest = digest or next(iter(_PUSHED.findall(str(event.get("status") or ""))), "")  # Podman: only "TAG: digest: …"
                yield PushEvent(str(event.get("id") or ""), str(event.get("status") or ""), int(current), digest)

    def _registry_query(self, repository: str) -> dict[str, object]:
        """What a pull or push from the repository's registry adds to its query (nothing, on Docker)."""
        return {}

    # ----- containers ----------------------------------------------------------------------
    def _create(self, spec: RunSpec) -> str:
        host: dict[str, Any] = {"NetworkMode": spec.network_mode, **device_options(spec.devices)}
        if spec.mounts:
            host["Binds"] = [f"{m.source}:{m.target}:{'ro' if m.read_only else 'rw'}" for m in spec.mounts]
        body: dict[str, Any] = {
            "Image": spec.image,
            "Cmd": list(spec.command),
            "Env": [f"{key}={value}" for key, value in spec.environment.items()],
            "HostConfig": host,
        }
        if spec.entrypoint is not None:
            body["Entrypoint"] = list(spec.entrypoint)
        if spec.user:
            body["User"] = spec.user
        if spec.working_dir:
            body["WorkingDir"] = spec.working_dir
        created = self._api.call("POST", wire.Api.path("/containers/create", platform=spec.platform or None), body=body) or {}
        return str(created["Id"])

    def run(self, spec: RunSpec, *, timeout: float | None = None, follow: Lines | None = None, copy_out: Sequence[str] = ()) -> RunResult:
        with self._calls():
            container = self._create(spec)
            try:
                for folder, archive in spec.inputs.items():
                    self._api.call("PUT", wire.Api.path("/containers/{}/archive", container, path=folder), body=archive)
                try:
                    self._api.call("POST", wire.Api.path("/containers/{}/start", container))
                except wire.WireError as error:
                    raise StartFailed(error.message[:500], engine=self.label) from None
                with self._deadline(container, timeout if follow is not None else None) as expired:
                    output = self._logs(container, follow=True, each=follow) if follow is not None else ""
                    try:
                        code = int(
                            (self._api.call("POST", wire.Api.path("/containers/{}/wait", container), timeout=timeout) or {}).get(
                                "StatusCode", 1
                            )
                        )
                    except wire.Timeout:  # it ran past its time
                        code = -1
                code = -1 if expired.is_set() else code
                if follow is None:
                    output = self._logs(container, follow=False, each=None)
                files = {path: self._copy_out(container, path) for path in copy_out}
            finally:
                self._api.call("DELETE", wire.Api.path("/containers/{}", container, force=True))
        return RunResult(code, output, files)

    @contextmanager
    def _deadline(self, container: str, timeout: float | None) -> Iterator[threading.Event]:
        """Kill ``container`` once ``timeout`` seconds have passed (the event says it was): a followed log
        stream lasts as long as the container, so the wait's own timeout would come only after it."""
        expired = threading.Event()
        if timeout is None:
            yield expired
            return

        def kill() -> None:
            try:
                self._api.call("POST", wire.Api.path("/containers/{}/kill", container))
            except wire.WireError:
                return  # it stopped meanwhile, on time
            expired.set()

        timer = threading.Timer(timeout, kill)
        timer.daemon = True
        timer.start()
        try:
            yield expired
        finally:
            timer.cancel()
            timer.join()  # a kill under way ends before the caller reads the event

    def _logs(self, container: str, *, follow: bool, each: Lines | None) -> str:
        """stdout and stderr as they came (``each`` gets every piece as it comes)."""
        path = wire.Api.path("/containers/{}/logs", container, stdout=True, stderr=True, follow=follow)
        parts = []
        with self._api.open("GET", path, timeout=None if follow else True) as answer:
            for frame in answer.frames():
                text = frame.decode("utf-8", errors="replace")
                parts.append(text)
                if each is not None:
                    each(text)
        return "".join(parts)

    def _copy_out(self, container: str, path: str) -> bytes | None:
        tree = self._tree(container, path)
        return tree.get(os.path.basename(path), (0, None))[1] if tree else None

    def _tree(self, container: str, path: str) -> dict[str, tuple[int, bytes]]:
        try:
            with self._api.open("GET", wire.Api.path("/containers/{}/archive", container, path=path)) as answer:
                data = answer.read()
        except wire.WireError as error:
            if error.status == 404:
                return {}
            raise
        files = {}
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar:
                handle = tar.extractfile(member) if member.isreg() else None
                if handle is not None:
                    files[member.name.split("/", 1)[1] if "/" in member.name else member.name] = (member.mode, handle.read())
        return files

    def container_images(self) -> set[str]:
        with self._calls():
            listed = self._api.call("GET", wire.Api.path("/containers/json", all=True)) or []
        return {_sha(str(entry.get("ImageID") or "")) for entry in listed} - {""}


def device_options(devices: Devices) -> dict[str, Any]:
    """The HostConfig fields of a container's devices."""
    options = dict[str, Any]()
    if devices.shm_size:
        options["ShmSize"] = memory_bytes(devices.shm_size)
    if devices.all_gpus:
        options["DeviceRequests"] = [{"Driver": "", "Count": -1, "DeviceIDs": None, "Capabilities": [["gpu"]], "Options": {}}]
    if devices.devices:
        options["Devices"] = [_device(text) for text in devices.devices]
    if devices.group_add:
        options["GroupAdd"] = list(devices.group_add)
    if devices.ipc_mode:
        options["IpcMode"] = devices.ipc_mode
    return options


def _device(text: str) -> dict[str, str]:
    """host[:container[:permissions]] as the API's device mapping."""
    parts = text.split(":")
    host = parts[0]
    inside = parts[1] if len(parts) > 1 and parts[1] else host
    return {"PathOnHost": host, "PathInContainer": inside, "CgroupPermissions": parts[2] if len(parts) > 2 else "rwm"}


def _split_reference(reference: str) -> tuple[str, str]:
    """(repository, tag or digest) of an image reference; "latest" when it has neither."""
    if "@" in reference:
        repository, digest = reference.split("@", 1)
        return repository, digest
    head, _, last = reference.rpartition("/")
    if ":" in last:
        name, tag = last.rsplit(":", 1)
        return f"{head}/{name}" if head else name, tag
    return reference, "latest"


def is_loopback_registry(repository: str) -> bool:
    """A registry on this host's loopback (localhost, 127.0.0.0/8, ::1), which Docker reaches over plain HTTP by itself."""
    host = registry_host(repository)
    name = host[1 : host.index("]")] if host.startswith("[") and "]" in host else host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if name == "localhost":
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def registry_auth(repository: str, config: str | None = None) -> str:
    """The X-Registry-Auth header for the repository's registry, from the Docker CLI's config.json
    (``auths``, ``credHelpers``, ``credsStore``), as `docker push` would send; empty credentials when none."""
    path = config or os.path.join(os.environ.get("DOCKER_CONFIG") or os.path.join(os.path.expanduser("~"), ".docker"), "config.json")
    registry = registry_host(repository) or "https://index.docker.io/v1/"
    try:
        with open(path, encoding="utf-8") as handle:
            settings = json.load(handle)
    except (OSError, ValueError):
        return NO_AUTH
    found = _config_auth(settings, registry) if isinstance(settings, dict) else None
    return base64.urlsafe_b64encode(json.dumps(found).encode()).decode() if found else NO_AUTH


def _config_auth(settings: dict, registry: str) -> dict[str, str] | None:
    helper = (settings.get("credHelpers") or {}).get(registry) or settings.get("credsStore")
    if helper:
        try:
            done = subprocess.run([f"docker-credential-{helper}", "get"], input=registry, capture_output=True, text=True, timeout=30)
            answer = json.loads(done.stdout) if done.returncode == 0 else {}
        except (OSError, ValueError, subprocess.TimeoutExpired):
            answer = {}
        if answer.get("Secret"):
            return {"username": answer.get("Username", ""), "password": answer["Secret"], "serveraddress": registry}
    entry = (settings.get("auths") or {}).get(registry) or {}
    if entry.get("auth"):
        user, _, password = base64.b64decode(entry["auth"]).decode("utf-8", errors="replace").partition(":")
        return {"username": user, "password": password, "serveraddress": registry}
    return None
