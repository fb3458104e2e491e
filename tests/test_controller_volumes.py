"""Volume binding step by step (tests/scenarios/volumes.yaml): the persistent volume
controller, the local-path provisioner, pvc- and pv-protection, the scheduler's volume
filter and StatefulSet claims, driven against a real Registry by the apps driver with
the volume controller and the scheduler added; ``<claim>`` in a scenario stands for the
claim's uid."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from allot.controllers.context import ControllerContext
from allot.controllers.ephemeral import EphemeralVolumeController
from allot.controllers.scheduler import Scheduler
from allot.controllers.volumes import PersistentVolumeController
from allot.controllers.workloads import ClusterContexts
from allot.registry import HOST_CLUSTER
from allot.types import Obj
from tests.apps_driver import NAMESPACE, AppsDriver
from tests.conftest import load_scenarios

SCENARIOS = load_scenarios("volumes.yaml")
NODES = ("node-1", "node-2")
API_VERSIONS = {"StorageClass": "storage.k8s.io/v1", "StatefulSet": "apps/v1"}


class VolumeDriver(AppsDriver):
    def __init__(self, tmp_path: Path, cluster: str) -> None:
        super().__init__(tmp_path, cluster)
        self.uids: dict[str, str] = {}
        if cluster != HOST_CLUSTER:
            self.registry.add_cluster(cluster)  # its own default class, as a tenant's
        store, handlers = self.registry.store, self.registry.handlers
        host = ControllerContext(HOST_CLUSTER, store, handlers, self.clock)
        self.host = host
        for node in NODES:
            labels = {"kubernetes.io/hostname": node}
            host.create("Node", {"metadata": {"name": node, "labels": labels}}, "test")
            if cluster != HOST_CLUSTER:
                self.context.create("Node", {"metadata": {"name": node, "labels": labels}}, "t")
        tenant = (lambda name: name == cluster) if cluster != HOST_CLUSTER else None
        contexts = ClusterContexts(host, "persistent-volume-binder", tenant)
        self.controllers.append(
            PersistentVolumeController(contexts, lambda name: name != HOST_CLUSTER)
        )
        ephemeral = ClusterContexts(host, "ephemeral-volume-controller", tenant)
        self.controllers.append(EphemeralVolumeController(ephemeral))
        if cluster == HOST_CLUSTER:
            self.controllers.append(Scheduler(host))

    def settle(self, strict: bool = False) -> None:
        super().settle(strict)
        for claim in self.context.list("PersistentVolumeClaim", NAMESPACE):
            self.uids.setdefault(claim["metadata"]["name"], claim["metadata"]["uid"])

    def named(self, text: str) -> str:
        """``<claim>`` replaced by the claim's uid (remembered once seen)."""

        def uid(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.uids:
                claim = self.context.get("PersistentVolumeClaim", NAMESPACE, name)
                assert claim is not None, f"claim {name} never existed"
                self.uids[name] = claim["metadata"]["uid"]
            return self.uids[name]

        return re.sub(r"<([a-z0-9-]+)>", uid, text)

    def create(self, doc: Obj) -> None:
        doc = {"apiVersion": API_VERSIONS.get(doc["kind"], "v1"), **doc}
        if doc["kind"] not in ("StorageClass", "PersistentVolume"):
            doc["metadata"] = {**doc["metadata"], "namespace": NAMESPACE}
        self.context.create(doc["kind"], doc, "kubectl")

    def find(self, reference: str) -> Obj | None:
        kind, name = self.named(reference).split("/", 1)
        namespace = "" if kind in ("StorageClass", "PersistentVolume") else NAMESPACE
        return self.context.get(kind, namespace, name)


def _apply(driver: VolumeDriver, step: dict[str, Any]) -> None:
    for doc in step.get("create") or []:
        driver.create(doc)
    for reference in step.get("delete") or []:
        kind, name = driver.named(reference).split("/", 1)
        namespace = "" if kind == "PersistentVolume" else NAMESPACE
        driver.context.delete(kind, namespace, name)
    for pod, node in (step.get("bind") or {}).items():
        driver.context.bind(NAMESPACE, pod, node)
    if "ready" in step:
        driver.settle()
        driver.make_ready(step["ready"])
    if "replicas" in step:
        statefulset = driver.context.get("StatefulSet", NAMESPACE, "web")
        assert statefulset is not None
        statefulset["spec"]["replicas"] = step["replicas"]
        driver.context.update("StatefulSet", statefulset, "kubectl")
    driver.settle()


def _phase_and(obj: Obj, detail: str) -> str:
    phase = (obj.get("status") or {}).get("phase", "")
    return f"{phase}/{detail}" if detail else phase


def _check(driver: VolumeDriver, expect: dict[str, Any]) -> None:
    for name, wanted in (expect.get("claims") or {}).items():
        claim = driver.context.get("PersistentVolumeClaim", NAMESPACE, name)
        assert claim is not None, name
        volume = claim["spec"].get("volumeName", "") if "/" in wanted else ""
        assert _phase_and(claim, volume) == driver.named(wanted), name
    for name, wanted in (expect.get("volumes") or {}).items():
        volume = driver.context.get("PersistentVolume", "", driver.named(name))
        assert volume is not None, name
        ref = volume["spec"].get("claimRef") or {}
        bound = f"{ref.get('namespace')}/{ref.get('name')}" if "/" in wanted else ""
        assert _phase_and(volume, bound) == wanted, name
    if "pods" in expect:
        live = {
            p["metadata"]["name"]: p["spec"].get("nodeName", "-")
            for p in driver.pods()
            if not p["metadata"].get("deletionTimestamp")
        }
        assert live == expect["pods"]
    for name, message in (expect.get("unschedulable") or {}).items():
        pod = driver.context.get("Pod", NAMESPACE, name)
        assert pod is not None
        conditions = {c["type"]: c for c in pod["status"].get("conditions") or []}
        assert conditions["PodScheduled"]["message"] == message
    for reference in expect.get("gone") or []:
        assert driver.find(reference) is None, reference
    for reference, wanted in (expect.get("annotations") or {}).items():
        found = driver.find(reference)
        assert found is not None, reference
        actual = found["metadata"].get("annotations") or {}
        assert {k: actual.get(k) for k in wanted} == wanted, reference
    for name, node in (expect.get("affinity") or {}).items():
        volume = driver.context.get("PersistentVolume", "", driver.named(name))
        assert volume is not None
        term = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
        assert term["matchExpressions"][0]["values"] == [node]
    for name, kinds in (expect.get("owners") or {}).items():
        claim = driver.context.get("PersistentVolumeClaim", NAMESPACE, name)
        assert claim is not None
        assert [o["kind"] for o in claim["metadata"].get("ownerReferences") or []] == kinds
    messages = {  # a volume's Events are in "default", as for any cluster-scoped object
        e["message"] for ns in (NAMESPACE, "default") for e in driver.context.list("Event", ns)
    }
    for message in expect.get("events") or []:
        assert driver.named(message) in messages, message


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_volume_scenario(tmp_path: Path, scenario: dict[str, Any]) -> None:
    driver = VolumeDriver(tmp_path, scenario.get("cluster", HOST_CLUSTER))
    try:
        for doc in scenario.get("objects") or []:
            driver.create(doc)
        driver.settle()
        for step in scenario["steps"]:
            _apply(driver, step)
            _check(driver, step.get("expect") or {})
    finally:
        driver.close()
