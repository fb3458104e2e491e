"""ComputeDomains (multi-node NVLink): what the NVIDIA driver's ``compute-domain.nvidia.com``
half publishes, and what its controller makes of a ``ComputeDomain``.

As v0.4 of the driver (``cmd/compute-domain-kubelet-plugin``, ``cmd/compute-domain-controller``,
its ``templates/`` and Helm chart), simulated:

- the kubelet plugin publishes, per GPU node, one slice of its own pool holding the IMEX
  ``channel-0`` and ``daemon-0`` devices (``type`` and ``id`` attributes, no capacity): only
  channel 0 is announced, though a node has more IMEX channels;
- the chart's classes ``compute-domain-daemon.nvidia.com`` and
  ``compute-domain-default-channel.nvidia.com`` select them, and its CRD serves
  ``computedomains.resource.nvidia.com`` (``v1beta1``, namespaced, with ``status``);
- for each ComputeDomain the controller adds its finalizer, creates in the driver's
  namespace a ResourceClaimTemplate for the daemon (``ComputeDomainDaemonConfig``) and the
  IMEX daemon DaemonSet (``computedomain-daemon-<uid>``, on the nodes labelled
  ``resource.nvidia.com/computeDomain=<uid>``), and in the domain's namespace the workload's
  channel ResourceClaimTemplate named by ``spec.channel.resourceClaimTemplate.name``
  (``ComputeDomainChannelConfig`` with the domain's UID and ``allocationMode``); its status
  lists each daemon's node (IP, clique, index, readiness) and is ``Ready`` once
  ``numNodes`` daemons are and none is not;
- a node where a channel is prepared gets the domain's label (so the daemon comes there), and
  the channel is prepared only once that node's daemon is ready, in the plugin's words.

A node's clique is its ``nvidia.com/gpu.clique`` label (GPU Feature Discovery writes
``<ClusterUUID>.<CliqueID>``; a fleet pool's ``clique``). The ComputeDomainClique objects
the v0.4 daemons write are not simulated: the status is built from the daemon pods, as
upstream builds it for nodes without a fabric. Pure: wire dicts in, wire dicts out; the
publisher, :mod:`allot.controllers.computedomains` and the node agent call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from allot.driver.fleet import CLIQUE_LABEL
from allot.driver.slices import driver_slice
from allot.types import Obj

DRIVER = "compute-domain.nvidia.com"
GROUP = "resource.nvidia.com"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ComputeDomain"
PLURAL = "computedomains"
RESOURCE = f"{PLURAL}.{GROUP}"
"""The custom resource's name in watch events."""
DRIVER_NAMESPACE = "nvidia-dra-driver-gpu"
"""Where the chart runs the driver, and the controller puts each domain's daemon objects."""
DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
FINALIZER = DOMAIN_LABEL
TARGET_LABEL = "resource.nvidia.com/computeDomainTarget"
DAEMON_CLASS = "compute-domain-daemon.nvidia.com"
CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
CHANNEL_CONFIG = "ComputeDomainChannelConfig"
DAEMON_CONFIG = "ComputeDomainDaemonConfig"
DAEMON_IMAGE = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1"
DAEMON_ACCOUNT = "compute-domain-daemon-service-account"
LOG_VERBOSITY = "4"
"""The chart's ``logVerbosity``, which its controller passes to the daemons."""
READY, NOT_READY = "Ready", "NotReady"


# ------------------------------------------------------------------ publishing
def device_classes() -> list[Obj]:
    """The chart's two ComputeDomain classes."""
    base = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == "
    return [
        _device_class(DAEMON_CLASS, f"{base}'daemon'"),
        _device_class(CHANNEL_CLASS, f"{base}'channel' && device.attributes['{DRIVER}'].id == 0"),
    ]


