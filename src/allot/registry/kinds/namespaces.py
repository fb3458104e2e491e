"""Namespace: active on create, with the ``kubernetes`` finalizer."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj


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
