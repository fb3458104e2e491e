"""Container limits: with a writable cgroup v2 (a recorded tree here), each pod gets a group
with the node's ``pids.max`` and each container one below it with ``memory.max`` and
``cpu.max`` as the kubelet writes them, joined before exec; without one, memory becomes an
address-space rlimit, the banner says that CPU limits are not enforced, and the process
limit is left to the sandbox (``RLIMIT_NPROC``) unless a cgroup v1 ``pids`` hierarchy is
writable."""

from __future__ import annotations

import os
from pathlib import Path

from allot.controllers.limits import DEFAULT_POD_PIDS, ContainerLimits


def _cgroup_root(root: Path, controllers: str = "cpuset cpu io memory pids") -> Path:
    root.mkdir(exist_ok=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text("")
    return root


def _no_mounts(tmp_path: Path) -> Path:
    """A ``mountinfo`` without cgroup v1 (the machine's own is never touched here)."""
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("")
    return mountinfo


def test_cgroup_v2_limits_per_container(tmp_path: Path) -> None:
    limits = ContainerLimits(_cgroup_root(tmp_path / "cgroup"), mountinfo=_no_mounts(tmp_path))
    assert limits.base is not None
    assert limits.base.name.startswith(f"allot.{os.getpid()}.")
    assert (tmp_path / "cgroup" / "cgroup.subtree_control").read_text() == ("+memory +cpu +pids")
    container = {"resources": {"limits": {"memory": "64Mi", "cpu": "250m"}}}
    join = limits.prepare("uid", "main", container)
    group = limits.base / "uid" / "main"
    assert (group / "memory.max").read_text() == str(64 * 2**20)
    assert (group / "cpu.max").read_text() == "25000 100000"
    assert (group.parent / "pids.max").read_text() == str(DEFAULT_POD_PIDS)
    assert (group.parent / "cgroup.subtree_control").read_text() == "+memory +cpu"
    assert limits.sandbox_nproc is None  # the pod's cgroup bounds its processes
    assert join is not None
    join()  # what the child runs before exec
    assert (group / "cgroup.procs").read_text() == str(os.getpid())


def test_unlimited_container_gets_max(tmp_path: Path) -> None:
    limits = ContainerLimits(_cgroup_root(tmp_path / "cgroup"), mountinfo=_no_mounts(tmp_path))
    limits.prepare("uid", "main", {"resources": {"limits": {"cpu": "2"}}})
    assert limits.base is not None
    assert (limits.base / "uid" / "main" / "memory.max").read_text() == "max"
    assert (limits.base / "uid" / "main" / "cpu.max").read_text() == "200000 100000"


def test_the_pod_process_limit_is_the_sandbox_s_where_no_cgroup_holds_it(tmp_path: Path) -> None:
    no_mounts = _no_mounts(tmp_path)
    v2 = _cgroup_root(tmp_path / "v2", controllers="cpu memory")
    without_pids = ContainerLimits(v2, pod_pids=20, mountinfo=no_mounts)
    assert (without_pids.v2_pids, without_pids.sandbox_nproc) == (False, 20)
    assert without_pids.prepare("uid", "main", {}) is not None  # memory and cpu groups
    assert not (v2 / "pids.max").exists()
    unlimited = ContainerLimits(tmp_path / "absent", pod_pids=0, mountinfo=no_mounts)
    assert unlimited.sandbox_nproc is None
    assert "pod process limit: none" in ContainerLimits.describe(tmp_path / "absent", 0, no_mounts)
    text = ContainerLimits.describe(tmp_path / "absent", 20, no_mounts)
    assert "pod process limit 20: RLIMIT_NPROC in each sandbox" in text
    unsandboxed = ContainerLimits.describe(tmp_path / "absent", 20, no_mounts, sandboxed=False)
    assert unsandboxed.endswith(
        "pod process limit 20: not enforced (unsandboxed, no writable pids cgroup)"
    )
    mounts = "35 25 0:30 / {} rw,nosuid - cgroup cgroup rw,{}\n"
    v1 = tmp_path / "pids"
    v1.mkdir()
    no_mounts.write_text(mounts.format(tmp_path / "cpu", "cpu") + mounts.format(v1, "pids"))
    assert "cgroup v1 pids.max" in ContainerLimits.describe(tmp_path / "absent", 20, no_mounts)


def test_without_cgroup_v2_memory_is_an_rlimit_and_cpu_is_said_unenforced(
    tmp_path: Path,
) -> None:
    v1 = _cgroup_root(tmp_path / "v1", controllers="pids")
    limits = ContainerLimits(v1, mountinfo=_no_mounts(tmp_path))
    assert limits.base is None
    assert limits.prepare("uid", "main", {"resources": {"limits": {"cpu": "1"}}}) is None
    assert limits.prepare("uid", "main", {"resources": {"limits": {"memory": "1Gi"}}}) is not None
    assert "cpu limits: not enforced" in ContainerLimits.describe(v1)
    assert ContainerLimits.describe(_cgroup_root(tmp_path / "v2"), DEFAULT_POD_PIDS) == (
        f"memory and cpu limits: cgroup v2; pod process limit {DEFAULT_POD_PIDS}: "
        "cgroup v2 pids.max"
    )
