"""What nvidia-smi and the driver tell about the cards (mixed into Probe; tests replace single methods).

Every reading answers None (or an empty list) where there is no nvidia-smi, on ROCm, or
when the driver does not know a field: the stages then report instead of judging.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time

SMI_TIMEOUT = 30
# Sampled while a GEMM load runs: the PCIe link only trains up to its full speed under load,
# and utilization tells the samples under load from those taken before it.
SAMPLED = (
    "clocks_event_reasons.active",
    "clocks.sm",
    "temperature.gpu",
    "power.draw",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "utilization.gpu",
)
# Drivers before 535 know the event reasons by their older name only.
SAMPLED_BEFORE_535 = ("clocks_throttle_reasons.active", *SAMPLED[1:])
SAMPLE_INTERVAL_MS = 200
MIN_SAMPLES = 5
FIRST_LINE_TIMEOUT = 30.0  # nvidia-smi takes seconds to start on multi-GPU VMs


def _smi(arguments: list) -> list | None:
    """nvidia-smi's CSV answer as rows of stripped cells; None without nvidia-smi or on error."""
    text = _tool_text("nvidia-smi", arguments)
    if not text.strip():
        return None
    return [[cell.strip() for cell in line.split(",")] for line in text.strip().splitlines()]


def _tool_text(tool: str, arguments: list) -> str:
    """A tool's standard output; empty without the tool or when it fails."""
    binary = shutil.which(tool)
    if not binary:
        return ""
    try:
        done = subprocess.run([binary, *arguments], capture_output=True, text=True, timeout=SMI_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


class GpuProbe:
    sample_seconds = 1.0  # how long nvidia-smi is sampled after its first line (tests shorten it)

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
        return parse_nvlink_status(_tool_text("nvidia-smi", ["nvlink", "--status"]))

    def nvidia_topology(self) -> dict:
        """(nvidia-smi index, index) -> how the two GPUs are joined ("NV18", "SYS", "PIX", ...) from ``nvidia-smi topo -m``."""
        return parse_topo_matrix(_tool_text("nvidia-smi", ["topo", "-m"]))

    def rocm_topology(self) -> dict:
        """(rocm-smi index, index) -> {"type", "hops", "weight"} from ``rocm-smi --showtopo``."""
        return parse_rocm_topology(_tool_text("rocm-smi", ["--showtopo"]))

    def rocm_driver_version(self) -> str | None:
        try:
            with open("/sys/module/amdgpu/version", encoding="utf-8") as handle:
                return handle.read().strip() or None
        except OSError:
            return None

    def start_clock_sampler(self, device: str | None, fields: tuple = SAMPLED):
        """Start ``nvidia-smi -lms`` on the card (None without nvidia-smi)."""
        binary = shutil.which("nvidia-smi")
        if not binary:
            return None
        command = [binary, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits", "-lms", str(SAMPLE_INTERVAL_MS)]
        if device:
            command += ["-i", device]
        try:
            return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return None

    def sample_under_load(self, device: str | None, burst) -> list:
        """nvidia-smi's samples of the card while ``burst()`` keeps it busy (rows of SAMPLED cells).

        The load keeps running until nvidia-smi printed its first line, then for sample_seconds
        and at least MIN_SAMPLES lines: a GEMM of a few milliseconds alone ends before
        nvidia-smi has started. A driver that refuses the fields is asked by their older names."""
        for fields in (SAMPLED, SAMPLED_BEFORE_535):
            samples = self._samples(device, burst, fields)
            if samples is not None:
                return samples
        return []

    def _samples(self, device: str | None, burst, fields: tuple) -> list | None:
        """The rows nvidia-smi printed under load; None when it refused the query."""
        sampler = self.start_clock_sampler(device, fields)
        if sampler is None:
            return []
        lines: list = []
        reader = threading.Thread(target=_collect, args=(sampler.stdout, lines), daemon=True)
        reader.start()
        started, first = time.monotonic(), None
        while sampler.poll() is None:
            burst()
            now = time.monotonic()
            if first is None and lines:
                first = now
            if first is None and now - started > FIRST_LINE_TIMEOUT:
                break
            if first is not None and now - first >= self.sample_seconds and len(lines) >= MIN_SAMPLES:
                break
            if first is not None and now - first > FIRST_LINE_TIMEOUT:
                break
        sampler.terminate()
        try:
            sampler.wait(timeout=5)
        except subprocess.TimeoutExpired:
            sampler.kill()
            sampler.wait()
        reader.join(timeout=5)
        rows = [[cell.strip() for cell in line.split(",")] for line in list(lines) if line.strip()]
        if sampler.returncode not in (0, -15, -9) and not any(len(row) == len(fields) for row in rows):
            return None  # 'Field ... is not a valid field to query.'
        return [row for row in rows if len(row) == len(fields)]

    def gemm_burst(self, torch, device, dtype, n: int = 4096, repeats: int = 8) -> None:
        """A few GEMMs, waited for: the load sample_under_load keeps running."""
        a = torch.randn(n, n, device=device, dtype=dtype)
        for _ in range(repeats):
            a @ a
        torch.cuda.synchronize(device)

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


def _collect(stream, lines: list) -> None:
    for line in stream:
        lines.append(line)


def parse_nvlink_status(text: str) -> dict:
    links, current = {}, None
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


def parse_topo_matrix(text: str) -> dict:
    """``nvidia-smi topo -m``: {(i, j): "NV18" | "SYS" | "NODE" | "PHB" | "PXB" | "PIX" | ...} between GPUs."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return {}
    columns = []
    for token in lines[0].split():
        if not re.fullmatch(r"GPU\d+", token):
            break
        columns.append(int(token[3:]))
    matrix = {}
    for line in lines[1:]:
        cells = line.split()
        if not cells or not re.fullmatch(r"GPU\d+", cells[0]):
            continue
        row = int(cells[0][3:])
        for column, cell in zip(columns, cells[1 : 1 + len(columns)], strict=False):
            if column != row:
                matrix[(row, column)] = cell
    return matrix


def parse_rocm_topology(text: str) -> dict:
    """``rocm-smi --showtopo``: {(i, j): {"type": "XGMI" | "PCIE", "hops": int, "weight": int}} between GPUs."""
    tables = {"weight": "Weight between two GPUs", "hops": "Hops between two GPUs", "type": "Link Type between two GPUs"}
    found: dict = {}
    current, columns = None, []
    for line in text.splitlines():
        title = next((key for key, heading in tables.items() if heading in line), None)
        if title:
            current, columns = title, []
            continue
        cells = line.split()
        if current is None or not cells:
            continue
        if all(re.fullmatch(r"GPU\d+", cell) for cell in cells):
            columns = [int(cell[3:]) for cell in cells]
        elif re.fullmatch(r"GPU\d+", cells[0]) and columns:
            row = int(cells[0][3:])
            for column, cell in zip(columns, cells[1:], strict=False):
                if column != row:
                    value = cell if current == "type" else (int(cell) if cell.isdigit() else None)
                    found.setdefault((row, column), {})[current] = value
        elif line.startswith("="):
            current = None
    return found