def _device_class(name: str, expression: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def node_slices(node: str, node_uid: str) -> list[Obj]:
    """The plugin's one slice for ``node``: ``channel-0`` and ``daemon-0``."""
    devices = [
        {"name": f"{kind}-0", "attributes": {"type": {"string": kind}, "id": {"int": 0}}}
        for kind in ("channel", "daemon")
    ]
    return [driver_slice(node, node_uid, 0, 1, {"devices": devices}, driver=DRIVER)]


def crd() -> Obj:
    """The chart's ``computedomains.resource.nvidia.com``, its schema written from the v0.4
    API types (defaults: ``numNodes`` 0, ``allocationMode`` Single)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": RESOURCE},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": "computedomain",
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": _schema()},
                }
            ],
        },
    }


def _schema() -> Obj:
    string = {"type": "string"}
    node = {
        "type": "object",
        "required": ["cliqueID", "ipAddress", "name"],
        "properties": {
            "name": string,
            "ipAddress": string,
            "cliqueID": string,
            "index": {"type": "integer"},
            "status": {"type": "string", "enum": [READY, NOT_READY]},
        },
    }
    channel = {
        "type": "object",
        "required": ["resourceClaimTemplate"],
        "properties": {
            "resourceClaimTemplate": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": string},
            },
            "allocationMode": {"type": "string", "enum": ["All", "Single"], "default": "Single"},
        },
    }
    return {
        "type": "object",
        "properties": {
            "apiVersion": string,
            "kind": string,
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["channel"],
                "properties": {
                    "numNodes": {"type": "integer", "minimum": 0, "default": 0},
                    "channel": channel,
                },
                "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "A computeDomain.spec is immutable"}
                ],
            },
            "status": {
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": [READY, NOT_READY]},
                    "nodes": {"type": "array", "items": node},
                },
            },
        },
    }


# ------------------------------------------------------------------ the controller's objects
def object_name(domain: Obj) -> str:
    """The daemon DaemonSet's and its claim template's name."""
    return f"computedomain-daemon-{domain['metadata']['uid']}"


def _labels(domain: Obj, target: str | None = None) -> dict[str, str]:
    labels = {DOMAIN_LABEL: str(domain["metadata"]["uid"])}
    if target is not None:
        labels[TARGET_LABEL] = target
    return labels


def _claim_template(
    domain: Obj, namespace: str, name: str, request: str, target: str, parameters: Obj
) -> Obj:
    device_class = DAEMON_CLASS if request == "daemon" else CHANNEL_CLASS
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "finalizers": [FINALIZER],
            "labels": _labels(domain, target),
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": request, "exactly": {"deviceClassName": device_class}}],
                    "config": [
                        {
                            "requests": [request],
                            "opaque": {
                                "driver": DRIVER,
                                "parameters": {"apiVersion": API_VERSION, **parameters},
                            },
                        }
                    ],
                }
            }
        },
    }


def channel_template(domain: Obj) -> Obj:
    """The workload's claim template, in the domain's namespace, named by its spec."""
    spec = domain.get("spec") or {}
    channel = spec.get("channel") or {}
    parameters = {
        "kind": CHANNEL_CONFIG,
        "domainID": str(domain["metadata"]["uid"]),
        "allocationMode": channel.get("allocationMode") or "Single",
    }
    name = str((channel.get("resourceClaimTemplate") or {}).get("name"))
    namespace = str(domain["metadata"].get("namespace"))
    return _claim_template(domain, namespace, name, "channel", "Workload", parameters)


def daemon_template(domain: Obj) -> Obj:
    parameters = {"kind": DAEMON_CONFIG, "domainID": str(domain["metadata"]["uid"])}
    name = object_name(domain)
    return _claim_template(domain, DRIVER_NAMESPACE, name, "daemon", "Daemon", parameters)


def daemon_set(domain: Obj) -> Obj:
    """The IMEX daemons of the domain: one on each node labelled with its UID."""
    labels = _labels(domain)
    env = [
        {"name": "LOG_VERBOSITY", "value": LOG_VERBOSITY},
        {"name": "MAX_NODES_PER_IMEX_DOMAIN", "value": "18"},  # the controller's default
        *(
            {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}
            for name, path in (
                ("NODE_NAME", "spec.nodeName"),
                ("POD_IP", "status.podIP"),
                ("POD_UID", "metadata.uid"),
                ("POD_NAME", "metadata.name"),
                ("POD_NAMESPACE", "metadata.namespace"),
            )
        ),
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
    ]
    container = {
        "name": "compute-domain-daemon",
        "image": DAEMON_IMAGE,
        "command": ["compute-domain-daemon", "-v", "$(LOG_VERBOSITY)", "run"],
        "env": env,
        "resources": {"claims": [{"name": "compute-domain-daemon"}]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": object_name(domain),
            "namespace": DRIVER_NAMESPACE,
            "finalizers": [FINALIZER],
            "labels": labels,
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": DAEMON_ACCOUNT,
                    "nodeSelector": labels,
                    "containers": [container],
                    "tolerations": [
                        {"operator": "Exists", "effect": effect}
                        for effect in ("NoSchedule", "NoExecute", "PreferNoSchedule")
                    ],
                    "resourceClaims": [
                        {
                            "name": "compute-domain-daemon",
                            "resourceClaimTemplateName": object_name(domain),
                        }
                    ],
                },
            },
        },
    }


# ------------------------------------------------------------------ status
def status_nodes(daemons: Iterable[Obj], node_labels: Mapping[str, Mapping[str, str]]) -> list[Obj]:
    """``status.nodes`` from the domain's daemon pods on nodes: each node's pod IP, its
    clique (``""`` for a node without one), its index among its clique's nodes (in name
    order) and whether its daemon is ready."""
    placed = sorted(
        (p for p in daemons if (p.get("spec") or {}).get("nodeName")),
        key=lambda p: str(p["spec"]["nodeName"]),
    )
    counts: dict[str, int] = {}
    nodes = []
    for pod in placed:
        name = str(pod["spec"]["nodeName"])
        clique = str((node_labels.get(name) or {}).get(CLIQUE_LABEL, ""))
        index = counts.get(clique, 0)
        counts[clique] = index + 1
        nodes.append(
            {
                "name": name,
                "ipAddress": str((pod.get("status") or {}).get("podIP") or ""),
                "cliqueID": clique,
                "index": index,
                "status": READY if _ready(pod) else NOT_READY,
            }
        )
    return nodes


def _ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def global_status(domain: Obj, nodes: list[Obj]) -> str:
    """The controller's verdict: NotReady while fewer than ``numNodes`` daemons are
    listed or one of them is not ready."""
    wanted = int((domain.get("spec") or {}).get("numNodes") or 0)
    if len(nodes) < wanted or any(n.get("status") == NOT_READY for n in nodes):
        return NOT_READY
    return READY


# ------------------------------------------------------------------ the channel's prepare
def channel_domains(claim: Obj) -> list[str]:
    """The domain UIDs of the claim's ``ComputeDomainChannelConfig`` entries."""
    return _domains(claim, CHANNEL_CONFIG)


