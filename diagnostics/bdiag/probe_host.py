"""The container's limits as this process meets them (mixed into Probe; tests replace single methods).

cgroup v2 (one hierarchy) and v1 (one per controller) are both read. A container sees
either its own cgroup as the root of the mount, or the host's tree, in which its path
from /proc/self/cgroup leads to its own; every level up to the root is read and the
smallest limit wins, as the kernel enforces it.
"""

from __future__ import annotations

import os
import re

CGROUP_ROOT = "/sys/fs/cgroup"
UNLIMITED = 1 << 60  # v1 reports "no limit" as a page-rounded 2**63 - 1


def cgroup_paths(proc_cgroup: str, controller: str) -> tuple:
    """(v2 path, v1 path) of this process for ``controller`` from /proc/self/cgroup's text."""
    v2 = v1 = None
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
        elif controller in parts[1].split(","):
            v1 = parts[2]
    return v2, v1


def _levels(mount: str, path: str | None) -> list:
    """The mount's own folder, then every folder of ``path`` below it that exists, root first."""
    folders = [mount]
    parts = [part for part in (path or "").split("/") if part]
    for depth in range(1, len(parts) + 1):
        folder = os.path.join(mount, *parts[:depth])
        if os.path.isdir(folder):
            folders.append(folder)
    return folders


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return None


def memory_limit(root: str, proc_cgroup: str) -> int | None:
    """The smallest memory limit over this process's cgroup and its parents, in bytes; None when unlimited."""
    v2, v1 = cgroup_paths(proc_cgroup, "memory")
    found = []
    if os.path.isfile(os.path.join(root, "cgroup.controllers")):
        found += [_read(os.path.join(folder, "memory.max")) for folder in _levels(root, v2)]
    for mount in (os.path.join(root, "memory"),):
        found += [_read(os.path.join(folder, "memory.limit_in_bytes")) for folder in _levels(mount, v1)]
    limits = [int(value) for value in found if value and value.isdigit() and int(value) < UNLIMITED]
    return min(limits) if limits else None


def cpu_quota(root: str, proc_cgroup: str) -> float | None:
    """The smallest CPU quota over this process's cgroup and its parents, in cores; None when unlimited."""
    v2, v1 = cgroup_paths(proc_cgroup, "cpu")
    quotas = []
    if os.path.isfile(os.path.join(root, "cgroup.controllers")):
        for folder in _levels(root, v2):
            match = re.match(r"^(\d+)\s+(\d+)$", _read(os.path.join(folder, "cpu.max")) or "")
            if match and int(match.group(2)):
                quotas.append(int(match.group(1)) / int(match.group(2)))
    for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        mount = os.path.join(root, name)
        for folder in _levels(mount, v1) if os.path.isdir(mount) else []:
            quota, period = _read(os.path.join(folder, "cpu.cfs_quota_us")), _read(os.path.join(folder, "cpu.cfs_period_us"))
            if quota and period and quota.lstrip("-").isdigit() and period.isdigit() and int(quota) > 0 and int(period) > 0:
                quotas.append(int(quota) / int(period))
    return min(quotas) if quotas else None


class HostProbe:
    def _proc_cgroup(self) -> str:
        return _read("/proc/self/cgroup") or ""

    def cgroup_memory_limit(self) -> int | None:
        return memory_limit(CGROUP_ROOT, self._proc_cgroup())

    def cgroup_cpu_quota(self) -> float | None:
        return cpu_quota(CGROUP_ROOT, self._proc_cgroup())

    def cpus_visible(self) -> int:
        """What os.cpu_count() — and so torch's thread pool and most num_workers defaults — believe."""
        return os.cpu_count() or 1

    def cpus_allowed(self) -> int | None:
        """The CPUs this process may be scheduled on (cpuset / taskset)."""
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None

    def open_files_limit(self) -> tuple:
        """(soft, hard) RLIMIT_NOFILE; None for unlimited."""
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        return tuple(None if value == resource.RLIM_INFINITY else int(value) for value in (soft, hard))

    def mem_total_bytes(self) -> int | None:
        """MemTotal of /proc/meminfo: the host's memory, whatever the container may use."""
        match = re.search(r"^MemTotal:\s+(\d+) kB", _read("/proc/meminfo") or "", re.MULTILINE)
        return int(match.group(1)) * 1024 if match else None

    def torch_threads(self, torch) -> int:
        return int(torch.get_num_threads())
