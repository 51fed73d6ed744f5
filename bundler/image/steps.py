"""What the engine does for a build: take a context and build it, smoke-test the new
image in a container, remove an image that failed its checks."""

from __future__ import annotations

import json
import re

from bundler.engine import gpu_run_options
from bundler.errors import BuildError
from bundler.image import layout
from bundler.image.context import SentContext
from bundler.lock.installcheck import install_check_command
from bundler.target.bundle import Bundle

SMOKE_TIMEOUT_S = 600


def run_engine_build(engine, context: SentContext, network: bool, labels: dict, progress, no_cache: bool = False) -> str:
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
                labels=labels,
                nocache=no_cache,
                network_mode=None if network else "none",
            )
            for event in stream:
                if "error" in event or "errorDetail" in event:
                    message = event.get("error") or event["errorDetail"].get("message", "")
                    raise BuildError(
                        f"the image build failed: {message.strip()[:600]}\nLast build output:\n  " + "\n  ".join(log[-12:]),
                        hint="Read the step above; a wheel that does not install for the Target's Python or platform means the lock "
                        "and the base image disagree (`bundler lock` for this Target, or --base with the Target's Python).",
                        value=message.strip()[:200],
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
        raise BuildError(
            "the engine finished the build without an image ID.\nLast build output:\n  " + "\n  ".join(log[-12:]),
            hint="Run the build again; if it repeats, check the engine's log.",
        )
    return engine.images.get(image_id).id


def smoke_test(engine, image_id: str, bundle: Bundle) -> dict:
    """Check the lock in place and the torch build inside the new image (no network)."""
    lock_in_image = f"{layout.PROJECT}/{bundle.lock}"
    command = install_check_command(lock_in_image, bundle.target, layout.PYTHON, ("--no-index", "--disable-pip-version-check"))
    options, notes, gpu = gpu_run_options(bundle.target.backend)
    if not gpu:
        options = {}
    container = engine.containers.create(image_id, ["/bin/sh", "-c", command], network_mode="none", **options)
    try:
        container.start()
        code = int(container.wait(timeout=SMOKE_TIMEOUT_S).get("StatusCode", 1))
        output = container.logs().decode("utf-8", errors="replace")
    finally:
        container.remove(force=True)
    torch_line = next((line for line in reversed(output.strip().splitlines()) if line.startswith("{")), "")
    result = {"ok": code == 0, "exit_code": code, "gpu_flags": gpu, "notes": notes if gpu else [], "command": command}
    if torch_line:
        try:
            result.update(json.loads(torch_line))
        except ValueError:
            pass
    if code != 0:
        tail = "\n  ".join(output.strip().splitlines()[-10:])
        raise BuildError(
            f"the smoke test in the new image failed (exit {code}); the image was removed and nothing tagged:\n  {tail}",
            hint="The installed packages differ from the lock or torch is not the Target's build: check the lock was made for this "
            "Target (`bundler lock`) and the base image's Python is the Target's.",
            value=code,
        )
    return result


def image_exists(engine, reference: str) -> bool:
    import docker.errors

    try:
        engine.images.get(reference)
        return True
    except docker.errors.ImageNotFound:
        return False


def remove_image(engine, image_id: str) -> None:
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
            TextColumn("{task.description}"),
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
