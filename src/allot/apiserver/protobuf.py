"""Decoding the protobuf bodies kubectl sends (``create namespace``, ``auth can-i``,
``create deployment``...).

kubectl posts some objects as ``application/vnd.kubernetes.protobuf``: the magic
``k8s\\x00`` followed by a ``runtime.Unknown`` envelope (type meta, raw object bytes). For
Namespaces only the fields the server needs are read (ObjectMeta's name, generateName,
namespace, labels, annotations).
Pods (``kubectl debug``, without their status), the workload kinds (Deployment,
ReplicaSet, StatefulSet, ControllerRevision, Job, CronJob, Service, ServiceAccount, Secret,
ConfigMap, ResourceQuota), the RBAC kinds (Role, RoleBinding, ClusterRole,
ClusterRoleBinding), networking/v1 Ingress, autoscaling/v2 HorizontalPodAutoscaler
(``kubectl autoscale``), scheduling/v1 PriorityClass, policy/v1 PodDisruptionBudget and
Eviction (``kubectl drain``), the access reviews (``kubectl auth can-i``), TokenRequest
(``kubectl create token``) and meta/v1 DeleteOptions (the body of kubectl's deletes) are
decoded whole from the field table of :mod:`allot.apiserver.protobuf_fields`, into the JSON
kubectl would have sent: Go writes every non-pointer field, so zero scalars are dropped (as
JSON's ``omitempty`` does) except the optional counts where an explicit 0 means something
(``replicas: 0``). Field numbers come from ``k8s.io/api``'s generated.proto. Other kinds
answer 415 (:class:`ProtobufUnsupported`); bytes that are not such a message (no prefix,
truncated, a wire type that does not fit the field, no kind) are the client's error and
answer 400 with the texts of the API server's decoder (gogo-protobuf's ``unexpected EOF``,
``proto: illegal wireType 7``); strings are decoded with invalid UTF-8 replaced, so
validation judges them as it would upstream.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
from collections.abc import Callable
from typing import Any

from allot.apiserver.protobuf_fields import MESSAGES

MAGIC = b"k8s\x00"
Fields = dict[int, list[Any]]


class ProtobufError(Exception):
    """The body is not a well-formed protobuf message of an object (400)."""


class ProtobufUnsupported(ProtobufError):
    """A well-formed message of a kind this server does not decode from protobuf (415)."""


UNEXPECTED_EOF = "unexpected EOF"
FIXED_SIZES = {1: 8, 5: 4}
"""Bytes of the fixed-size wire types (64-bit, 32-bit)."""


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if shift >= 64:
            raise ProtobufError("proto: integer overflow")
        if position >= len(data):
            raise ProtobufError(UNEXPECTED_EOF)
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def parse_fields(data: bytes) -> Fields:
    fields: Fields = {}
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, position = _varint(data, position)
        elif wire in FIXED_SIZES or wire == 2:
            length = FIXED_SIZES.get(wire, 0)
            if wire == 2:
                length, position = _varint(data, position)
            if position + length > len(data):
                raise ProtobufError(UNEXPECTED_EOF)
            value, position = data[position : position + length], position + length
        else:
            raise ProtobufError(f"proto: illegal wireType {wire}")
        if number <= 0:
            raise ProtobufError(f"proto: illegal tag {number} (wire type {wire})")
        fields.setdefault(number, []).append(value)
    return fields


def _message(fields: Fields, number: int) -> bytes:
    """The bytes of embedded message or string field ``number`` (empty when absent)."""
    values = fields.get(number)
    if not values:
        return b""
    if not isinstance(values[-1], bytes):
        raise ProtobufError(f"proto: wrong wireType = 0 for field {number}")
    return values[-1]


def _text(fields: Fields, number: int) -> str | None:
    return _message(fields, number).decode(errors="replace") if fields.get(number) else None


def _string_map(fields: Fields, number: int) -> dict[str, str] | None:
    entries = fields.get(number)
    if not entries:
        return None
    result = {}
    for entry in entries:
        if not isinstance(entry, bytes):
            raise ProtobufError(f"proto: wrong wireType = 0 for field {number}")
        pair = parse_fields(entry)
        result[_text(pair, 1) or ""] = _text(pair, 2) or ""
    return result


def _metadata(raw: bytes) -> dict[str, Any]:
    fields = parse_fields(raw)
    metadata = {
        "name": _text(fields, 1),
        "generateName": _text(fields, 2),
        "namespace": _text(fields, 3),
        "labels": _string_map(fields, 11),
        "annotations": _string_map(fields, 12),
    }
    return {k: v for k, v in metadata.items() if v}


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object."""
    if not body.startswith(MAGIC):
        raise ProtobufError(
            "provided data does not appear to be a protobuf message, expected prefix "
            f"[{' '.join(str(b) for b in MAGIC)}]"
        )
    envelope = parse_fields(body[len(MAGIC) :])
    type_meta = parse_fields(_message(envelope, 1))
    api_version, kind = _text(type_meta, 1) or "", _text(type_meta, 2) or ""
    if not kind:
        raise ProtobufError("Object 'Kind' is missing in the protobuf body")
    if kind in WHOLE_KINDS:
        whole: dict[str, Any] = {
            "apiVersion": api_version,
            "kind": kind,
            **_decode_message(_message(envelope, 2), kind),
        }
        if kind != "DeleteOptions":  # the one kind here without ObjectMeta
            whole.setdefault("metadata", {})
        return whole
    raw = parse_fields(_message(envelope, 2))
    obj: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": _metadata(_message(raw, 1)),
    }
    if kind not in ("Namespace",):
        raise ProtobufUnsupported(f"protobuf bodies of kind {kind} are not supported; send JSON")
    return obj


