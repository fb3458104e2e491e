"""Container limits: with a writable cgroup v2 (a recorded tree here), each container gets
its own group with ``memory.max`` and ``cpu.max`` as the kubelet writes them and joins it
before exec; without one, memory becomes an address-space rlimit and the banner says that
CPU limits are not enforced."""

from __future__ import annotations

import os
from pathlib import Path

from allot.controllers.limits import ContainerLimits


def _cgroup_root(root: Path, controllers: str = "cpuset cpu io memory pids") -> Path:
    root.mkdir(exist_ok=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text("")
    return root


def test_cgroup_v2_limits_per_container(tmp_path: Path) -> None:
    limits = ContainerLimits(_cgroup_root(tmp_path / "cgroup"))
    assert limits.base is not None
    assert limits.base.name.startswith(f"allot.{os.getpid()}.")
    assert (tmp_path / "cgroup" / "cgroup.subtree_control").read_text() == "+memory +cpu"
    container = {"resources": {"limits": {"memory": "64Mi", "cpu": "250m"}}}
    join = limits.prepare("uid-main", container)
    group = limits.base / "uid-main"
    assert (group / "memory.max").read_text() == str(64 * 2**20)
    assert (group / "cpu.max").read_text() == "25000 100000"
    assert join is not None
    join()  # what the child runs before exec
    assert (group / "cgroup.procs").read_text() == str(os.getpid())


def test_unlimited_container_gets_max(tmp_path: Path) -> None:
    limits = ContainerLimits(_cgroup_root(tmp_path / "cgroup"))
    limits.prepare("uid-main", {"resources": {"limits": {"cpu": "2"}}})
    assert limits.base is not None
    assert (limits.base / "uid-main" / "memory.max").read_text() == "max"
    assert (limits.base / "uid-main" / "cpu.max").read_text() == "200000 100000"


def test_without_cgroup_v2_memory_is_an_rlimit_and_cpu_is_said_unenforced(
    tmp_path: Path,
) -> None:
    v1 = _cgroup_root(tmp_path / "v1", controllers="pids")
    limits = ContainerLimits(v1)
    assert limits.base is None
    assert limits.prepare("uid-main", {"resources": {"limits": {"cpu": "1"}}}) is None
    assert limits.prepare("uid-main", {"resources": {"limits": {"memory": "1Gi"}}}) is not None
    assert "cpu limits: not enforced" in ContainerLimits.describe(v1)
    assert ContainerLimits.describe(_cgroup_root(tmp_path / "v2")) == (
        "memory and cpu limits: cgroup v2"
    )
