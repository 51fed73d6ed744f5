"""`bundler job ENGINE` from start to end: read the inputs once, render, write with the header."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import UsageError
from bundler.jobs import jobfile
from bundler.jobs.inputs import JobInputs, read_inputs

DEFAULT_FILES = {"sky": "job-sky.yaml", "k8s": "job-k8s.yaml", "slurm": "job-slurm.sbatch"}


@dataclass(frozen=True)
class JobResult:
    inputs: JobInputs
    path: Path
    written: bool  # False: the file already held exactly this job

    @property
    def launch_command(self) -> str:
        file = shlex.quote(str(self.path))
        return {
            "sky": f"sky launch -c {self.inputs.name} {file}",
            "k8s": f"kubectl apply -f {file}",
            "slurm": f"sbatch {file}",
        }[self.inputs.engine]

    def as_dict(self) -> dict:
        return {"ok": True, "path": str(self.path), "written": self.written, "launch_command": self.launch_command, **self.inputs.as_dict()}


def make_job(
    engine: str,
    project: Path | None,
    *,
    image: str | None = None,
    nodes: str | None = None,
    output: Path | None = None,
    runtime: str | None = None,
    join_timeout: str | None = None,
    infra: str | None = None,
) -> JobResult:
    from bundler.jobs import k8s, sky, slurm

    if infra is not None and engine != "sky":
        raise UsageError("--infra is an option of `bundler job sky` only.", hint=f"Leave it out of `bundler job {engine}`.", value=infra)
    chosen_infra = sky.check_infra(infra)
    inputs = read_inputs(engine, project, image, nodes, runtime, join_timeout)
    body = sky.render(inputs, chosen_infra) if engine == "sky" else {"k8s": k8s, "slurm": slurm}[engine].render(inputs)
    record = inputs.record() | ({"infra": chosen_infra} if chosen_infra else {})
    text = jobfile.compose(engine, record, body, shebang=slurm.SHEBANG if engine == "slurm" else "")
    path = Path(output) if output is not None else inputs.bundle.root / DEFAULT_FILES[engine]
    written = jobfile.write(path, text)
    return JobResult(inputs, path, written)
