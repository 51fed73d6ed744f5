"""The one interface every container engine gives bundler, and the small results it answers with.

Everything bundler asks of an engine — build a context, look at an image, run a
container, save, load, push, tag, remove — is a method of ``Engine``; each engine is a
module of this package (``dockerapi.py``, ``podman.py``) and nothing above this package
talks to an engine any other way. Results are plain dataclasses, never the SDK's own
objects, and an engine's refusal is an ``EngineFailure`` (an ExternalError: exit 9 when
nothing above says more).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from bundler.errors import ExternalError

Lines = Callable[[str], object]  # what it returns is dropped (sys.stderr.write's count)


class EngineFailure(ExternalError):
    """The engine refused or broke off a request; ``explanation`` is its own words."""

    def __init__(self, explanation: str, *, engine: str = "the engine") -> None:
        super().__init__(
            f"{engine} refused a request: {explanation[:500]}.",
            hint="Check the engine's log (`journalctl -u docker`, or the `podman system service` output) and its free disk space.",
        )
        self.explanation = explanation


class ImageMissing(EngineFailure):
    """No image of that name or ID on the engine."""


class BuildFailed(EngineFailure):
    """A build step failed; ``log`` holds the build's output lines up to it."""

    def __init__(self, explanation: str, *, log: list[str], engine: str = "the engine") -> None:
        super().__init__(explanation, engine=engine)
        self.log = log


class StartFailed(EngineFailure):
    """A container was created but could not start (no such command in the image, a bad device)."""


@dataclass(frozen=True)
class Image:
    id: str  # sha256:<64 hex>
    tags: tuple[str, ...] = ()  # as bundler names them (Podman's implied localhost/ left out)
    labels: Mapping[str, str] = field(default_factory=dict)
    digests: tuple[str, ...] = ()  # repo@sha256:… of a pulled image
    size: int = 0
    created: str = ""  # RFC 3339
    parent: str = ""  # sha256:… of the image it was built on ("" for a base or pulled image)
    architecture: str = ""
    user: str = ""
    entrypoint: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    layers: tuple[str, ...] = ()  # diff IDs, oldest first

    @property
    def short_id(self) -> str:
        return self.id.split(":")[-1][:12]


@dataclass(frozen=True)
class HistoryEntry:
    image_id: str  # sha256:… of the step's image, or "<missing>"
    created_by: str
    size: int


@dataclass(frozen=True)
class EngineVersion:
    name: str  # "docker" | "podman"
    version: str


@dataclass(frozen=True)
class EngineHost:
    """What the engine says of the machine it runs on (for the loopback route's question)."""

    name: str
    operating_system: str
    rootless: bool


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool = True


@dataclass(frozen=True)
class Devices:
    """What a container gets of the host's accelerators (engine.host.device_flags makes it)."""

    shm_size: str = ""
    all_gpus: bool = False  # NVIDIA's container toolkit: every GPU
    devices: tuple[str, ...] = ()  # host:container:permissions
    group_add: tuple[str, ...] = ()
    ipc_mode: str = ""


@dataclass(frozen=True)
class RunSpec:
    image: str
    command: Sequence[str]
    entrypoint: Sequence[str] | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    mounts: Sequence[Mount] = ()
    user: str = ""
    working_dir: str = ""
    network_mode: str = "none"
    platform: str = ""
    devices: Devices = Devices()
    inputs: Mapping[str, bytes] = field(default_factory=dict)  # folder in the container -> a tar unpacked there before start


@dataclass(frozen=True)
class RunResult:
    exit_code: int  # -1 when it ran past its time
    output: str  # stdout and stderr
    files: Mapping[str, bytes | None] = field(default_factory=dict)  # copied out after it stopped (None: not there)

    @property
    def timed_out(self) -> bool:
        return self.exit_code == -1


