"""Namespace: active on create, with the ``kubernetes`` finalizer and the label
``kubernetes.io/metadata.name`` (its name) that NamespaceSelectors match."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj

NAME_LABEL = "kubernetes.io/metadata.name"


def _name_label(obj: Obj, *_: object) -> None:
    """Upstream's strategy labels every namespace with its own name, on create and update."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("name"), str):
        labels = metadata.get("labels")
        labels = {**(labels if isinstance(labels, dict) else {}), NAME_LABEL: metadata["name"]}
        obj["metadata"] = {**metadata, "labels": labels}  # the caller's dict stays as it was


def _active(obj: Obj) -> None:
    obj["status"] = {"phase": "Active"}
    obj.setdefault("spec", {"finalizers": ["kubernetes"]})


STRATEGIES = (
    KindStrategy(
        "Namespace",
        "namespace",
        generation=False,
        short_names=("ns",),
        returns_deleted_object=True,  # upstream namespace REST: the namespace, Terminating
        subresources=("status",),
        initial_status=_active,
        prepare_create=_name_label,
        prepare_update=_name_label,
        table=Table(
            [NAME, column("Status", "The status of the namespace"), AGE],
            lambda o, n: [
                o["metadata"]["name"],
                (o.get("status") or {}).get("phase", "Active"),
                age(o, n),
            ],
        ),
    ),
)
