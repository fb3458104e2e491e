"""The arithmetic of a Deployment's rollout, with no I/O (upstream's ``deployment/util``).

The pod-template hash, surge and unavailability limits (an integer or a percentage of the
replicas; surge rounds up, unavailability down, both zero means one unavailable), the
replicas a new ReplicaSet may have, how many old pods may go, proportional scaling of a
Deployment resized mid-rollout, and the revision and replica annotations. Used by
:mod:`allot.controllers.deployment`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from allot.api.documents import semantic as semantic
from allot.types import Obj

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
NOT_COPIED = {
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
}
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
DEFAULT_LIMIT = "25%"
DEFAULT_PROGRESS_DEADLINE = 600
DEFAULT_HISTORY_LIMIT = 10


def template_hash(template: Obj, collision_count: int | None) -> str:
    """A stable name-safe hash of a pod template (and the collision count, when set):
    FNV-1a over the template's canonical JSON, encoded as upstream's ``SafeEncodeString``."""
    data = json.dumps(semantic(template), sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += str(collision_count).encode()
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(SAFE_ALPHABET[ord(ch) % len(SAFE_ALPHABET)] for ch in str(value))


def without_hash(template: Obj) -> Obj:
    """A template without the ``pod-template-hash`` label (for ``EqualIgnoreHash``)."""
    metadata = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != HASH_LABEL}
    if labels:
        metadata["labels"] = labels
    else:
        metadata.pop("labels", None)
    return {**template, "metadata": metadata} if metadata else _drop(template, "metadata")


def _drop(obj: Obj, key: str) -> Obj:
    return {k: v for k, v in obj.items() if k != key}


def equal_ignore_hash(first: Obj, second: Obj) -> bool:
    """Templates equal but for the hash label, as upstream compares them: semantically,
    an empty map or list the same as none (``kubectl rollout undo`` sends the template
    as its Go client decoded it, with ``resources: {}``)."""
    return bool(semantic(without_hash(first)) == semantic(without_hash(second)))


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """An int-or-percent against ``total`` (``GetScaledValueFromIntOrPercent``)."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        return int(text)
    share = int(text[:-1]) * total / 100
    return math.ceil(share) if round_up else math.floor(share)


def replicas(deployment: Obj) -> int:
    value = (deployment.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def strategy(deployment: Obj) -> Obj:
    return (deployment.get("spec") or {}).get("strategy") or {}


def is_rolling(deployment: Obj) -> bool:
    return bool(strategy(deployment).get("type", "RollingUpdate") == "RollingUpdate")


def fenceposts(deployment: Obj) -> tuple[int, int]:
    """(max surge, max unavailable) in pods (``ResolveFenceposts``)."""
    rolling = strategy(deployment).get("rollingUpdate") or {}
    wanted = replicas(deployment)
    surge = scaled_value(rolling.get("maxSurge", DEFAULT_LIMIT), wanted, True)
    unavailable = scaled_value(rolling.get("maxUnavailable", DEFAULT_LIMIT), wanted, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(deployment: Obj) -> int:
    return fenceposts(deployment)[0] if is_rolling(deployment) else 0


def max_unavailable(deployment: Obj) -> int:
    wanted = replicas(deployment)
    if not is_rolling(deployment) or wanted == 0:
        return 0
    return min(fenceposts(deployment)[1], wanted)


def rs_replicas(rs: Obj | None) -> int:
    if rs is None:
        return 0
    value = (rs.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def rs_status(rs: Obj | None, field: str) -> int:
    return int(((rs or {}).get("status") or {}).get(field) or 0)


def total(sets: list[Obj], field: str | None = None) -> int:
    """Sum of ``spec.replicas`` (``field`` None) or of a status field over ReplicaSets."""
    if field is None:
        return sum(rs_replicas(rs) for rs in sets)
    return sum(rs_status(rs, field) for rs in sets)


def new_rs_replicas(deployment: Obj, all_sets: list[Obj], new_rs: Obj) -> int:
    """How many replicas the new ReplicaSet may have now (``NewRSNewReplicas``)."""
    wanted = replicas(deployment)
    if not is_rolling(deployment):
        return wanted
    current = total(all_sets)
    allowed = wanted + max_surge(deployment)
    if current >= allowed:
        return rs_replicas(new_rs)
    return rs_replicas(new_rs) + min(allowed - current, wanted - rs_replicas(new_rs))


def revision(rs: Obj) -> int:
    text = (rs["metadata"].get("annotations") or {}).get(REVISION, "")
    try:
        return int(text)
    except ValueError:
        return 0


def annotation_int(rs: Obj, key: str) -> int | None:
    text = (rs["metadata"].get("annotations") or {}).get(key)
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def set_replica_annotations(rs: Obj, desired: int, maximum: int) -> bool:
    """Record the Deployment's replicas and its surge ceiling on a ReplicaSet."""
    annotations = rs["metadata"].setdefault("annotations", {})
    wanted = {DESIRED_REPLICAS: str(desired), MAX_REPLICAS: str(maximum)}
    if all(annotations.get(k) == v for k, v in wanted.items()):
        return False
    annotations.update(wanted)
    return True


def set_new_rs_annotations(deployment: Obj, rs: Obj, new_revision: int, exists: bool) -> bool:
    """The Deployment's own annotations, the revision (keeping the superseded one in the
    revision history when a ReplicaSet comes back) and, for a new one, the replicas."""
    annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in (deployment["metadata"].get("annotations") or {}).items():
        if key not in NOT_COPIED and annotations.get(key) != value:
            annotations[key] = value
            changed = True
    old = annotations.get(REVISION, "")
    old_number = int(old) if old.isdigit() else 0
    if old_number < new_revision:
        annotations[REVISION] = str(new_revision)
        changed = True
        if old:
            history = annotations.get(REVISION_HISTORY)
            annotations[REVISION_HISTORY] = f"{history},{old}" if history else old
    if not exists:
        maximum = replicas(deployment) + max_surge(deployment)
        changed = set_replica_annotations(rs, replicas(deployment), maximum) or changed
    return changed


def proportion(rs: Obj, deployment: Obj, to_add: int, added: int) -> int:
    """A ReplicaSet's share of a resize in mid-rollout (``GetProportion``)."""
    if rs_replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _fraction(rs, deployment)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _fraction(rs: Obj, deployment: Obj) -> int:
    wanted = replicas(deployment)
    if wanted == 0:
        return -rs_replicas(rs)
    ceiling = wanted + max_surge(deployment)
    annotated = annotation_int(rs, MAX_REPLICAS)
    if annotated is None:
        annotated = int((deployment.get("status") or {}).get("replicas") or 0)
    if annotated == 0:
        return 0
    size = rs_replicas(rs) * ceiling / annotated
    return _round_half_away(size) - rs_replicas(rs)


def _round_half_away(value: float) -> int:
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)
