"""``allot up --engine kubernetes``: real Kubernetes 1.36 as the host cluster, end to end.

``allot up --engine kubernetes`` runs as a user types it (its own process, Ctrl-C to stop);
the real kubectl lists the fleet's nodes and the driver's ResourceSlices (the same slices
the embedded engine publishes), a pod whose claim comes from a ResourceClaimTemplate is
allocated by kube-scheduler and Running through kwok, Ctrl-C leaves none of the five
processes (checked by PID), and a restart on the same data directory keeps what was
created. A component that fails to start is named with its log's last lines and the
others are stopped. The ``real_kube`` fixture (tests/realkube.py) serves the DRA API and
the 1.36 default gates. Nothing here builds: without ``make kube``'s binaries these skip.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from allot.driver.fleet import SEED_000_FLEET, expand, parse_fleet
from allot.driver.slices import node_slices
from allot.kubeengine.binaries import BIN_ENV, KUBERNETES_VERSION, PROGRAMS, bin_dir
from tests.e2e.conftest import KubectlUser
from tests.realkube import (
    ALLOT,
    RealKube,
    allot_up,
    claim_pod,
    claim_template,
    needs_real_kube,
    program_of,
    up_environment,
    wait_for,
)

pytestmark = [pytest.mark.slow, needs_real_kube]
COMPONENTS = {program.name for program in PROGRAMS}


def _gone(pid: int, program: str) -> bool:
    """Whether process ``pid`` running ``program`` has ended (its number may be reused)."""
    return program_of(pid) != program


def _claim_pod(name: str) -> list[dict[str, Any]]:
    template = claim_template(f"{name}-gpu", "default", "gpu.nvidia.com")
    return [template, claim_pod(name, "default", {"resourceClaimTemplateName": f"{name}-gpu"})]


def _published_slices(kube: KubectlUser) -> dict[str, list[Any]]:
    slices = kube.get_json("resourceslices")["items"]
    return {s["spec"]["nodeName"]: s["spec"]["devices"] for s in slices}


def _embedded_slices() -> dict[str, list[Any]]:
    """What the embedded engine's driver publishes for seed 000's fleet."""
    published = {}
    for spec in expand(parse_fleet(SEED_000_FLEET)):
        if not spec.gpus:
            continue  # the driver's kubelet plugin runs on GPU nodes only
        for document in node_slices(spec.name, "uid", spec.gpus, dynamic_mig=spec.dynamic_mig):
            published[spec.name] = document["spec"]["devices"]
    return published


def test_up_serves_the_fleet_and_a_claim_pod_then_stops_every_process_and_restarts_with_its_state(
    tmp_path: Path,
) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    with allot_up(data, home) as up:
        first = up.banner[1]
        assert first.startswith(f"Kubernetes {KUBERNETES_VERSION} API server on https://127.0.0.1:")
        assert first.endswith(f"(data in {data})")
        assert f"  cluster host: export KUBECONFIG={up.kubeconfig.resolve()}" in up.banner
        assert any(line.startswith("fleet: a100-whole-pool (1 node)") for line in up.banner)
        children = up.children()
        assert sorted(children.values()) == sorted(COMPONENTS)
        version = json.loads(up.kubectl("version", "-o", "json").stdout)
        assert version["serverVersion"]["gitVersion"] == KUBERNETES_VERSION
        nodes = up.kubectl("get", "nodes", "-o", "name").stdout.split()
        assert nodes == [
            f"node/{spec.name}"
            for spec in sorted(expand(parse_fleet(SEED_000_FLEET)), key=lambda s: s.name)
        ]
        assert _published_slices(up) == _embedded_slices()
        up.apply(*_claim_pod("trainer"))
        pod = wait_for(
            lambda: (p := up.get_json("pod", "trainer"))["status"].get("phase") == "Running" and p,
            "the pod to run",
        )
        claim = up.get_json("resourceclaims", "--show-managed-fields")["items"][0]
        result = claim["status"]["allocation"]["devices"]["results"][0]
        assert result["pool"] == pod["spec"]["nodeName"] == "a100-whole-pool-0"
        assert claim["status"]["reservedFor"][0]["name"] == "trainer"
        managers = {entry["manager"] for entry in claim["metadata"]["managedFields"]}
        assert "kube-scheduler" in managers  # allocated by the real scheduler
        up.kubectl("create", "configmap", "kept", "--from-literal=answer=42")
        up.process.send_signal(signal.SIGINT)
        out, _ = up.process.communicate(timeout=60)
        assert up.process.returncode == 0
        assert out.rstrip().endswith("Kubernetes host cluster stopped")
        assert [pid for pid, program in children.items() if not _gone(pid, program)] == []
    with allot_up(data, home) as again:
        assert again.get_json("configmap", "kept")["data"] == {"answer": "42"}
        assert again.get_json("pod", "trainer")["status"]["phase"] == "Running"
        assert any("0 node(s) added" in line for line in again.banner)


def _failing_apiserver(directory: Path) -> Path:
    """The real binaries, with a kube-apiserver that refuses a flag it does not know."""
    directory.mkdir()
    for program in PROGRAMS:
        (directory / program.name).symlink_to(bin_dir() / program.name)
    (directory / "kube-apiserver").unlink()
    real = bin_dir() / "kube-apiserver"
    script = directory / "kube-apiserver"
    script.write_text(
        f'#!/bin/sh\n[ "$1" = --version ] && exec {real} --version\n'
        f'exec {real} "$@" --no-such-flag\n'
    )
    script.chmod(0o755)
    return directory


def _processes_using(path: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(path).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_component_that_fails_to_start_is_named_with_its_log_and_the_others_stop(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    done = subprocess.run(
        [ALLOT, "up", "--engine", "kubernetes", "--port", "0", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        env=up_environment(**{BIN_ENV: str(_failing_apiserver(tmp_path / "bin"))}),
        timeout=120,
    )
    assert done.returncode == 1
    log = data / "kube" / "logs" / "kube-apiserver.log"
    assert done.stderr.startswith(
        f"error: kube-apiserver exited with status 1; the last lines of {log}:\n"
    )
    assert "unknown flag: --no-such-flag" in done.stderr
    assert "Traceback" not in done.stderr
    assert _processes_using(data) == []  # etcd, started first, was stopped


def test_the_fixture_serves_resource_k8s_io_v1_with_the_1_36_default_gates(
    real_kube: RealKube,
) -> None:
    assert "resource.k8s.io/v1" in real_kube.kubectl("api-versions").stdout.split()
    metrics = real_kube.kubectl("get", "--raw", "/metrics").stdout
    enabled = {
        line.split('name="')[1].split('"')[0]: line.rsplit(" ", 1)[1]
        for line in metrics.splitlines()
        if line.startswith("kubernetes_feature_enabled{")
    }
    for gate in ("DynamicResourceAllocation", "DRAPrioritizedList", "DRAAdminAccess"):
        assert enabled[gate] == "1"
    for gate in ("DRAConsumableCapacity", "DRAPartitionableDevices", "DRADeviceTaints"):
        assert enabled[gate] == "1"  # beta, on by default in 1.36
    assert enabled["DRADeviceTaintRules"] == "0"  # beta, off by default in 1.36
    names = real_kube.kubectl("get", "deviceclasses", "-o", "name").stdout.split()
    assert names == [
        "deviceclass.resource.k8s.io/gpu.nvidia.com",
        "deviceclass.resource.k8s.io/mig.nvidia.com",
    ]
    client = real_kube.client()
    try:
        assert len(client.list("resource.k8s.io/v1", "ResourceSlice")) == 2
    finally:
        client.close()