WHOLE_KINDS = (
    "Pod",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "ControllerRevision",
    "Job",
    "CronJob",
    "Service",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "ResourceQuota",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "PodDisruptionBudget",
    "Ingress",
    "HorizontalPodAutoscaler",
    "PriorityClass",
    "Eviction",
    "DeleteOptions",
    "SelfSubjectAccessReview",
    "SubjectAccessReview",
    "SelfSubjectRulesReview",
    "SelfSubjectReview",
    "TokenRequest",
)
INLINE = frozenset(
    {
        "localObjectReference",
        "volumeSource",
        "handler",
        "ephemeralContainerCommon",
        "ingressRuleValue",
    }
)
"""Fields of embedded structs (``json:",inline"``): a ConfigMap or Secret reference's
name, a volume's source, a probe's handler, an ephemeral container's common fields, an
Ingress rule's ``http``."""
KEEP_ZERO = frozenset(
    {
        "replicas",
        "parallelism",
        "completions",
        "backoffLimit",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
        "activeDeadlineSeconds",
        "ttlSecondsAfterFinished",
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
        "revisionHistoryLimit",
        "terminationGracePeriodSeconds",
        "partition",
        "gracePeriodSeconds",
        "orphanDependents",
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        "minReplicas",
        "averageUtilization",
        "stabilizationWindowSeconds",
    }
)
"""Optional (pointer) counts and flags whose explicit 0 or false is kept; other zero
scalars are dropped."""


def _decode_message(raw: bytes, message: str) -> dict[str, Any]:
    """A message as its JSON object, from the field table."""
    layout = MESSAGES[message]
    result: dict[str, Any] = {}
    for number, values in parse_fields(raw).items():
        entry = layout.get(number)
        if entry is None:
            continue  # a field this table does not know: ignored, as protobuf does
        name, code = entry
        repeated, kind = code.startswith("*"), code.lstrip("*")
        if name in INLINE:  # an embedded Go struct: its fields are the parent's in JSON
            result.update(_value(values[-1], kind, number))
        elif kind.startswith("map:"):
            result[name] = _map(values, kind[4:], number)
        elif repeated:
            result[name] = [v for value in values for v in _repeated(value, kind, number)]
        else:
            value = _value(values[-1], kind, number)
            if value is not None and (value not in ("", 0, False) or name in KEEP_ZERO):
                result[name] = value
    return {k: v for k, v in result.items() if v is not None}


def _repeated(value: Any, kind: str, number: int) -> list[Any]:
    if kind == "i" and isinstance(value, bytes):  # packed integers
        found, position = [], 0
        while position < len(value):
            item, position = _varint(value, position)
            found.append(_signed(item))
        return found
    return [_value(value, kind, number)]


def _map(entries: list[Any], kind: str, number: int) -> dict[str, Any]:
    result = {}
    for entry in entries:
        pair = parse_fields(_bytes(entry, number))
        key = _text(pair, 1) or ""
        values = pair.get(2)
        result[key] = _value(values[-1], kind, number) if values else _empty(kind)
    return result


def _empty(kind: str) -> Any:
    return {"s": "", "y": "", "i": 0, "b": False, "quantity": "0"}.get(kind, {})


def _value(value: Any, kind: str, number: int) -> Any:
    if kind in ("i", "b"):
        if not isinstance(value, int):
            raise ProtobufError(f"proto: wrong wireType = 2 for field {number}")
        return _signed(value) if kind == "i" else bool(value)
    if kind in ("d", "f"):
        if not isinstance(value, bytes) or len(value) not in (4, 8):
            raise ProtobufError(f"proto: wrong wireType for field {number}")
        return struct.unpack("<d" if len(value) == 8 else "<f", value)[0]
    raw = _bytes(value, number)
    if kind == "s":
        return raw.decode(errors="replace")
    if kind == "y":
        return base64.b64encode(raw).decode()
    if kind in SPECIAL:
        return SPECIAL[kind](parse_fields(raw))
    if kind == "raw":
        return _raw_json(parse_fields(raw))
    return _decode_message(raw, kind)


def _bytes(value: Any, number: int) -> bytes:
    if not isinstance(value, bytes):
        raise ProtobufError(f"proto: wrong wireType = 0 for field {number}")
    return value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _int(fields: Fields, number: int) -> int:
    values = fields.get(number)
    return _signed(values[-1]) if values and isinstance(values[-1], int) else 0


def _time(fields: Fields) -> str | None:
    seconds = _int(fields, 1)
    if seconds == 0 and _int(fields, 2) == 0:
        return None  # Go's zero time: null in JSON
    moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _int_or_string(fields: Fields) -> int | str:
    return _text(fields, 3) or "" if _int(fields, 1) == 1 else _int(fields, 2)


def _raw_json(fields: Fields) -> Any:
    raw = _message(fields, 1)
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise ProtobufError("embedded object is not JSON") from None


SPECIAL: dict[str, Callable[[Fields], Any]] = {
    "time": _time,
    "intorstring": _int_or_string,
    "quantity": lambda fields: _text(fields, 1) or "0",
    "duration": lambda fields: f"{_int(fields, 1) / 1e9:g}s",
    "skip": lambda fields: None,
}
