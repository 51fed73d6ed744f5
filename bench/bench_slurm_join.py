"""How long a Slurm job waits for a node that never joins: the sbatch script of an earlier
commit against the current one, on the loopback cluster of tests/slurmcluster.py (root,
Debian's Slurm and munge).

    python bench/bench_slurm_join.py --project LOCKED_CPU_PROJECT [--found COMMIT] [--join-timeout 120]

Both scripts run the Apptainer shape with ``apptainer`` replaced by a shim: node 2's step
never starts, node 1's runs the host's torchrun with the script's own arguments (the
rendezvous fails before any file of the image is needed). Prints one JSON document: the
job's state, exit code, seconds from sbatch to the end, and whether its output names node 2
as the node that never started. Run it alone: two clusters on one machine share torchrun's
ports on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHIM = """#!/bin/bash
[ "${{SLURMD_NODENAME:-}}" = 127.0.0.2 ] && exec sleep 100000
while [ "$1" != /opt/venv/bin/torchrun ]; do shift; done; shift
exec {torchrun} "$@"
"""


def renderer(commit: str | None, folder: Path):
    """bundler/jobs/slurm.py of ``commit`` (None: the working tree's)."""
    if commit is None:
        from bundler.jobs import slurm

        return slurm
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:bundler/jobs/slurm.py"], check=True, capture_output=True, text=True)
    path = folder / f"slurm_{commit}.py"
    path.write_text(source.stdout)
    spec = importlib.util.spec_from_file_location(f"slurm_{commit}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, required=True, help="a locked CPU project (e.g. the tests' example)")
    parser.add_argument("--found", metavar="COMMIT", help="also time the script of this commit")
    parser.add_argument("--join-timeout", default="120")
    args = parser.parse_args()
    from bundler.jobs.inputs import read_inputs
    from tests import slurmcluster

    root = Path(tempfile.mkdtemp(prefix="bench-slurm-"))
    project = Path(shutil.copytree(args.project, root / "example", ignore=shutil.ignore_patterns("runs", "*.out", "*.sbatch")))
    plan = project / "plan.toml"
    plan.write_text(re.sub(r"(?m)^lots = \d+", "lots = 2", plan.read_text()))
    (project / "image.sif").write_text("")
    (root / "bin").mkdir()
    shim = root / "bin" / "apptainer"
    shim.write_text(SHIM.format(torchrun=Path(sys.executable).parent / "torchrun"))
    shim.chmod(0o755)
    cluster = slurmcluster.start(root / "cluster")
    results: dict = {"cluster_start_s": round(cluster.started_s, 2)}
    try:
        for label, commit in ([("found", args.found)] if args.found else []) + [("now", None)]:
            inputs = read_inputs("slurm", project, str(project / "image.sif"), "2", "apptainer", args.join_timeout)
            module = renderer(commit, root)
            script = project / f"{label}.sbatch"
            script.write_text(module.SHEBANG + "\n" + module.render(inputs))
            job = cluster.submit(script, project, env={"PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}"})
            state, code, seconds = cluster.wait(job, 1200)
            output = (project / f"{inputs.name}-{job}.out").read_text(errors="replace")
            named = "node(s) 127.0.0.2 never started it" in output
            results[label] = {
                "commit": commit or "working tree",
                "state": state,
                "exit": code,
                "seconds": round(seconds, 1),
                "names_node": named,
            }
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
