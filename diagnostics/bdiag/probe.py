"""Every observation the stages make of the machine goes through one Probe.

The stages judge; the probe only looks and measures. Tests replace single methods to
inject what a broken machine would show (an old driver, a MIG slice, a slow GEMM) while
the stage logic runs for real.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from bdiag import FOLDER, transport
from bdiag.probe_gpu import GpuProbe
from bdiag.probe_host import HostProbe

SUBPROCESS_TIMEOUT = 300


class Probe(GpuProbe, HostProbe):
    """Looks at this machine. ``prestart`` launches the slow independent subprocesses early.

    GpuProbe adds what nvidia-smi and the driver tell about the cards, HostProbe the
    container's limits (cgroup memory and CPU, open files)."""

    def __init__(self) -> None:
        self._pip: subprocess.Popen[str] | None = None
        self._fresh: subprocess.Popen[str] | None = None

    def prestart(self) -> None:
        """Start `pip check` and a fresh interpreter (importing torch) while the first stages run.

        The fresh process is what the checkpoint stage reloads in: it starts before any state
        exists and shares nothing with this one, so it stays a fresh process, only warmed up.
        """
        if importlib.util.find_spec("pip") is not None:
            self._pip = subprocess.Popen(
                [self.executable(), "-m", "pip", "check", "--disable-pip-version-check"],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
            )
        script = os.path.join(FOLDER, "bdiag", "reload_checkpoint.py")
        self._fresh = subprocess.Popen(
            [self.executable(), script, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def close(self) -> None:
        for process in (self._pip, self._fresh):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()
        self._pip = self._fresh = None

    # --- interpreter -----------------------------------------------------------------
    def environ(self):
        return os.environ

    def executable(self) -> str:
        return sys.executable

    def prefix(self) -> str:
        return sys.prefix

    def base_prefix(self) -> str:
        return getattr(sys, "base_prefix", sys.prefix)

    def python_version(self) -> tuple:
        return tuple(sys.version_info[:3])

    # --- packages --------------------------------------------------------------------
    def installed_distributions(self) -> dict:
        """Normalized name -> version of every distribution this interpreter sees."""
        from importlib import metadata

        from bdiag.lockfile import normalize

        found: dict[str, str] = {}
        for dist in metadata.distributions():
            name = dist.metadata["Name"] if dist.metadata else None
            if name:
                found.setdefault(normalize(name), dist.version)
        return found

    def pip_check(self) -> tuple[bool, int, str]:
        """(pip present, exit code, output) of ``python -m pip check``."""
        if self._pip is not None:
            process, self._pip = self._pip, None
            output, _ = process.communicate(timeout=SUBPROCESS_TIMEOUT)
            return True, process.returncode, output.strip()
        if importlib.util.find_spec("pip") is None:
            return False, 0, ""
        done = subprocess.run(
            [self.executable(), "-m", "pip", "check", "--disable-pip-version-check"],
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT,
        )
        return True, done.returncode, (done.stdout + done.stderr).strip()

    # --- torch and devices ---------------------------------------------------------------
    def import_torch(self):
        import torch

        return torch

    def cuda_available(self, torch) -> bool:
        return bool(torch.cuda.is_available())

    def device_count(self, torch) -> int:
        return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0

    def device_properties(self, torch, index: int) -> dict:
        props = torch.cuda.get_device_properties(index)
        free, total = torch.cuda.mem_get_info(index)
        info = {
            "index": index,
            "name": props.name,
            "total_memory": int(props.total_memory),
            "free_memory": int(free),
            "capability": [int(props.major), int(props.minor)],
            "multiprocessors": int(props.multi_processor_count),
        }
        for key in ("gcnArchName", "uuid", "pci_bus_id", "pci_device_id", "pci_domain_id"):
            value = getattr(props, key, None)
            if value not in (None, ""):
                info[key] = str(value)
        return info

    def arch_list(self, torch) -> list:
        return list(torch.cuda.get_arch_list())

    # --- compute -----------------------------------------------------------------------
    def torch_versions(self, torch) -> dict:
        return {"version": torch.__version__, "cuda": getattr(torch.version, "cuda", None), "hip": getattr(torch.version, "hip", None)}

    def device_matmul(self, torch, a, b, device, dtype):
        """a @ b computed on ``device`` in ``dtype``; float64 inputs and result live on the CPU."""
        result = a.to(device, dtype) @ b.to(device, dtype)
        if result.device.type == "cuda":
            torch.cuda.synchronize(result.device)
        return result.to("cpu", torch.float64)

    def cpu_gemm_gflops(self, torch, n: int = 1024, repeats: int = 5) -> float:
        a, b = torch.randn(n, n), torch.randn(n, n)
        a @ b  # warm-up
        timings = []
        for _ in range(repeats):
            start = time.perf_counter()
            a @ b
            timings.append(time.perf_counter() - start)
        return 2 * n**3 / sorted(timings)[len(timings) // 2] / 1e9

    def matmul_tflops(self, torch, device, dtype, n: int = 8192, iterations: int = 10, trials: int = 5) -> float:
        """Median over trials of an n x n GEMM on random inputs, timed with CUDA events."""
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        out = torch.empty(n, n, device=device, dtype=dtype)
        for _ in range(3):
            torch.matmul(a, b, out=out)
        seconds = self._gpu_time(torch, device, lambda: torch.matmul(a, b, out=out), iterations, trials)
        return 2 * n**3 / seconds / 1e12

    def copy_bandwidth_tbs(self, torch, device, nbytes: int, iterations: int = 20, trials: int = 5) -> float:
        """Device-to-device copy: each copy reads and writes nbytes."""
        src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_()
        dst = torch.empty_like(src)
        dst.copy_(src)
        seconds = self._gpu_time(torch, device, lambda: dst.copy_(src), iterations, trials)
        return 2 * nbytes / seconds / 1e12

    @staticmethod
    def _gpu_time(torch, device, step, iterations: int, trials: int) -> float:
        per_call = []
        with torch.cuda.device(device):
            for _ in range(trials):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                start.record()
                for _ in range(iterations):
                    step()
                end.record()
                end.synchronize()
                per_call.append(start.elapsed_time(end) / 1000 / iterations)
        return sorted(per_call)[len(per_call) // 2]

    # --- extensions and compile --------------------------------------------------------
    def import_module(self, name: str):
        return importlib.import_module(name)

    def compile_smoke(self, torch, device, backend: str) -> float:
        """Compile a small function with torch.compile, check it against eager; max abs error."""

        def fn(x):
            return torch.sin(x) * 2 + torch.relu(x)

        compiled = torch.compile(fn, backend=backend, fullgraph=True)
        x = torch.randn(256, device=device)
        return float((compiled(x) - fn(x)).abs().max())

    # --- memory ----------------------------------------------------------------------------
    def peak_memory(self, torch, device, step) -> dict:
        """Run ``step`` once and read the device's peak allocated/reserved bytes and total."""
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
        extra = step(device)
        torch.cuda.synchronize(device)
        free, total = torch.cuda.mem_get_info(device)
        return {
            "peak_allocated": int(torch.cuda.max_memory_allocated(device)),
            "peak_reserved": int(torch.cuda.max_memory_reserved(device)),
            "total": int(total),
            "extra": extra if isinstance(extra, dict) else {},
        }

    def max_rss_bytes(self) -> int:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024

    def mem_available_bytes(self) -> int | None:
        try:
            with open("/proc/meminfo", encoding="utf-8") as handle:
                match = re.search(r"^MemAvailable:\s+(\d+) kB", handle.read(), re.MULTILINE)
                return int(match.group(1)) * 1024 if match else None
        except OSError:
            return None

    # --- io ----------------------------------------------------------------------------------
    def shm_stats(self) -> dict | None:
        """Size and free bytes of /dev/shm, or None when it does not exist."""
        if not os.path.isdir("/dev/shm"):
            return None
        stats = os.statvfs("/dev/shm")
        return {"total": stats.f_blocks * stats.f_frsize, "free": stats.f_bavail * stats.f_frsize}

    def run_dataloader(self, torch, workers: int = 2, batches: int = 8) -> dict:
        from bdiag.workloads import ShmDataset

        loader = torch.utils.data.DataLoader(ShmDataset(batches * 4), batch_size=4, num_workers=workers, timeout=120)
        start, seen, total = time.perf_counter(), 0, 0.0
        for batch in loader:
            seen += 1
            total += float(batch.sum())
        return {"batches": seen, "seconds": time.perf_counter() - start, "checksum": total}

    def make_scratch(self, results_dir: str) -> str:
        os.makedirs(results_dir, exist_ok=True)
        return tempfile.mkdtemp(prefix=".diagnostics-", dir=results_dir)

    def disk_usage(self, path: str) -> dict:
        usage = shutil.disk_usage(path)
        return {"total": usage.total, "free": usage.free}

    def disk_speed(self, folder: str, mib: int) -> dict:
        """Write then read a file of ``mib`` MiB with fsync; MB/s both ways (reads may hit the page cache)."""
        path = os.path.join(folder, "speed.bin")
        block = os.urandom(1 << 20)
        start = time.perf_counter()
        with open(path, "wb") as handle:
            for _ in range(mib):
                handle.write(block)
            handle.flush()
            os.fsync(handle.fileno())
        write_seconds = time.perf_counter() - start
        start = time.perf_counter()
        with open(path, "rb") as handle:
            while handle.read(1 << 22):
                pass
        read_seconds = time.perf_counter() - start
        os.unlink(path)
        size_mb = mib * (1 << 20) / 1e6
        return {"write_mb_s": size_mb / max(write_seconds, 1e-9), "read_mb_s": size_mb / max(read_seconds, 1e-9)}

    # --- checkpoint -------------------------------------------------------------------------
    def save_checkpoint(self, torch, state: dict, path: str) -> float:
        start = time.perf_counter()
        with open(path, "wb") as handle:
            torch.save(state, handle)
            handle.flush()
            os.fsync(handle.fileno())
        return time.perf_counter() - start

    def reload_checkpoint(self, checkpoint: str, device: str, out: str) -> dict:
        """Reload in a fresh interpreter (bdiag/reload_checkpoint.py); its JSON answer."""
        if self._fresh is not None and self._fresh.poll() is None:
            process, self._fresh = self._fresh, None
            stdout, stderr = process.communicate(json.dumps([checkpoint, device, out]) + "\n", timeout=SUBPROCESS_TIMEOUT)
            code = process.returncode
        else:
            script = os.path.join(FOLDER, "bdiag", "reload_checkpoint.py")
            done = subprocess.run(
                [self.executable(), script, checkpoint, device, out], capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT
            )
            code, stdout, stderr = done.returncode, done.stdout, done.stderr
        if code != 0 or not os.path.isfile(out):
            tail = (stderr or stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"the fresh process exited {code}: {' | '.join(tail)}")
        with open(out, encoding="utf-8") as handle:
            return json.load(handle)

    # --- collectives ------------------------------------------------------------------------
    def rdma_devices(self) -> list:
        """The RDMA adapters in /sys/class/infiniband (bdiag/transport.py)."""
        return transport.rdma_devices()

    def run_collective(self, backend: str, device: str, world: int, folder: str, timeout: float = 180) -> list:
        """Launch ``world`` fresh processes of bdiag/collective_worker.py; their JSON answers, each with
        its NCCL INFO lines under ``log`` (bdiag/transport.py)."""
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        script = os.path.join(FOLDER, "bdiag", "collective_worker.py")
        workers = []
        for rank in range(world):
            out = os.path.join(folder, f"rank{rank}.json")
            log = open(os.path.join(folder, f"rank{rank}.log"), "w")
            command = [self.executable(), script, backend, device, str(rank), str(world), str(port), out]
            environment = transport.debug_environment(os.environ)
            workers.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment), out, log))
        answers, deadline = [], time.monotonic() + timeout
        for process, out, log in workers:
            try:
                code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
            log.close()
            with open(log.name, encoding="utf-8", errors="replace") as handle:
                output = handle.read()
            if os.path.isfile(out):
                with open(out, encoding="utf-8") as handle:
                    answers.append(dict(json.load(handle), log=transport.nccl_lines(output)))
            else:
                tail = output.strip().splitlines()[-3:]
                answers.append({"ok": False, "exit_code": code, "error": " | ".join(tail) or f"exit {code}"})
        return answers
