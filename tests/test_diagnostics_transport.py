"""The transport NCCL chose, as the collectives stage reports it (diagnostics/bdiag/transport.py):
captures of NCCL's INFO lines replayed through the real stage by tests/nccl_replay.py (the workers'
environment, their logs, the fake /sys/class/infiniband), and the reading of the lines themselves."""

from __future__ import annotations

import pytest

from tests import nccl_replay

# isort: split
from bdiag import transport


@pytest.mark.parametrize("scenario", nccl_replay.SCENARIOS, ids=lambda scenario: scenario.id)
def test_a_replayed_capture_names_its_transport_and_warns_on_sockets_beside_rdma(scenario, tmp_path):
    result = nccl_replay.replay(scenario, tmp_path)
    right, said = nccl_replay.verdict(scenario, result)
    assert right, said
    seen = result.values["transport"]
    assert seen["rdma_devices"] == sorted(scenario.rdma) and seen["transports"][0] == scenario.transport


def test_the_users_own_nccl_settings_do_not_hide_the_lines(tmp_path):
    """NCCL_DEBUG=WARN and NCCL_DEBUG_FILE in the job's environment: the worker still prints its INFO lines to its log."""
    scenario = nccl_replay.SCENARIOS[4]  # sockets beside an adapter, no libibverbs in the image
    assert scenario.nodes == 2 and scenario.expect == "warn"
    result = nccl_replay.replay(scenario, tmp_path / "run", {"NCCL_DEBUG": "WARN", "NCCL_DEBUG_FILE": str(tmp_path / "nccl.%h.%p")})
    assert result.status == "warn" and "libibverbs" in result.hint
    assert not list(tmp_path.glob("nccl.*"))


def test_channel_lines_of_every_shape_become_their_transport():
    lines = [
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA",
        "h:1:2 [0] NCCL INFO Channel 01 : 1[1] -> 0[0] via SHM/direct/direct",
        "h:1:2 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via P2P/IPC",
        "h:1:2 [0] NCCL INFO Ring 00 : 15 -> 0 [send] via NET/AWS Libfabric/0",
        "h:1:2 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[0] [send] via NET/IBext_v8/1/GDRDMA",
        "h:1:2 [0] NCCL INFO Channel 00/02 :    0   1",  # the ring's order, not a connection
        "NCCL version 2.21.5+cuda12.4",
    ]
    seen = transport.parse(["\n".join(lines)])
    assert seen["connections"] == {"NET/IB": 1, "SHM": 1, "P2P": 1, "NET/AWS Libfabric": 1, "NET/IBext_v8": 1}
    assert seen["lines"] == 6


def test_the_adapters_and_interfaces_nccl_names_are_read():
    text = (nccl_replay.CAPTURES / "roce-2node.txt").read_text() + (nccl_replay.CAPTURES / "socket-ib-disabled-2node.txt").read_text()
    seen = transport.parse([text])
    assert seen["ib_devices"] == ["mlx5_0:1/RoCE", "mlx5_1:1/RoCE"]
    assert seen["socket_interfaces"] == ["ib0:192.168.40.12", "eno1:172.20.1.12"]
    assert seen["ib_disabled"] and not seen["verbs_missing"]


def test_rdma_devices_are_the_folders_names_and_none_without_the_folder(tmp_path):
    root = nccl_replay.fake_sysfs(tmp_path, ("mlx5_1", "mlx5_0"))
    assert transport.rdma_devices(str(root)) == ["mlx5_0", "mlx5_1"]
    assert transport.rdma_devices(str(tmp_path / "absent")) == []


def test_a_worker_that_printed_no_nccl_line_leaves_the_transport_unknown():
    from bdiag.result import StageResult

    result = StageResult("collectives", 10, summary="nccl all_reduce × 2 ok")
    transport.judge(result, ["", "some other output\n"], ["mlx5_0"], {})
    assert result.status == "pass" and result.values["transport"]["transports"] == []
    assert any("transport it chose is unknown" in message for message in result.messages)
