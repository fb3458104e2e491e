"""Publishing a fleet through the API, as the nodes' kubelets and the driver's plugins do.

A fleet with NVLink cliques also gets the driver's ComputeDomain half
(:mod:`allot.driver.computedomain`): the ComputeDomain CRD, the driver's namespace, the two
ComputeDomain classes and, on every GPU node, the ``compute-domain.nvidia.com`` slice with
``channel-0`` and ``daemon-0``.

For each node of the fleet: the Node object (labels, taints, capacity, Ready), then the
driver's ResourceSlices owned by that Node (so deleting the Node removes them, as the real
driver's garbage collection does), and once per cluster the driver's DeviceClasses (the Helm
chart's ``gpu.nvidia.com`` with ``extendedResourceName: nvidia.com/gpu`` and
``mig.nvidia.com``; ``vfio.gpu.nvidia.com`` only with the ``PassthroughSupport`` gate).
Everything goes through the client protocol (:class:`allot.client.protocol.Client`), so the
same code publishes in process and through any API server (:func:`publish` connects with
a kubeconfig: :class:`allot.kube.remote.RemoteClient`). ``reconcile`` adds and removes
nodes when a pool is scaled; ``taint`` writes the health check's device taints.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from allot.client.errors import AlreadyExists, NotFound, status
from allot.client.protocol import Client
from allot.driver import computedomain
from allot.driver.fleet import Fleet, NodeSpec, expand
from allot.driver.health import HealthEvent, taint_for, tainted
from allot.driver.nodeslices import fleet_classes, published_slices
from allot.driver.slices import DRIVER
from allot.types import Obj, rfc3339

MANAGER = "allot-driver"
"""The field manager of what the driver and its nodes' kubelets write."""

CLASS_TYPES = (
    ("gpu.nvidia.com", "gpu", "nvidia.com/gpu"),
    ("mig.nvidia.com", "mig", None),
    ("vfio.gpu.nvidia.com", "vfio", None),
)


def device_classes(*, passthrough: bool = False) -> list[Obj]:
    classes = []
    for name, device_type, extended in CLASS_TYPES:
        if device_type == "vfio" and not passthrough:
            continue
        spec: Obj = {
            "selectors": [
                {
                    "cel": {
                        "expression": f"device.driver == '{DRIVER}' && "
                        f"device.attributes['{DRIVER}'].type == '{device_type}'"
                    }
                }
            ]
        }
        if extended:
            spec["extendedResourceName"] = extended
        classes.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": name},
                "spec": spec,
            }
        )
    return classes


NODE_CONDITIONS = (
    (
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "allot node agent is posting ready status"),
)
"""The kubelet's node conditions, in its order; Ready's message says who posts it."""


def node_conditions(at: dt.datetime | None) -> list[Obj]:
    """The conditions of a healthy node, heartbeat and transition at ``at`` (None: no
    times, for tests that compare whole objects)."""
    times = {"lastHeartbeatTime": rfc3339(at), "lastTransitionTime": rfc3339(at)} if at else {}
    return [
        {"type": kind, "status": status, **times, "reason": reason, "message": message}
        for kind, status, reason, message in NODE_CONDITIONS
    ]


