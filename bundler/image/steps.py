"""What the engine does for a build: take a context and build it, tell whether an image
exists, remove an image that failed its checks; the build output for people."""

from __future__ import annotations

import re

from bundler.errors import BuildError
from bundler.image.context import SentContext


class EngineBuildError(BuildError):
    """The engine stopped a build; ``log`` holds its last output lines."""

    def __init__(self, message: str, *, log: list[str], **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.log = log


def run_engine_build(
    engine,
    context: SentContext,
    progress,
    *,
    network_mode: str | None = "none",
    labels: dict | None = None,
    buildargs: dict | None = None,
    no_cache: bool = False,
) -> str:
    """Send the context, stream the engine's output into ``progress``; the new image ID."""
    import docker.errors

    image_id, log = None, []
    try:
        with open(context.path, "rb") as handle:
            stream = engine.api.build(
                fileobj=handle,
                custom_context=True,
                rm=True,
                forcerm=True,
                pull=False,
                decode=True,
                labels=labels or {},
                buildargs=buildargs or {},
                nocache=no_cache,
                network_mode=network_mode,
            )
            for event in stream:
                if "error" in event or "errorDetail" in event:
                    message = event.get("error") or event["errorDetail"].get("message", "")
                    raise EngineBuildError(
                        f"the image build failed: {message.strip()[:600]}\nLast build output:\n  " + "\n  ".join(log[-12:]),
                        hint="Read the step above; a wheel that does not install for the Target's Python or platform means the lock "
                        "and the base image disagree (`bundler lock` for this Target, or --base with the Target's Python).",
                        value=message.strip()[:200],
                        log=log,
                    )
                text = event.get("stream", "")
                if text:
                    for line in text.rstrip("\n").splitlines():
                        if line.strip():
                            log.append(line.rstrip())
                            progress.line(line.rstrip())
                    found = re.search(r"Successfully built ([0-9a-f]{12,64})", text)
                    if found:
                        image_id = found.group(1)
                aux = event.get("aux") or {}
                if aux.get("ID"):
                    image_id = aux["ID"]
    except docker.errors.APIError as error:
        raise BuildError(
            f"the engine refused the build: {(error.explanation or str(error))[:500]}.",
            hint="Check the engine's log (`journalctl -u docker`) and the disk space of its data root.",
        ) from None
    if image_id is None:
        raise EngineBuildError(
            "the engine finished the build without an image ID.\nLast build output:\n  " + "\n  ".join(log[-12:]),
            hint="Run the build again; if it repeats, check the engine's log.",
            log=log,
        )
    return engine.images.get(image_id).id


def remove_image(engine, image_id: str) -> None:
    """Remove ``image_id`` and the untagged steps that only it used (never a tagged image)."""
    import docker.errors

    try:
        engine.api.remove_image(image_id, force=True, noprune=False)  # its untagged step images go with it
    except docker.errors.APIError:
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

    def line(self, text: str) -> None:
        step = re.match(r"Step (\d+)/(\d+) : (.*)", text)
        if step:
            self._bar.update(self._task, completed=int(step.group(1)) - 1, total=int(step.group(2)), description=step.group(3)[:60])
            self._bar.console.print(text, markup=False, highlight=False)
        elif text.startswith((" ---> Using cache", "Successfully")):
            self._bar.console.print(text, markup=False, highlight=False)
