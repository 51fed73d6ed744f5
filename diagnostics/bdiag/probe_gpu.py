"""What nvidia-smi and the driver tell about the cards (mixed into Probe; tests replace single methods).

Every reading answers None (or an empty list) where there is no nvidia-smi, on ROCm, or
when the driver does not know a field: the stages then report instead of judging.
"""

from __future__ import annotations

import re
import shutil
import subprocess

SMI_TIMEOUT = 30
# Sampled while the GEMM runs: the PCIe link only trains up to its full speed under load.
SAMPLED = (
    "clocks_event_reasons.active",
    "clocks.sm",
    "temperature.gpu",
    "power.draw",
    "pcie.link.gen.current",
    "pcie.link.width.current",
)


def _smi(arguments: list) -> list | None:
    """nvidia-smi's CSV answer as rows of stripped cells; None without nvidia-smi or on error."""
    binary = shutil.which("nvidia-smi")
    if not binary:
        return None
    try:
        done = subprocess.run([binary, *arguments], capture_output=True, text=True, timeout=SMI_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return [[cell.strip() for cell in line.split(",")] for line in done.stdout.strip().splitlines()]


class GpuProbe:
    def nvidia_driver_version(self) -> str | None:
        try:
            with open("/proc/driver/nvidia/version", encoding="utf-8", errors="replace") as handle:
                match = re.search(r"Kernel Module.*?\s(\d+\.\d+(?:\.\d+)?)\s", handle.read())
                if match:
                    return match.group(1)
        except OSError:
            pass
        row = self.nvidia_smi(["driver_version"])
        return row.get("driver_version") if row else None

    def nvidia_smi(self, fields: list, device: str | None = None) -> dict | None:
        """One device's answers to ``nvidia-smi --query-gpu`` (fields it does not know are left out)."""

        def query(names):
            rows = _smi([f"--query-gpu={','.join(names)}", "--format=csv,noheader,nounits", *(["-i", device] if device else [])])
            return rows[0] if rows else None

        cells = query(fields)
        if cells is not None and len(cells) == len(fields):
            return {name: cells[index] for index, name in enumerate(fields)}
        answers = {}
        for name in fields:  # an older nvidia-smi refuses the whole query for one unknown field
            one = query([name])
            if one:
                answers[name] = one[0]
        return answers or None

    def gpu_table(self, fields: list) -> list:
        """Every card's answers to ``nvidia-smi --query-gpu=uuid,…``: one dict per card, keyed by field."""
        wanted = ["uuid", *fields]
        rows = _smi([f"--query-gpu={','.join(wanted)}", "--format=csv,noheader,nounits"])
        if rows and all(len(row) == len(wanted) for row in rows):
            return [{name: row[index] for index, name in enumerate(wanted)} for row in rows]
        table: dict = {}
        for name in fields:  # one unknown field must not cost the others
            for row in _smi([f"--query-gpu=uuid,{name}", "--format=csv,noheader,nounits"]) or []:
                if len(row) == 2:
                    table.setdefault(row[0], {"uuid": row[0]})[name] = row[1]
        return list(table.values())

    def compute_apps(self) -> list:
        """Processes holding a context on the cards: [{gpu_uuid, pid, used_mib}] (in a container, often none are shown)."""
        rows = _smi(["--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"]) or []
        apps = []
        for row in rows:
            if len(row) == 3 and row[1].isdigit():
                apps.append({"gpu_uuid": row[0], "pid": int(row[1]), "used_mib": int(row[2]) if row[2].isdigit() else None})
        return apps

    def nvlink_links(self) -> dict:
        """uuid -> {"active", "inactive", "gb_s"} from ``nvidia-smi nvlink --status`` (per-link GB/s, one direction, summed)."""
        binary = shutil.which("nvidia-smi")
        if not binary:
            return {}
        try:
            done = subprocess.run([binary, "nvlink", "--status"], capture_output=True, text=True, timeout=SMI_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        return parse_nvlink_status(done.stdout if done.returncode == 0 else "")

    def rocm_driver_version(self) -> str | None:
        try:
            with open("/sys/module/amdgpu/version", encoding="utf-8") as handle:
                return handle.read().strip() or None
        except OSError:
            return None

    def start_clock_sampler(self, device: str | None):
        """Start sampling clocks, power and the PCIe link while the GEMM runs (None without nvidia-smi)."""
        binary = shutil.which("nvidia-smi")
        if not binary:
            return None
        command = [binary, f"--query-gpu={','.join(SAMPLED)}", "--format=csv,noheader,nounits", "-lms", "200"]
        if device:
            command += ["-i", device]
        try:
            return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return None

    def stop_clock_sampler(self, sampler) -> list:
        if sampler is None:
            return []
        sampler.terminate()
        try:
            output, _ = sampler.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            sampler.kill()
            output, _ = sampler.communicate()
        return [line.split(",") for line in output.strip().splitlines() if line.strip()]

    def peer_access(self, torch, first: int, second: int) -> bool:
        return bool(torch.cuda.can_device_access_peer(first, second))

    def host_to_device_gb_s(self, torch, device, nbytes: int = 256 << 20, trials: int = 5) -> float:
        """Pinned host memory to the device, median of ``trials`` copies timed with CUDA events."""
        source = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        target = torch.empty(nbytes, dtype=torch.uint8, device=device)
        target.copy_(source, non_blocking=True)
        seconds = []
        for _ in range(trials):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            target.copy_(source, non_blocking=True)
            end.record()
            end.synchronize()
            seconds.append(start.elapsed_time(end) / 1000)
        return nbytes / sorted(seconds)[len(seconds) // 2] / 1e9


def parse_nvlink_status(text: str) -> dict:
    links: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        header = re.match(r"^GPU \d+: .*\(UUID: (\S+)\)", line.strip())
        if header:
            current = links.setdefault(header.group(1), {"active": 0, "inactive": 0, "gb_s": 0.0})
            continue
        link = re.match(r"^Link \d+: (.+)$", line.strip())
        if current is None or not link:
            continue
        speed = re.match(r"([\d.]+) GB/s", link.group(1))
        if speed:
            current["active"] += 1
            current["gb_s"] = round(current["gb_s"] + float(speed.group(1)), 3)
        else:
            current["inactive"] += 1
    return links
