"""`bundler job sky|k8s|slurm [PROJECT] [--image REF] [--nodes N] [--infra INFRA] [-o FILE]`: a job file for an engine; contacts nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bundler.cli.options import JsonFlag, ProjectArg, handles_errors
from bundler.cli.output import Output

job_app = typer.Typer(
    help="Write a job file for an engine that already exists (SkyPilot, Kubernetes, Slurm): the diagnostics first on every node, "
    "then the project's entry through torchrun. Contacts no cloud, cluster or engine.",
    no_args_is_help=True,
)
ImageOpt = Annotated[
    Optional[str],
    typer.Option(
        "--image",
        metavar="REF",
        help="The image the nodes run: REGISTRY/NAME[:TAG][@sha256:DIGEST] (slurm also takes FILE.tar or FILE.sif); "
        "default: the local tag of `bundler build`.",
        show_default=False,
    ),
]
NodesOpt = Annotated[
    Optional[str],
    typer.Option("--nodes", metavar="N", help="Nodes to split plan.toml's lots over (it must divide them; default 1).", show_default=False),
]
RuntimeOpt = Annotated[
    Optional[str],
    typer.Option(
        "--runtime",
        metavar="apptainer|docker|podman|pyxis",
        help="slurm: the container runtime on the nodes (default apptainer).",
        show_default=False,
    ),
]
JoinTimeoutOpt = Annotated[
    Optional[str],
    typer.Option(
        "--join-timeout",
        metavar="SECONDS",
        help="slurm: how long the nodes wait for each other at a rendezvous before the job fails naming the missing ones "
        "(default 120; BUNDLE_JOIN_TIMEOUT at submit time overrides it).",
        show_default=False,
    ),
]
InfraOpt = Annotated[
    Optional[str],
    typer.Option(
        "--infra",
        metavar="INFRA",
        help="sky: SkyPilot's resources.infra (aws, k8s/CONTEXT, slurm/CLUSTER, …); on slurm the task pulls and runs the image "
        "itself (BUNDLE_RUNTIME apptainer|docker|podman) instead of `image_id: docker:`.",
        show_default=False,
    ),
]
OutputOpt = Annotated[
    Optional[Path],
    typer.Option(
        "-o", "--output", metavar="FILE", help="Where to write the job (default: job-<engine>.* in the project).", show_default=False
    ),
]
HELP = {
    "sky": "A SkyPilot task: the image as runtime, accelerators from plan.toml, diagnostics in setup, torchrun in run.",
    "k8s": "A Kubernetes headless Service and Indexed Job: GPU limits, /dev/shm in memory, non-root, diagnostics as init container.",
    "slurm": "An sbatch script running the image through Apptainer, Docker, Podman or Pyxis (--runtime): srun + torchrun, "
    "diagnostics first on every node.",
}


def register(app: typer.Typer) -> None:
    app.add_typer(job_app, name="job")
    for engine in HELP:
        _engine_command(engine)


def _engine_command(engine: str) -> None:
    @job_app.command(engine, help=HELP[engine])
    @handles_errors
    def command(
        project: ProjectArg = None,
        image: ImageOpt = None,
        nodes: NodesOpt = None,
        output: OutputOpt = None,
        runtime: RuntimeOpt = None,
        join_timeout: JoinTimeoutOpt = None,
        infra: InfraOpt = None,
        json_output: JsonFlag = False,
    ) -> None:
        from bundler.jobs.run import make_job

        out = Output(json_output)
        result = make_job(engine, project, image=image, nodes=nodes, output=output, runtime=runtime, join_timeout=join_timeout, infra=infra)
        inputs = result.inputs
        per_node = f"{inputs.gpus_per_node} x {inputs.card}" if inputs.gpus_per_node else "no GPU (cpu backend)"
        out.say(
            f"{'Wrote' if result.written else 'Unchanged:'} {result.path}: {inputs.nodes} node(s), {per_node} each, "
            f"{inputs.processes_per_node} process(es) per node; image {inputs.image.pinned}; lock sha256 {inputs.lock_sha256[:12]}…"
        )
        for note in inputs.notes:
            out.say(f"Note: {note}", style="yellow")
        out.say(f"Launch it with: {result.launch_command}")
        out.result(result.as_dict())
