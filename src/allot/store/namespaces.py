"""What a terminating namespace reports while its content goes: the five status conditions
kube-controller-manager's namespace controller sets, with its reasons and message forms.

The store (``allot.store.objects``) keeps a deleted namespace ``Terminating`` until the last
object in it is removed (finalizers, such as a ResourceClaim's ``delete-protection``, hold
some for a while), and writes these conditions whenever what remains changes, so
``kubectl describe ns`` tells a user what the namespace is waiting for. Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter

from allot.types import Obj

CONTENT_REMAINING = "NamespaceContentRemaining"
FINALIZERS_REMAINING = "NamespaceFinalizersRemaining"
_ALWAYS_FINE = (
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
)
_NO_FINALIZERS = "All content-preserving finalizers finished"


def remaining_content(objects: dict[str, list[Obj]]) -> tuple[Counter[str], Counter[str]]:
    """``objects``: resource key -> the objects left in the namespace. Returns how many are
    left per ``resource.group`` (upstream's form: ``pods.`` for the core group) and how many
    carry each finalizer."""
    resources: Counter[str] = Counter()
    finalizers: Counter[str] = Counter()
    for key, items in objects.items():
        resource, _, group = key.partition(".")
        resources[f"{resource}.{group}"] += len(items)
        for obj in items:
            finalizers.update(obj["metadata"].get("finalizers") or [])
    return resources, finalizers


def conditions(
    resources: Counter[str], finalizers: Counter[str], now: str, previous: list[Obj]
) -> list[Obj]:
    """The namespace's conditions for what remains; a condition keeps its transition time
    while its status stays."""
    content = "; ".join(f"{r} has {n} resource instances" for r, n in sorted(resources.items()))
    held = "; ".join(f"{f} in {n} resource instances" for f, n in sorted(finalizers.items()))
    wanted = [
        *_ALWAYS_FINE,
        (CONTENT_REMAINING, "SomeResourcesRemain", f"Some resources are remaining: {content}")
        if content
        else (CONTENT_REMAINING, "ContentRemoved", "All content successfully removed"),
        (
            FINALIZERS_REMAINING,
            "SomeFinalizersRemain",
            f"Some content in the namespace has finalizers remaining: {held}",
        )
        if held
        else (FINALIZERS_REMAINING, "ContentHasNoFinalizers", _NO_FINALIZERS),
    ]
    before = {c.get("type"): c for c in previous}
    result = []
    for kind, reason, message in wanted:
        status = "True" if reason.startswith("Some") else "False"
        old = before.get(kind) or {}
        since = old.get("lastTransitionTime", now) if old.get("status") == status else now
        result.append(
            {
                "type": kind,
                "status": status,
                "lastTransitionTime": since,
                "reason": reason,
                "message": message,
            }
        )
    return result
