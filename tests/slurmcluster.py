"""A real Slurm cluster on loopback for the job tests: Debian's munged, slurmctld and two slurmd
(nodes 127.0.0.1 and 127.0.0.2), configuration, keys and spools in a private folder, every
daemon started and stopped here by its PID.

Node 2 lives in a hostname and mount namespace of its own (``unshare --uts --mount``) with its
own dockerd (own data root, exec root, pid file and socket, bound over /run/docker.sock inside
the namespace only, and a bridge of its own that this module creates and deletes), because
torchrun's rendezvous tells agents apart by hostname and two containers of one engine look like
one. Node 1 uses the machine's engine. Debian's slurmd serves one node name per daemon, hence
two addresses and two ports.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "unshare", "ip")
NODES = ("127.0.0.1", "127.0.0.2")
_CONF = """ClusterName=loop
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
AuthType=auth/munge
AuthInfo=socket={folder}/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={folder}/ctld
SlurmdSpoolDir={folder}/spool-%n
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd-%n.pid
SlurmctldLogFile={folder}/log/slurmctld.log
SlurmdLogFile={folder}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
ReturnToService=2
MinJobAge=3600
FirstJobId={first_job}
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=127.0.0.1 NodeAddr=127.0.0.1 Port={port1} CPUs={cpus} State=UNKNOWN
NodeName=127.0.0.2 NodeAddr=127.0.0.2 Port={port2} CPUs={cpus} State=UNKNOWN
PartitionName=loop Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
# inside node 2's namespaces: its own hostname, its own engine on the default socket, then slurmd
_NODE2 = """set -eu
hostname node2
dockerd --data-root "$D/data" --exec-root "$D/exec" --pidfile "$D/dockerd.pid" -H "unix://$D/docker.sock" \\
  --bridge="$BRIDGE" --iptables=false --ip-masq=false >"$D/dockerd.log" 2>&1 &
for _ in $(seq 300); do [ -S "$D/docker.sock" ] && break; sleep 0.1; done
mount --bind "$D/docker.sock" /run/docker.sock
exec slurmd -D -f "$SLURM_CONF" -N 127.0.0.2
"""


def missing() -> str:
    """Why a cluster cannot start here ("" when it can)."""
    absent = [name for name in PACKAGES if shutil.which(name) is None]
    if absent:
        return f"{', '.join(absent)} not installed (apt-get install slurmctld slurmd slurm-client munge; tests/host-setup.sh does it)"
    if os.geteuid() != 0:
        return "the loopback cluster needs root (namespaces, a bridge, a second dockerd)"
    if not Path("/run/docker.sock").is_socket():
        return "no /run/docker.sock for node 2's engine to stand in for"
    return ""


@dataclass
class Cluster:
    folder: Path
    env: dict
    bridge: str
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    started_s: float = 0.0

    @property
    def node2_docker(self) -> str:
        return f"unix://{self.folder / 'node2' / 'docker.sock'}"

    def submit(self, script: Path, cwd: Path, env: dict | None = None) -> str:
        completed = subprocess.run(
            ["sbatch", "--parsable", str(script)], cwd=cwd, env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=60
        )
        assert completed.returncode == 0, completed.stderr
        return completed.stdout.strip().split(";")[0]

    def wait(self, job: str, timeout: float) -> tuple[str, str, float]:
        """(state, exit code, seconds from submission) once the job has ended; polls scontrol (sbatch --wait rounds to ~42 s)."""
        start = time.monotonic()
        while True:
            shown = subprocess.run(["scontrol", "-o", "show", "job", job], env=self.env, capture_output=True, text=True, timeout=30).stdout
            state = re.search(r"JobState=(\S+)", shown)
            if state and state.group(1) not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
                code = re.search(r" ExitCode=(\S+)", shown)
                return state.group(1), code.group(1) if code else "", time.monotonic() - start
            if time.monotonic() - start > timeout:
                subprocess.run(["scancel", job], env=self.env, timeout=30)
                raise AssertionError(f"job {job} still {state.group(1) if state else '?'} after {timeout} s: {shown}")
            time.sleep(0.3)

    def stop(self) -> None:
        for name in ("slurmd-2", "slurmd-1", "slurmctld"):
            _stop(self.processes.get(name))
        pidfile = self.folder / "node2" / "dockerd.pid"
        if pidfile.is_file():
            _stop_pid(int(pidfile.read_text().strip() or 0))
        _stop(self.processes.get("munged"))
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True, timeout=30)


