"""Cells the workload kinds' tables share: a pod template's containers and images, and a
label selector as ``kubectl get -o wide`` writes it (``metav1.LabelSelectorAsSelector``).
Used by the Deployment, ReplicaSet, StatefulSet, Job and CronJob strategy modules."""

from __future__ import annotations

from typing import Any

from allot.registry.kinds.columns import column
from allot.types import Obj

CONTAINERS = column("Containers", "Names of each container in the template.", 1)
IMAGES = column("Images", "Images referenced by each container in the template.", 1)


def selector_column(description: str) -> dict[str, Any]:
    return column("Selector", description, 1)


def template_containers(template: Obj | None) -> tuple[str, str]:
    """``(names, images)`` of a pod template's containers, comma-separated."""
    containers = ((template or {}).get("spec") or {}).get("containers") or []
    names = ",".join(str(c.get("name") or "") for c in containers)
    images = ",".join(str(c.get("image") or "") for c in containers)
    return names, images


def selector_text(selector: Obj | None) -> str:
    """A label selector as ``labels.Selector.String()`` writes it: requirements sorted by
    key (``app=web,tier in (a,b),!legacy``); nothing for a missing or empty selector."""
    if selector is None:
        return ""
    parts = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or []:
        key, operator = str(expression.get("key", "")), expression.get("operator", "")
        values = ",".join(sorted(expression.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(operator)
        if text is not None:
            parts.append((key, text))
    return ",".join(text for _, text in sorted(parts, key=lambda part: part[0]))
