"""The nvidia-smi -L text the process runtime shows simulated workloads."""

from __future__ import annotations

import subprocess
from pathlib import Path

from allot.driver.smi import list_gpus, shim_script

WHOLE = {"type": "gpu", "productName": "NVIDIA H100 80GB HBM3", "uuid": "GPU-aaaa"}
MIG = {
    "type": "mig",
    "productName": "NVIDIA A100-SXM4-40GB",
    "uuid": "MIG-bbbb",
    "parentUUID": "GPU-pppp",
    "profile": "3g.20gb",
}


def test_whole_gpus_and_mig_devices_are_numbered_in_the_container() -> None:
    second_slice = {**MIG, "uuid": "MIG-cccc", "profile": "1g.5gb"}
    assert list_gpus([WHOLE, MIG, second_slice]) == (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)\n"
        "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-pppp)\n"
        "  MIG 3g.20gb     Device  0: (UUID: MIG-bbbb)\n"
        "  MIG 1g.5gb      Device  1: (UUID: MIG-cccc)\n"
    )


def test_shim_answers_list_and_refuses_the_rest(tmp_path: Path) -> None:
    shim = tmp_path / "nvidia-smi"
    shim.write_text(shim_script([WHOLE]))
    shim.chmod(0o755)
    listed = subprocess.run([str(shim), "-L"], capture_output=True, text=True, check=True)
    assert listed.stdout == "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)\n"
    other = subprocess.run([str(shim), "-i", "0"], capture_output=True, text=True, check=False)
    assert other.returncode == 2
    assert "only -L and -q" in other.stderr


def test_query_shows_what_the_drivers_sharing_did_to_the_simulated_devices(
    tmp_path: Path,
) -> None:
    mps = {
        **WHOLE,
        "resource.kubernetes.io/pciBusID": "0000:18:00.0",
        "sharing": "MPS",
        "mpsDaemon": "mps-control-daemon-u-1a2b3",
        "activeThreadPercentage": "50",
        "pinnedMemoryLimit": "4096M",
        "memoryShare": "4Gi",
    }
    sliced = {**MIG, "sharing": "TimeSlicing"}
    shim = tmp_path / "nvidia-smi"
    shim.write_text(shim_script([mps, sliced]))
    shim.chmod(0o755)
    shown = subprocess.run([str(shim), "-q"], capture_output=True, text=True, check=True).stdout
    assert shown == (
        "==============NVSMI LOG==============\n"
        "\n"
        "Attached GPUs                             : 2\n"
        "GPU 0000:18:00.0\n"
        "    Product Name                          : NVIDIA H100 80GB HBM3\n"
        "    GPU UUID                              : GPU-aaaa\n"
        "    Compute Mode                          : Exclusive_Process\n"
        "    MPS (allot, simulated)\n"
        "        Control Daemon                    : mps-control-daemon-u-1a2b3\n"
        "        Active Thread Percentage          : 50\n"
        "        Pinned Device Memory Limit        : 4096M\n"
        "    Consumable Capacity (allot, simulated)\n"
        "        Memory Share                      : 4Gi\n"
        "GPU\n"
        "    Product Name                          : NVIDIA A100-SXM4-40GB\n"
        "    MIG Device                            : 3g.20gb MIG-bbbb\n"
        "    GPU UUID                              : GPU-pppp\n"
        "    Compute Mode                          : Default\n"
    )
