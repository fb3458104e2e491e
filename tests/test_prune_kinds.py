"""The kinds of kubectl's default prune list allot serves last (DaemonSet,
ReplicationController, PersistentVolume): upstream's names, defaults, validation texts,
``kubectl get`` columns, a ReplicationController's scale, and a volume made
``Available``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from allot.controllers.context import ControllerContext
from allot.controllers.volumes import PersistentVolumeController, VolumeKey
from allot.controllers.workloads import ClusterContexts
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.registry.resources import by_kind
from allot.statuses import InvalidObjectError, to_status
from allot.types import Obj
from tests.test_stored_kinds import OPTIONS, cells, columns, create, document, refusal, registry
from tests.test_stored_kinds import target as _target

__all__ = ["registry"]  # the fixture


def _with(kind: str, path: str, value: Any) -> Obj:
    """The stored example of ``kind`` with ``path`` (dotted) set to ``value``."""
    doc = document(kind)
    *parents, last = path.split(".")
    node = doc
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return doc


REFUSALS = [
    (
        _with("DaemonSet", "spec.selector", {}),
        'DaemonSet.apps "node-agent" is invalid: spec.selector: Invalid value: {}: empty '
        "selector is invalid for daemonset",
    ),
    (
        _with("DaemonSet", "spec.selector", {"matchLabels": {"app": "other"}}),
        'DaemonSet.apps "node-agent" is invalid: spec.template.metadata.labels: Invalid value: '
        '{"app":"node-agent"}: `selector` does not match template `labels`',
    ),
    (
        _with(
            "DaemonSet",
            "spec.updateStrategy",
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "120%"}},
        ),
        'DaemonSet.apps "node-agent" is invalid: [spec.updateStrategy.rollingUpdate.maxSurge: '
        'Invalid value: "120%": must not be greater than 100%, '
        'spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "120%": may not be set '
        "when maxUnavailable is non-zero]",
    ),
    (
        _with("DaemonSet", "spec.updateStrategy", {"rollingUpdate": {"maxUnavailable": 0}}),
        'DaemonSet.apps "node-agent" is invalid: spec.updateStrategy.rollingUpdate.'
        "maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
    ),
    (
        _with("DaemonSet", "spec.updateStrategy", {"type": "Recreate"}),
        'DaemonSet.apps "node-agent" is invalid: spec.updateStrategy: Unsupported value: '
        '{"type":"Recreate"}: supported values: "RollingUpdate", "OnDelete"',
    ),
    (
        _with("DaemonSet", "spec.template.spec.activeDeadlineSeconds", 5),
        'DaemonSet.apps "node-agent" is invalid: spec.template.spec.activeDeadlineSeconds: '
        "Forbidden: activeDeadlineSeconds in DaemonSet is not Supported",
    ),
    (
        _with("ReplicationController", "spec.template", None),
        'ReplicationController "legacy" is invalid: [spec.selector: Required value, '
        "spec.template: Required value]",
    ),
    (
        _with("ReplicationController", "spec.selector", {"app": "other"}),
        'ReplicationController "legacy" is invalid: spec.template.metadata.labels: Invalid '
        'value: {"app":"legacy","tier":"web"}: `selector` does not match template `labels`',
    ),
    (
        _with("ReplicationController", "spec.template.spec.restartPolicy", "Never"),
        'ReplicationController "legacy" is invalid: spec.template.spec.restartPolicy: '
        'Unsupported value: "Never": supported values: "Always"',
    ),
    (
        _with("PersistentVolume", "spec", {"capacity": {"storage": "1Gi", "cpu": "1"}}),
        'PersistentVolume "pv-1" is invalid: [spec.accessModes: Required value, '
        'spec.capacity: Unsupported value: {"cpu":"1","storage":"1Gi"}: supported values: '
        '"storage", spec: Required value: must specify a volume type]',
    ),
    (
        _with(
            "PersistentVolume",
            "spec.hostPath",
            {"path": "/data"},
        ),
        'PersistentVolume "pv-1" is invalid: spec.nfs: Forbidden: may not specify more '
        "than 1 volume type",
    ),
    (
        _with("PersistentVolume", "spec.nfs", {"server": "", "path": "data"}),
        'PersistentVolume "pv-1" is invalid: [spec.nfs.server: Required value, spec.nfs.path: '
        'Invalid value: "data": must be an absolute path]',
    ),
    (
        _with("PersistentVolume", "spec.persistentVolumeReclaimPolicy", "Keep"),
        'PersistentVolume "pv-1" is invalid: spec.persistentVolumeReclaimPolicy: Unsupported '
        'value: "Keep": supported values: "Delete", "Recycle", "Retain"',
    ),
]


@pytest.mark.parametrize(("doc", "message"), REFUSALS)
def test_invalid_objects_are_refused_with_upstream_texts(
    registry: Registry, doc: Obj, message: str
) -> None:
    assert refusal(registry, doc) == message


def test_served_names() -> None:
    for kind, plural, short, namespaced, subresources in (
        ("DaemonSet", "daemonsets", ("ds",), True, ("status",)),
        ("ReplicationController", "replicationcontrollers", ("rc",), True, ("status", "scale")),
        ("PersistentVolume", "persistentvolumes", ("pv",), False, ("status",)),
    ):
        served = by_kind(kind)
        assert (served.plural, served.short_names, served.namespaced, served.subresources) == (
            plural, short, namespaced, subresources
        )  # fmt: skip


def test_daemon_set_defaults_status_and_table(registry: Registry) -> None:
    created = create(registry, {**document("DaemonSet"), "status": {"numberReady": 3}})
    assert created["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert created["spec"]["revisionHistoryLimit"] == 10
    assert created["status"] == {
        "currentNumberScheduled": 0,
        "desiredNumberScheduled": 0,
        "numberMisscheduled": 0,
        "numberReady": 0,
    }
    assert created["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    changed = copy.deepcopy(created)
    changed["spec"]["selector"] = {"matchLabels": {"app": "node-agent", "v": "2"}}
    changed["spec"]["template"]["metadata"]["labels"]["v"] = "2"
    with pytest.raises(InvalidObjectError) as caught:
        registry.handlers.update(HOST_CLUSTER, _target("DaemonSet", "node-agent"), changed, OPTIONS)
    assert "spec.selector: Invalid value" in str(to_status(caught.value).message)
    assert "field is immutable" in str(to_status(caught.value).message)
    assert columns("daemonsets") == [
        "Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector",
        "Age", "Containers*", "Images*", "Selector*",
    ]  # fmt: skip
    status = {
        "desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
        "updatedNumberScheduled": 3, "numberAvailable": 2,
    }  # fmt: skip
    assert cells("daemonsets", {**created, "status": status}) == [
        "node-agent", 3, 3, 2, 3, 2, "gpu=true", "60m", "agent", "busybox:1.36", "app=node-agent"
    ]  # fmt: skip


def test_replication_controller_defaults_table_and_scale(registry: Registry) -> None:
    created = create(registry, document("ReplicationController"))
    labels = {"app": "legacy", "tier": "web"}
    assert (created["spec"]["selector"], created["metadata"]["labels"]) == (labels, labels)
    assert created["status"] == {"replicas": 0}
    assert columns("replicationcontrollers") == [
        "Name", "Desired", "Current", "Ready", "Age", "Containers*", "Images*", "Selector*"
    ]  # fmt: skip
    assert cells("replicationcontrollers", created) == [
        "legacy", 2, 0, 0, "60m", "web", "nginx:1.27", "app=legacy,tier=web"
    ]  # fmt: skip
    scale = registry.handlers.get_scale(HOST_CLUSTER, _target("ReplicationController", "legacy"))
    assert (scale["spec"], scale["status"]) == (
        {"replicas": 2}, {"replicas": 0, "selector": "app=legacy,tier=web"}
    )  # fmt: skip


def test_a_volume_becomes_available_and_keeps_its_source(registry: Registry) -> None:
    created = create(registry, document("PersistentVolume"), "legal-ai")
    assert created["status"] == {"phase": "Pending"}
    assert created["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert created["spec"]["volumeMode"] == "Filesystem"
    host = ControllerContext(HOST_CLUSTER, registry.store, registry.handlers, registry.clock)
    controller = PersistentVolumeController(ClusterContexts(host, "persistent-volume-binder"))
    assert VolumeKey("volume", "legal-ai", "", "pv-1") in controller.initial_keys()
    controller.reconcile(VolumeKey("volume", "legal-ai", "", "pv-1"))
    volume = registry.handlers.get("legal-ai", _target("PersistentVolume", "pv-1"))
    assert volume["status"]["phase"] == "Available"
    assert columns("persistentvolumes") == [
        "Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim",
        "StorageClass", "VolumeAttributesClass", "Reason", "Age", "VolumeMode*",
    ]  # fmt: skip
    bound = {**volume, "spec": {**volume["spec"], "claimRef": {"namespace": "a", "name": "b"}}}
    assert cells("persistentvolumes", bound) == [
        "pv-1", "10Gi", "RWO,ROX", "Retain", "Available", "a/b", "fast", "<unset>", "", "60m",
        "Filesystem",
    ]  # fmt: skip
    moved = copy.deepcopy(volume)
    moved["spec"]["nfs"]["path"] = "/exports/other"
    with pytest.raises(InvalidObjectError) as caught:
        registry.handlers.update("legal-ai", _target("PersistentVolume", "pv-1"), moved, OPTIONS)
    assert str(to_status(caught.value).message) == (
        'PersistentVolume "pv-1" is invalid: spec.persistentvolumesource: Forbidden: '
        "spec.persistentvolumesource is immutable after creation"
    )
