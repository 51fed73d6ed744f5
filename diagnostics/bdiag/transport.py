"""The transport NCCL (or RCCL) chose, read from its INFO lines, judged against the RDMA devices
this container can see.

The collectives stage's workers run with ``NCCL_DEBUG=INFO`` (``debug_environment``); their
output holds NCCL's init lines:

    host:57:104 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB ib0:10.0.0.1<0>
    host:57:104 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
    host:57:104 [0] NCCL INFO Using network Socket
    host:57:104 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA
    host:57:104 [0] NCCL INFO Ring 00 : 1 -> 0 [receive] via NET/Socket/0          (NCCL before 2.5)

The channel lines say what each connection uses: ``NET/<network>`` between nodes (IB, Socket,
a plugin's network such as "AWS Libfabric"), ``P2P``/``SHM`` within a node. A job whose
connections go over ``NET/Socket`` while ``/sys/class/infiniband`` lists adapters is the
silent slowdown this module exists for: it warns, and names the cause NCCL printed (no
libibverbs in the image, NCCL_IB_DISABLE, no device reachable).
"""

from __future__ import annotations

import os
import re

INFINIBAND_ROOT = "/sys/class/infiniband"
MAX_LINES = 400  # NCCL lines kept from one worker's log

_INFO = re.compile(r"\bNCCL INFO (.*)$")
_VIA = re.compile(r"^(?:Channel|Ring) \d+(?:/\d+)? : .* via (.+?)\s*$")
_USING_NETWORK = re.compile(r"^Using network (.+?)\s*$")
_IB_DEVICES = re.compile(r"^NET/IB : Using (.*?)(?: ?; OOB .*)?$")
_SOCKETS = re.compile(r"^NET/Socket : Using (.*)$")
_DEVICE = re.compile(r"\[\d+\](\S+)")
_IB_DISABLED = re.compile(r"^NCCL_IB_DISABLE set by environment to ([0-9]+)")
_NO_VERBS = ("Failed to open libibverbs", "Failed to load libibverbs")
_NO_DEVICE = ("NET/IB : No device found", "returned 0 devices")


def debug_environment(environ) -> dict:
    """``environ`` for a worker whose NCCL prints its init lines to the worker's own output."""
    env = dict(environ)
    env["NCCL_DEBUG"] = "INFO"
    env["NCCL_DEBUG_SUBSYS"] = "INIT,NET"  # the channel lines are INIT's, the network's NET's
    env.pop("NCCL_DEBUG_FILE", None)  # a file of the user's would take the lines away from the worker's log
    return env


def nccl_lines(text: str) -> str:
    """The NCCL INFO lines of a worker's output (the first MAX_LINES of them), one per line."""
    found = [line.rstrip() for line in text.splitlines() if "NCCL INFO" in line]
    return "\n".join(found[:MAX_LINES])


def rdma_devices(root: str = INFINIBAND_ROOT) -> list:
    """The RDMA adapters the kernel shows this container (mlx5_0, rocep1s0f0, efa0 …), sorted; [] when none."""
    try:
        return sorted(name for name in os.listdir(root) if not name.startswith("."))
    except OSError:
        return []


def parse(texts) -> dict:
    """What the NCCL lines of ``texts`` (one per rank) say: connections per transport, the network, the devices, the causes."""
    via: dict = {}
    found = {"network": "", "ib_devices": [], "socket_interfaces": [], "verbs_missing": False, "no_ib_device": False, "ib_disabled": False}
    lines = 0
    for text in texts:
        for raw in (text or "").splitlines():
            info = _INFO.search(raw)
            if info is None:
                continue
            lines += 1
            _read_line(info.group(1).strip(), via, found)
    found.update(lines=lines, connections=via, transports=sorted(via, key=lambda name: (-via[name], name)))
    return found


def _read_line(line: str, via: dict, found: dict) -> None:
    if (channel := _VIA.match(line)) is not None:
        name = transport_name(channel.group(1))
        via[name] = via.get(name, 0) + 1
    elif (network := _USING_NETWORK.match(line)) is not None:
        found["network"] = network.group(1)
    elif (devices := _IB_DEVICES.match(line)) is not None:
        found["ib_devices"] = _DEVICE.findall(devices.group(1)) or found["ib_devices"]
    elif (sockets := _SOCKETS.match(line)) is not None:
        found["socket_interfaces"] = [name.split("<")[0] for name in _DEVICE.findall(sockets.group(1))]
    elif (disabled := _IB_DISABLED.match(line)) is not None:
        found["ib_disabled"] = disabled.group(1) != "0"
    elif any(mark in line for mark in _NO_VERBS):
        found["verbs_missing"] = True
    elif any(mark in line for mark in _NO_DEVICE):
        found["no_ib_device"] = True


def transport_name(via: str) -> str:
    """A channel's ``via`` as a transport: NET/IB/0/GDRDMA -> NET/IB, NET/AWS Libfabric/0 -> NET/AWS Libfabric,
    P2P/CUMEM/read -> P2P, SHM/direct/direct -> SHM."""
    parts = via.split("/")
    if parts[0] == "NET" and len(parts) > 1:
        return f"NET/{parts[1]}"
    return parts[0]


def judge(result, texts, rdma: list, environ) -> None:
    """Record the transport of the all_reduce on ``result``; warn when it went over sockets with RDMA adapters visible."""
    seen = parse(texts)
    if not seen["lines"]:
        result.values["transport"] = {"transports": [], "rdma_devices": rdma}
        result.note("NCCL printed no INFO lines: the transport it chose is unknown")
        return
    transports = seen["transports"]
    result.values["transport"] = {key: seen[key] for key in ("transports", "connections", "network", "ib_devices", "socket_interfaces")}
    result.values["transport"]["rdma_devices"] = rdma
    if transports:
        result.summary = f"{result.summary}, via {'+'.join(transports)}" if result.summary else f"via {'+'.join(transports)}"
    if "NET/Socket" not in transports:
        return
    if not rdma:
        result.note(f"NCCL used TCP sockets ({', '.join(seen['socket_interfaces']) or 'its first interface'}): no RDMA adapter is visible")
        return
    result.warn(
        f"NCCL used TCP sockets between the nodes (NET/Socket) while this container sees RDMA adapter(s) "
        f"{', '.join(rdma)} in {INFINIBAND_ROOT}: a many-fold slower all_reduce across nodes",
        _socket_hint(seen, environ),
    )


def _socket_hint(seen: dict, environ) -> str:
    if seen["verbs_missing"]:
        return (
            'The image has no RDMA user space (NCCL could not open libibverbs.so.1): set fabric = "infiniband" (or "roce") '
            "in [target] of bundle.toml and run `bundler build` again, or install libibverbs1 ibverbs-providers librdmacm1."
        )
    if seen["ib_disabled"] or environ.get("NCCL_IB_DISABLE", "0") not in ("", "0"):
        return "NCCL_IB_DISABLE is set: unset it (or set NCCL_IB_DISABLE=0) so that NCCL uses the adapters."
    return (
        "NCCL found no usable RDMA device: pass the adapters into the container (--device /dev/infiniband, --cap-add IPC_LOCK, "
        "--ulimit memlock=-1; on Kubernetes the RDMA device plugin's resource), name them with NCCL_IB_HCA if the wrong ones are "
        "picked, and set NCCL_SOCKET_IFNAME to the interface between the nodes."
    )
