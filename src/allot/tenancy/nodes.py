"""Which host nodes a tenant sees, and what it sees of them (vCluster's real-node mode).

vCluster shows a tenant fake nodes by default and, with ``sync.fromHost.nodes.enabled``,
the real host nodes its pods run on (every node with ``selector.all``). allot shows real
nodes: a host node appears in a tenant cluster while at least one host twin of the tenant's
pods is bound to it (a finished pod still bound counts, as its ``kubectl get pod -o wide``
still names the node), with the host node's name, labels, annotations, taints and
``status`` (capacity, allocatable, conditions, addresses, node info), and goes when no
twin is bound there. ``sync.fromHost.nodes.selector.all`` shows every host node;
``selector.labels`` every host node with those labels, besides the pods' nodes; an explicit
``enabled: false`` shows none. Pure; used by the tenant sync.
"""

from __future__ import annotations

from allot.api.documents import clone_document
from allot.api.tenancy import NodeSync, TenantSpec
from allot.types import Obj

HIDDEN_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


def node_settings(spec: TenantSpec) -> NodeSync:
    """The tenant's ``sync.fromHost.nodes`` (allot's default: on, the pods' nodes)."""
    from_host = spec.sync.from_host if spec.sync else None
    return (from_host.nodes if from_host else None) or NodeSync()


def shown_nodes(spec: TenantSpec, twins: list[Obj], host_nodes: list[Obj]) -> dict[str, Obj]:
    """The mirrors of the host nodes the tenant sees, by name, given its host pod twins."""
    settings = node_settings(spec)
    if settings.enabled is False:
        return {}
    selector = settings.selector
    wanted = {str((t.get("spec") or {}).get("nodeName")) for t in twins}
    shown = {}
    for node in host_nodes:
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        if (
            name in wanted
            or (selector is not None and selector.all)
            or (selector is not None and selector.labels and _has(labels, selector.labels))
        ):
            shown[name] = mirror_node(node)
    return shown


def _has(labels: dict[str, str], wanted: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in wanted.items())


def mirror_node(node: Obj) -> Obj:
    """What a tenant sees of a host node: identity, labels, annotations, spec, status."""
    metadata = node["metadata"]
    mirrored: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": metadata["name"]},
        "spec": clone_document(node.get("spec") or {}),
        "status": clone_document(node.get("status") or {}),
    }
    if metadata.get("labels"):
        mirrored["metadata"]["labels"] = dict(metadata["labels"])
    annotations = {
        k: v for k, v in (metadata.get("annotations") or {}).items() if k not in HIDDEN_ANNOTATIONS
    }
    if annotations:
        mirrored["metadata"]["annotations"] = annotations
    return mirrored


def same_node(current: Obj, desired: Obj) -> bool:
    """Whether the tenant's node already shows what the host's does."""
    metadata = current["metadata"]
    return bool(
        (metadata.get("labels") or None) == desired["metadata"].get("labels")
        and (metadata.get("annotations") or None) == desired["metadata"].get("annotations")
        and (current.get("spec") or {}) == desired["spec"]
        and (current.get("status") or {}) == desired["status"]
    )