def node_object(spec: NodeSpec, at: dt.datetime | None = None) -> Obj:
    """The Node a kubelet registers for ``spec``, its conditions posted at ``at``."""
    labels = dict(spec.labels)
    if spec.gpus:
        labels["nvidia.com/gpu.count"] = str(len(spec.gpus))
    capacity = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "500Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec.name,
            "labels": labels,
        },
        "spec": {"taints": spec.taints} if spec.taints else {},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": node_conditions(at),
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": spec.name},
            ],
            "nodeInfo": {
                "machineID": spec.name,
                "systemUUID": spec.name,
                "bootID": spec.name,
                "kernelVersion": "simulated",
                "osImage": "allot simulated node",
                "containerRuntimeVersion": "allot://0.1.0",
                "kubeletVersion": "v1.36.0",
                "kubeProxyVersion": "v1.36.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


class UnknownDevice(LookupError):
    """A health event for a device the node's slices do not have."""


@dataclass
class PublishReport:
    nodes_created: list[str] = field(default_factory=list)
    nodes_removed: list[str] = field(default_factory=list)
    slices: int = 0  # created now
    devices: int = 0
    slices_kept: int = 0  # published before (a restart): the plugin does not republish
    devices_kept: int = 0


class Publisher:
    def __init__(self, client: Client) -> None:
        self.client = client

    def ensure_classes(
        self,
        *,
        passthrough: bool = False,
        compute_domains: bool = False,
        extra: list[Obj] | None = None,
    ) -> None:
        """The chart's classes; with ``compute_domains`` also its CRD, the driver's
        namespace and the ComputeDomain classes; then ``extra`` (other drivers' classes)."""
        for device_class in _chart_objects(passthrough, compute_domains) + (extra or []):
            try:
                self.client.create(device_class, field_manager=MANAGER)
            except AlreadyExists:
                continue

    def publish_node(
        self,
        spec: NodeSpec,
        report: PublishReport,
        *,
        passthrough: bool = False,
        compute_domains: bool = False,
    ) -> None:
        node = node_object(spec, dt.datetime.now(dt.UTC))
        try:
            created: Obj | None = self.client.create(node, field_manager=MANAGER)
            report.nodes_created.append(spec.name)
        except AlreadyExists:
            created = self.client.get("Node", "", spec.name)
        if created is None:
            raise NotFound(status(404, "NotFound", f'nodes "{spec.name}" not found'))
        uid = created["metadata"]["uid"]
        if spec.gpus and compute_domains:  # the plugin's ComputeDomain half, on GPU nodes
            self._publish_compute_domain(spec.name, uid, report)
        # the drivers' plugins run on GPU nodes only
        documents = published_slices(spec, uid, passthrough=passthrough)
        for driver in sorted({str(d["spec"]["driver"]) for d in documents}):
            existing = self.client.list(
                "ResourceSlice", field_selector=f"spec.nodeName={spec.name},spec.driver={driver}"
            )
            wanted = [d for d in documents if d["spec"]["driver"] == driver]
            if existing and _device_names(existing) == _device_names(wanted):
                # a plugin republishes only when devices change; they do not here
                report.slices_kept += len(existing)
                report.devices_kept += sum(len(s["spec"].get("devices") or []) for s in existing)
                continue
            for stale in existing:  # a gate changed the devices (PassthroughSupport's twins)
                self._delete_slice(stale["metadata"]["name"])
            for document in wanted:
                self.client.create(document, field_manager=MANAGER)
                report.slices += 1
                report.devices += len(document["spec"].get("devices") or [])

    def _publish_compute_domain(self, node: str, uid: str, report: PublishReport) -> None:
        """The ComputeDomain plugin's slice for ``node``, unless it is published already."""
        existing = self.client.list(
            "ResourceSlice",
            field_selector=f"spec.nodeName={node},spec.driver={computedomain.DRIVER}",
        )
        if existing:
            report.slices_kept += len(existing)
            report.devices_kept += sum(len(s["spec"].get("devices") or []) for s in existing)
            return
        for document in computedomain.node_slices(node, uid):
            self.client.create(document, field_manager=MANAGER)
            report.slices += 1
            report.devices += len(document["spec"]["devices"])

    def taint(self, node: str, event: HealthEvent, skipped: frozenset[int]) -> Obj | None:
        """Write the driver's taint for ``event`` into the node's slices (gate
        ``NVMLDeviceHealthCheck``): the taint, or None when no device changed (the same
        taint again: the driver does not republish). ``NotFound`` names a node without
        the driver's slices, ``UnknownDevice`` a device they do not have."""
        slices = self.client.list(
            "ResourceSlice", field_selector=f"spec.nodeName={node},spec.driver={DRIVER}"
        )
        if not slices:
            message = f"node {node!r} has no ResourceSlice of driver {DRIVER}"
            raise NotFound(status(404, "NotFound", message))
        published = sorted(_device_names(slices))
        missing = sorted(set(event.devices) - set(published))
        if missing:
            raise UnknownDevice(
                f"node {node} publishes no device {', '.join(missing)} (its devices: "
                f"{', '.join(published)})"
            )
        taint = taint_for(event, skipped)
        changed = False
        for slice_ in slices:
            spec = tainted(slice_["spec"], set(event.devices), taint)
            if spec is not None:
                self.client.update(
                    {
                        **slice_,
                        "apiVersion": "resource.k8s.io/v1",
                        "kind": "ResourceSlice",
                        "spec": spec,
                    },
                    field_manager=MANAGER,
                )
                changed = True
        return taint if changed else None

    def _delete_slice(self, name: str) -> None:
        with contextlib.suppress(NotFound):  # gone meanwhile
            self.client.delete("ResourceSlice", "", name)

    def reconcile(
        self,
        fleet: Fleet,
        *,
        passthrough: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> PublishReport:
        """Make the cluster's nodes and slices match the fleet; ``progress(done, total)``
        is told after each node."""
        report = PublishReport()
        self.ensure_classes(
            passthrough=passthrough,
            compute_domains=fleet.compute_domains,
            extra=fleet_classes(fleet),
        )
        wanted = expand(fleet)
        wanted_names = {spec.name for spec in wanted}
        for node in self.client.list("Node", label_selector="allot.dev/pool"):
            name = node["metadata"]["name"]
            if name not in wanted_names:
                try:
                    self.client.delete("Node", "", name)
                    report.nodes_removed.append(name)
                except NotFound:
                    continue
        for done, spec in enumerate(wanted, start=1):
            self.publish_node(
                spec, report, passthrough=passthrough, compute_domains=fleet.compute_domains
            )
            if progress is not None:
                progress(done, len(wanted))
        return report


def _chart_objects(passthrough: bool, compute_domains: bool) -> list[Obj]:
    """What the chart installs once: its classes; with ``compute_domains`` first the
    ComputeDomain CRD and the driver's namespace, and the two ComputeDomain classes."""
    classes = device_classes(passthrough=passthrough)
    if not compute_domains:
        return classes
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": computedomain.DRIVER_NAMESPACE},
    }
    return [computedomain.crd(), namespace, *classes, *computedomain.device_classes()]


def _device_names(slices: list[Obj]) -> set[str]:
    return {str(d.get("name")) for s in slices for d in (s.get("spec") or {}).get("devices") or []}


def publish(kubeconfig: Path, fleet: Fleet) -> PublishReport:
    """Connect with ``kubeconfig``, bring the cluster to ``fleet``, disconnect."""
    # imported here: the fact sheets read this module's classes, and commands that only
    # validate (allot validate) must not load the remote client and its event loop
    from allot.kube.client import Client as KubeClient
    from allot.kube.remote import RemoteClient

    api = KubeClient.from_kubeconfig(kubeconfig)
    try:
        return Publisher(RemoteClient(api)).reconcile(fleet)
    finally:
        api.close()
