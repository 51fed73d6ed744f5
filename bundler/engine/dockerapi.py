"""Docker: the Engine interface over the Docker Engine API, through the Docker SDK (docker-py).

The only module, with podman.py and dockerignore.py, that imports the SDK. The SDK's
objects and errors stay here: callers get engine/base.py's dataclasses and
``EngineFailure``. docker-py lets some of requests' errors (a refused connection, a read
timeout) through unwrapped; they are engine failures too.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, BinaryIO

from bundler.engine.base import (
    BuildFailed,
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


def _sha(identifier: str) -> str:
    """An image ID in one spelling: sha256:<hex> (Podman's API leaves the prefix off some)."""
    if not identifier or identifier.startswith("sha256:") or not re.fullmatch(r"[0-9a-f]{64}", identifier):
        return identifier
    return f"sha256:{identifier}"


class DockerEngine(Engine):
    name = "docker"
    label = "Docker"

    def __init__(self, address: str, *, timeout: int, client: Any = None) -> None:
        super().__init__(address)
        self._client = client if client is not None else self._connect(address, timeout)

    def _connect(self, address: str, timeout: int) -> Any:
        import docker

        try:
            if os.environ.get("DOCKER_HOST", "") == address or address == DEFAULT_ADDRESS and not os.environ.get("DOCKER_HOST"):
                return docker.from_env(timeout=timeout)  # DOCKER_TLS_VERIFY and DOCKER_CERT_PATH count too
            return docker.DockerClient(base_url=address, timeout=timeout)
        except docker.errors.DockerException as error:
            raise EngineFailure(_words(error), engine=self.label) from None

    # ----- errors --------------------------------------------------------------------------
    @contextmanager
    def _calls(self) -> Iterator[None]:
        """Every SDK call inside: the SDK's and requests' errors become EngineFailure."""
        import docker.errors
        from requests.exceptions import RequestException

        try:
            yield
        except docker.errors.ImageNotFound as error:
            raise ImageMissing(_words(error), engine=self.label) from None
        except (docker.errors.DockerException, RequestException) as error:
            raise EngineFailure(_words(error), engine=self.label) from None

    # ----- the engine ----------------------------------------------------------------------
    def ping(self) -> None:
        with self._calls():
            self._client.ping()

    def version(self) -> EngineVersion:
        with self._calls():
            answer = self._client.version()
        return EngineVersion(self.name, str(answer.get("Version", "")), str(answer.get("ApiVersion", "")))

    def host(self) -> EngineHost:
        with self._calls():
            info = self._client.info()
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
        options = {"labels": dict(labels or {}), "buildargs": dict(buildargs or {}), "nocache": no_cache, "network_mode": network_mode}
        with self._calls():
            for event in self._build_events(context, tag, source_date, options):
                if "error" in event or "errorDetail" in event:
                    message = (event.get("error") or event["errorDetail"].get("message", "")).strip()
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
                    image_id = aux["ID"]
            if not image_id:
                raise BuildFailed("the build finished without an image ID", log=log, engine=self.label)
            return str(self._client.images.get(image_id).id)

    def _build_events(self, context: BinaryIO, tag: str | None, source_date: int | None, options: dict[str, Any]) -> Iterator[dict]:
        """The build's JSON events (``source_date`` is not Docker's to honour)."""
        return self._client.api.build(
            fileobj=context, custom_context=True, rm=True, forcerm=True, pull=False, decode=True, tag=tag, **options
        )

    # ----- images --------------------------------------------------------------------------
    def _image(self, raw: Any) -> Image:
        attrs = raw.attrs
        config = attrs.get("Config") or {}
        env = dict(item.split("=", 1) for item in config.get("Env") or [] if "=" in item)
        entrypoint = config.get("Entrypoint")
        return Image(
            id=_sha(str(raw.id)),
            tags=tuple(self._tag_name(tag) for tag in raw.tags or []),
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
                return self._image(self._client.images.get(reference))
        except ImageMissing:
            return None

    def images(self, *, all: bool = False, name: str | None = None) -> list[Image]:
        with self._calls():
            return [self._image(raw) for raw in self._client.images.list(name=name, all=all)]

    def pull(self, reference: str) -> Image:
        with self._calls():
            return self._image(self._client.images.pull(reference))

    def tag(self, image: str, repository: str, tag: str) -> None:
        with self._calls():
            self._client.api.tag(image, repository, tag, force=True)

    def remove_image(self, reference: str, *, force: bool = False, prune: bool = True) -> None:
        with self._calls():
            self._client.api.remove_image(reference, force=force, noprune=not prune)

    def history(self, image: str) -> list[HistoryEntry]:
        with self._calls():
            entries = self._client.api.history(image)
        return [
            HistoryEntry(_sha(str(entry.get("Id") or "<missing>")), str(entry.get("CreatedBy") or ""), int(entry.get("Size") or 0))
            for entry in entries
        ]

    def unique_sizes(self) -> dict[str, int]:
        with self._calls():
            listed = self._client.api.df().get("Images") or []
        return {_sha(str(entry["Id"])): int(entry.get("Size", 0)) - max(int(entry.get("SharedSize", 0)), 0) for entry in listed}

    def save(self, reference: str, chunk_size: int) -> Iterator[bytes]:
        with self._calls():
            yield from self._client.api.get_image(reference, chunk_size=chunk_size)

    def load(self, archive: BinaryIO) -> None:
        with self._calls():
            for event in self._client.api.load_image(archive):
                if isinstance(event, dict) and event.get("error"):
                    raise EngineFailure(str(event["error"]), engine=self.label)

    def import_rootfs(self, archive: bytes, repository: str, tag: str, changes: Sequence[str]) -> None:
        with self._calls():
            self._client.api.import_image_from_data(archive, repository=repository, tag=tag, changes=list(changes))

    def push(self, repository: str, tag: str) -> Iterator[PushEvent]:
        with self._calls():
            for event in self._client.api.push(repository, tag=tag, stream=True, decode=True):
                if "error" in event or "errorDetail" in event:
                    yield PushEvent(error=str(event.get("error") or (event.get("errorDetail") or {}).get("message") or "unknown error"))
                    return
                aux = event.get("aux") or {}
                current = (event.get("progressDetail") or {}).get("current") or 0
                digest = str(aux.get("Digest", "")) if isinstance(aux, dict) else ""
                yield PushEvent(str(event.get("id") or ""), str(event.get("status") or ""), int(current), digest)

    # ----- containers ----------------------------------------------------------------------
    def _create(self, spec: RunSpec) -> Any:
        options: dict[str, Any] = {
            "command": list(spec.command),
            "environment": dict(spec.environment),
            "network_mode": spec.network_mode,
        }
        if spec.entrypoint is not None:
            options["entrypoint"] = list(spec.entrypoint)
        if spec.mounts:
            options["volumes"] = {m.source: {"bind": m.target, "mode": "ro" if m.read_only else "rw"} for m in spec.mounts}
        for key, value in (("user", spec.user), ("working_dir", spec.working_dir), ("platform", spec.platform)):
            if value:
                options[key] = value
        options.update(self._device_options(spec))
        return self._client.containers.create(spec.image, **options)

    def _device_options(self, spec: RunSpec) -> dict[str, Any]:
        devices, options = spec.devices, dict[str, Any]()
        if devices.shm_size:
            options["shm_size"] = devices.shm_size
        if devices.all_gpus:
            import docker.types

            options["device_requests"] = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]
        if devices.devices:
            options["devices"] = list(devices.devices)
        if devices.group_add:
            options["group_add"] = list(devices.group_add)
        if devices.ipc_mode:
            options["ipc_mode"] = devices.ipc_mode
        return options

    def run(self, spec: RunSpec, *, timeout: float | None = None, follow: Lines | None = None, copy_out: Sequence[str] = ()) -> RunResult:
        import docker.errors
        from requests.exceptions import ConnectionError as Disconnected
        from requests.exceptions import ReadTimeout

        with self._calls():
            container = self._create(spec)
            try:
                for folder, archive in spec.inputs.items():
                    container.put_archive(folder, archive)
                try:
                    container.start()
                except docker.errors.APIError as error:
                    raise StartFailed(_words(error), engine=self.label) from None
                output = ""
                if follow is not None:
                    parts = []
                    for chunk in container.logs(stream=True, follow=True):
                        text = chunk.decode("utf-8", errors="replace")
                        parts.append(text)
                        follow(text)
                    output = "".join(parts)
                try:
                    code = int(container.wait(timeout=timeout).get("StatusCode", 1))
                except (ReadTimeout, Disconnected):  # it ran past its time
                    code = -1
                if follow is None:
                    output = container.logs(stdout=True, stderr=True).decode("utf-8", errors="replace")
                files = {path: self._copy_out(container, path) for path in copy_out}
            finally:
                container.remove(force=True)
        return RunResult(code, output, files)

    def _copy_out(self, container: Any, path: str) -> bytes | None:
        tree = self._tree(container, path)
        return tree.get(os.path.basename(path), (0, None))[1] if tree else None

    def _tree(self, container: Any, path: str) -> dict[str, tuple[int, bytes]]:
        import docker.errors

        try:
            stream, _ = container.get_archive(path)
        except docker.errors.NotFound:
            return {}
        files = {}
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            for member in tar:
                handle = tar.extractfile(member) if member.isreg() else None
                if handle is not None:
                    files[member.name.split("/", 1)[1] if "/" in member.name else member.name] = (member.mode, handle.read())
        return files

    def read_files(self, image: str, paths: Sequence[str]) -> dict[str, dict[str, tuple[int, bytes]]]:
        from concurrent.futures import ThreadPoolExecutor

        with self._calls():
            container = self._client.containers.create(image, ["true"], network_mode="none")
            try:
                with ThreadPoolExecutor(max_workers=len(paths) or 1) as pool:  # one round trip's wait for all of them
                    return dict(zip(paths, pool.map(lambda path: self._tree(container, path), paths), strict=True))
            finally:
                container.remove(force=True)

    def container_images(self) -> set[str]:
        with self._calls():
            return {_sha(str(c.attrs.get("ImageID") or "")) for c in self._client.containers.list(all=True, sparse=True)} - {""}


def _words(error: Exception) -> str:
    """The engine's own explanation, one line."""
    text = str(getattr(error, "explanation", "") or error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:500]