@dataclass(frozen=True)
class PushEvent:
    layer: str = ""
    status: str = ""
    current: int = 0
    digest: str = ""
    error: str = ""


class Engine(ABC):
    """A container engine as bundler uses it (repo2docker's ContainerEngine is the model)."""

    name: str = ""  # "docker" | "podman": what the user passes to --engine
    label = ""  # how messages name it
    added_labels: tuple[str, ...] = ()  # labels the engine's builder puts on every image by itself

    def __init__(self, address: str) -> None:
        self.address = address

    @abstractmethod
    def ping(self) -> None:
        """Return when the engine answers; raise EngineFailure otherwise."""

    @abstractmethod
    def version(self) -> EngineVersion: ...

    @abstractmethod
    def host(self) -> EngineHost: ...

    @abstractmethod
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
        """Build a context tar (Dockerfile at its root); each output line to ``on_line``; the new image's ID.

        ``source_date``: the time of every file of the new layers, where the engine's builder
        sets it (Podman's buildah does, and then dates the image by it too); Docker's classic
        builder cannot, so the Dockerfile's own steps set their files' times (image/dockerfile.py).
        BuildFailed when a step fails, EngineFailure when the engine refuses the build."""

    @abstractmethod
    def image(self, reference: str) -> Image | None:
        """The image of that tag or ID; None when there is none."""

    @abstractmethod
    def images(self, *, all: bool = False, name: str | None = None) -> list[Image]:
        """Tagged images and untagged leaves (``all``: every step image too); ``name`` narrows to a repository."""

    @abstractmethod
    def pull(self, reference: str) -> Image: ...

    @abstractmethod
    def tag(self, image: str, repository: str, tag: str) -> None: ...

    @abstractmethod
    def remove_image(self, reference: str, *, force: bool = False, prune: bool = True) -> None:
        """Remove a tag (the image with its last tag, and its untagged parents when ``prune``); EngineFailure when refused."""

    @abstractmethod
    def history(self, image: str) -> list[HistoryEntry]:
        """The image's steps, newest first."""

    @abstractmethod
    def unique_sizes(self) -> dict[str, int]:
        """{image ID: bytes its own layers take, not shared with another image}."""

    @abstractmethod
    def save(self, reference: str, chunk_size: int) -> Iterator[bytes]:
        """`docker save` of one image as a stream of chunks."""

    @abstractmethod
    def load(self, archive: BinaryIO) -> None:
        """`docker load` of a saved archive."""

    @abstractmethod
    def push(self, repository: str, tag: str) -> Iterator[PushEvent]: ...

    @abstractmethod
    def run(self, spec: RunSpec, *, timeout: float | None = None, follow: Lines | None = None, copy_out: Sequence[str] = ()) -> RunResult:
        """Run a container to its end and remove it: its exit code, output and the files ``copy_out`` names.

        ``follow`` gets the output as it comes. StartFailed when it cannot start."""

    @abstractmethod
    def container_images(self) -> set[str]:
        """The IDs of images any container (running or not) uses."""

    def loopback_blocker(self) -> str:
        """Why a build with ``network_mode="host"`` would not see this host's 127.0.0.1 ("" when it would).

        The engine must be this machine's own: a local socket, the same host name, not a
        rootless engine (its host network is a namespace of its own) nor a VM (Docker
        Desktop, colima, lima: their engine names itself after the VM).
        """
        import socket

        if self.address and not self.address.startswith("unix://"):
            return f"the engine is remote ({self.address})"
        try:
            host = self.host()
        except EngineFailure as error:
            return f"the engine did not describe itself ({error.explanation[:200]})"
        if "Docker Desktop" in host.operating_system:
            return "the engine runs in Docker Desktop's virtual machine"
        if host.rootless:
            return "the engine is rootless: its host network is a namespace of its own"
        if host.name != socket.gethostname():
            return f"the engine runs on {host.name!r}, not on this host ({socket.gethostname()!r})"
        return ""