def start(folder: Path) -> Cluster:
    """Munge, the controller and both nodes, waiting until both nodes are idle."""
    begin = time.monotonic()
    for name in ("munge", "ctld", "log", "node2"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    key = folder / "munge" / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    folder.chmod(0o755)
    (folder / "munge").chmod(0o755)  # clients reach the socket through it
    base = 17000 + secrets.randbelow(2000) * 3
    conf = folder / "slurm.conf"
    first_job = 1000 + secrets.randbelow(100000)  # job IDs are the rendezvous IDs: keep two clusters of one machine apart
    conf.write_text(
        _CONF.format(folder=folder, ctld_port=base, port1=base + 1, port2=base + 2, cpus=os.cpu_count() or 1, first_job=first_job)
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SLURM_", "DOCKER_"))}
    env["SLURM_CONF"] = str(conf)
    bridge = f"bsl{secrets.token_hex(3)}"
    cluster = Cluster(folder, env, bridge)
    try:
        for command in (["ip", "link", "add", bridge, "type", "bridge"], ["ip", "link", "set", bridge, "up"]):
            subprocess.run(command, check=True, capture_output=True, timeout=30)
        subprocess.run(["ip", "addr", "add", f"10.{200 + secrets.randbelow(50)}.{secrets.randbelow(250)}.1/24", "dev", bridge], check=True)
        munge = folder / "munge"
        cluster.processes["munged"] = _daemon(
            ["munged", "-F", "-f", f"--socket={munge}/sock", f"--key-file={key}", f"--pid-file={munge}/pid"]
            + [f"--log-file={munge}/log", f"--seed-file={munge}/seed"],
            folder / "log" / "munged.out",
            env,
        )
        _until(lambda: (munge / "sock").is_socket(), 10, "munged did not create its socket")
        cluster.processes["slurmctld"] = _daemon(["slurmctld", "-D", "-f", str(conf)], folder / "log" / "slurmctld.out", env)
        cluster.processes["slurmd-1"] = _daemon(["slurmd", "-D", "-f", str(conf), "-N", NODES[0]], folder / "log" / "slurmd-1.out", env)
        node2 = {**env, "D": str(folder / "node2"), "BRIDGE": bridge}
        cluster.processes["slurmd-2"] = _daemon(
            ["unshare", "--uts", "--mount", "--propagation", "private", "bash", "-c", _NODE2], folder / "log" / "slurmd-2.out", node2
        )
        _until(lambda: _idle(env) == len(NODES), 60, f"the nodes did not come up idle; see {folder / 'log'}")
        _until(
            lambda: subprocess.run(["docker", "-H", cluster.node2_docker, "info"], capture_output=True).returncode == 0,
            60,
            "node 2's dockerd",
        )
    except BaseException:
        cluster.stop()
        raise
    cluster.started_s = time.monotonic() - begin
    return cluster


def _daemon(argv: list[str], log: Path, env: dict) -> subprocess.Popen:
    with log.open("ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _idle(env: dict) -> int:
    shown = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=env, capture_output=True, text=True, timeout=30).stdout
    return shown.split().count("idle")


def _until(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {seconds} s")
        time.sleep(0.1)


def _stop(process: subprocess.Popen | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:  # slurmd retrying its registration ignores SIGTERM
        process.kill()
        process.wait(timeout=15)


def _stop_pid(pid: int) -> None:
    if pid <= 1:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