def config_domains(claim: Obj) -> list[str]:
    """The domain UIDs the claim's own ComputeDomain configs name (allocated or not)."""
    configs = ((claim.get("spec") or {}).get("devices") or {}).get("config") or []
    return [uid for kind in (CHANNEL_CONFIG, DAEMON_CONFIG) for uid in _uids(configs, kind)]


def _domains(claim: Obj, kind: str) -> list[str]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return _uids((allocation.get("devices") or {}).get("config") or [], kind)


def _uids(configs: list[Obj], kind: str) -> list[str]:
    found = []
    for config in configs:
        opaque = config.get("opaque") or {}
        parameters: Any = opaque.get("parameters") or {}
        if opaque.get("driver") == DRIVER and parameters.get("kind") == kind:
            found.append(str(parameters.get("domainID") or ""))
    return found


def channel_nodes(claim: Obj) -> list[str]:
    """The nodes of the claim's allocated channel devices (the plugin's pool is its node)."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    return sorted({str(r.get("pool")) for r in results if r.get("driver") == DRIVER})


def channel_refusal(
    claim: Obj, node: str, node_domain: str | None, domain: Obj | None, same_namespace: bool
) -> str | None:
    """Why the plugin does not prepare the claim's channel on ``node`` yet (its words,
    without the kubelet's prefix), or None when it does; ``node_domain`` is the node's
    ``resource.nvidia.com/computeDomain`` label, ``same_namespace`` whether the claim is
    of the domain's namespace (a tenant's claim twin: of its tenant namespace)."""
    domain_id = next(iter(channel_domains(claim)), None)
    if domain_id is None:
        return None
    if not domain_id:
        return "error validating config: domainID cannot be empty"
    if domain is None:
        return f"error asserting ComputeDomain's namespace: ComputeDomain not found: {domain_id}"
    if not same_namespace:
        return (
            "error asserting ComputeDomain's namespace: the ResourceClaim's namespace is "
            "different than the ComputeDomain's namespace"
        )
    if node_domain and node_domain != domain_id:
        return (
            "error adding Node label for ComputeDomain: label already exists for a "
            "different ComputeDomain"
        )
    nodes = ((domain.get("status") or {}).get("nodes")) or []
    if not any(n.get("name") == node and n.get("status") == READY for n in nodes):
        return "error asserting ComputeDomain Ready: current node not ready in ComputeDomain"
    return None
