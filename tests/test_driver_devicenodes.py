"""Device nodes of claimed GPUs, from a recorded ``/proc/driver/nvidia`` tree: a whole GPU
gets its ``/dev/nvidia<minor>`` and the common nodes, a MIG device its parent's node and
the ``nvidia-caps`` of its GPU and compute instances, a simulated device nothing."""

from __future__ import annotations

from pathlib import Path

from allot.driver.devicenodes import DeviceNodes

GPU0 = "GPU-8ed058dc-099e-f498-79eb-d088600b1bf1"
GPU1 = "GPU-11111111-2222-3333-4444-555555555555"
MIG = "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"


def _tree(root: Path) -> DeviceNodes:
    proc, dev = root / "proc", root / "dev"
    for bus, uuid, minor in (("0000:00:06.0", GPU0, 0), ("0000:00:07.0", GPU1, 1)):
        info = proc / "gpus" / bus / "information"
        info.parent.mkdir(parents=True)
        info.write_text(
            f"Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t {uuid}\nBus Location: \t {bus}\n"
            f"Device Minor: \t {minor}\n"
        )
    instance = proc / "capabilities" / "gpu1" / "mig" / "gi3"
    (instance / "ci0").mkdir(parents=True)
    (instance / "access").write_text("DeviceFileMinor: 30\nDeviceFileMode: 292\n")
    (instance / "ci0" / "access").write_text("DeviceFileMinor: 31\nDeviceFileMode: 292\n")
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"):
        (dev / name).touch()
    return DeviceNodes(proc, dev, mig_ids=lambda uuid: (3, 0) if uuid == MIG else None)


def test_a_whole_gpu_gets_its_node_and_the_common_ones(tmp_path: Path) -> None:
    nodes = _tree(tmp_path)
    found = nodes.for_devices([{"type": "gpu", "uuid": GPU1}])
    dev = tmp_path / "dev"
    assert found == [dev / "nvidia1", dev / "nvidiactl", dev / "nvidia-uvm"]
    assert nodes.buses([{"type": "gpu", "uuid": GPU1}]) == ["0000:00:07.0"]


def test_a_mig_device_gets_its_parent_and_its_instance_caps(tmp_path: Path) -> None:
    nodes = _tree(tmp_path)
    found = nodes.for_devices([{"type": "mig", "uuid": MIG, "parentUUID": GPU1}])
    dev = tmp_path / "dev"
    assert found[:3] == [
        dev / "nvidia1",
        dev / "nvidia-caps" / "nvidia-cap30",
        dev / "nvidia-caps" / "nvidia-cap31",
    ]
    assert dev / "nvidia0" not in found


def test_simulated_devices_get_no_nodes(tmp_path: Path) -> None:
    nodes = _tree(tmp_path)
    simulated = [{"type": "gpu", "uuid": "GPU-00000000-0000-0000-0000-000000000000"}]
    assert nodes.for_devices(simulated) == []
    assert DeviceNodes(tmp_path / "absent", tmp_path / "dev").for_devices(simulated) == []
