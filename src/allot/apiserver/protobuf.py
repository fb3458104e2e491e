"""Decoding the few protobuf bodies kubectl sends (``create namespace``, ``auth can-i``...).

kubectl posts some objects as ``application/vnd.kubernetes.protobuf``: the magic
``k8s\\x00`` followed by a ``runtime.Unknown`` envelope (type meta, raw object bytes). Only
the fields the server needs are read: ObjectMeta (name, generateName, namespace, labels,
annotations), ConfigMap data, and SelfSubjectAccessReview attributes. Field numbers come
from ``k8s.io/api``'s generated.proto. Other kinds answer 415.
"""

from __future__ import annotations

from typing import Any

MAGIC = b"k8s\x00"
Fields = dict[int, list[Any]]


class ProtobufError(Exception):
    """The body is not a protobuf message this server can read."""


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data):
            raise ProtobufError("truncated varint")
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
        elif wire == 2:
            length, position = _varint(data, position)
            value = data[position : position + length]
            position += length
        elif wire == 1:
            value, position = data[position : position + 8], position + 8
        elif wire == 5:
            value, position = data[position : position + 4], position + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def _text(fields: Fields, number: int) -> str | None:
    values = fields.get(number)
    return values[-1].decode() if values else None


def _string_map(fields: Fields, number: int) -> dict[str, str] | None:
    entries = fields.get(number)
    if not entries:
        return None
    result = {}
    for entry in entries:
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
        raise ProtobufError("missing the k8s protobuf prefix")
    envelope = parse_fields(body[len(MAGIC) :])
    type_meta = parse_fields(envelope.get(1, [b""])[0])
    api_version, kind = _text(type_meta, 1) or "", _text(type_meta, 2) or ""
    raw = parse_fields(envelope.get(2, [b""])[0])
    obj: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": _metadata(raw.get(1, [b""])[0]),
    }
    if kind == "ConfigMap":
        if _string_map(raw, 2):
            obj["data"] = _string_map(raw, 2)
    elif kind == "SelfSubjectAccessReview":
        spec = parse_fields(raw.get(2, [b""])[0])
        attributes = parse_fields(spec.get(1, [b""])[0]) if spec.get(1) else {}
        names = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
        obj["spec"] = {
            "resourceAttributes": {n: _text(attributes, i + 1) or "" for i, n in enumerate(names)}
        }
    elif kind not in ("Namespace",):
        raise ProtobufError(f"protobuf bodies of kind {kind} are not supported; send JSON")
    return obj
