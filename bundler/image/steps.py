"""A build through the engine as bundler reports it: the context sent, the engine's refusal as
one paragraph with a hint, an image that failed its checks removed; the build output for people."""

from __future__ import annotations

import re

from bundler.engine import BuildFailed, Engine, EngineFailure
from bundler.engine.base import Lines
from bundler.errors import BuildError
from bundler.image import layout
from bundler.image.context import SentContext


class EngineBuildError(BuildError):
    """The engine stopped a build; ``log`` holds its last output lines."""

    def __init__(self, message: str, *, log: list[str], **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.log = log


def run_engine_build(
    engine: Engine,
    context: SentContext,
    progress: Lines,
    *,
    network_mode: str | None = "none",
    labels: dict[str, str] | None = None,
    buildargs: dict[str, str] | None = None,
    no_cache: bool = False,
    tag: str | None = None,
) -> str:
    """Send the context, stream the engine's output into ``progress``; the new image ID.

    Every build asks for layout.FILE_TIME as the time of the new layers' files: the engines whose
    builder sets it (Podman) then agree with the Dockerfile steps' own normalization."""
    try:
        with open(context.path, "rb") as handle:
            return engine.build(
                handle,
                on_line=progress,
                network_mode=network_mode,
                labels=labels,
                buildargs=buildargs,
                no_cache=no_cache,
                tag=tag,
                source_date=layout.FILE_TIME,
            )
    except BuildFailed as error:
        raise EngineBuildError(
            f"the image build failed: {error.explanation.strip()[:600]}\nLast build output:\n  " + "\n  ".join(error.log[-12:]),
            hint="Read the step above; a wheel that does not install for the Target's Python or platform means the lock "
            "and the base image disagree (`bundler lock` for this Target, or --base with the Target's Python).",
            value=error.explanation.strip()[:200],
            log=error.log,
        ) from None
    except EngineFailure as error:
        raise BuildError(
            f"{engine.label} refused the build: {error.explanation[:500]}.",
            hint="Check the engine's log (`journalctl -u docker`, or the `podman system service` output) and the disk space of its "
            "data root.",
        ) from None


def remove_image(engine: Engine, image_id: str) -> None:
    """Remove ``image_id`` and the untagged steps that only it used (never a tagged image)."""
    try:
        engine.remove_image(image_id, force=True)  # its untagged step images go with it
    except EngineFailure:
        pass


# Docker: "Step 2/5 : COPY …"; Podman (buildah): "[2/2] STEP 2/5: COPY …"
STEP = re.compile(r"(?:\[\d+/\d+\] )?(?:Step|STEP) (\d+)/(\d+) ?: (.*)")


def untag(engine: Engine, reference: str) -> None:
    """Take the tag ``reference`` off its image, which stays while another tag names it."""
    try:
        engine.remove_image(reference, prune=False)
    except EngineFailure:
        pass


class Progress:
    """Build output for people: step lines and a bar on stderr (quiet with a non-terminal)."""

    def __init__(self) -> None:
        self._bar = None
        self._task = None

    def __enter__(self):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        console = Console(stderr=True, highlight=False, soft_wrap=True)
        self._bar = RichProgress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),  # a Dockerfile step is the user's text, not markup
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._bar.__enter__()
        self._task = self._bar.add_task("building", total=None)
        return self

    def __exit__(self, *exc):
        self._bar.__exit__(*exc)

    def __call__(self, text: str) -> None:
        step = STEP.match(text)
        if step:
            self._bar.update(self._task, completed=int(step.group(1)) - 1, total=int(step.group(2)), description=step.group(3)[:60])
            self._bar.console.print(text, markup=False, highlight=False)
        elif text.lstrip(" -").startswith(("> Using cache", "Using cache", "Successfully")):
            self._bar.console.print(text, markup=False, highlight=False)
