"""Decoding the few protobuf bodies kubectl sends (``create namespace``, ``auth can-i``...).

kubectl posts some objects as ``application/vnd.kubernetes.protobuf``: the magic
``k8s\\x00`` followed by a ``runtime.Unknown`` envelope (type meta, raw object bytes). Only
the fields the server needs are read: ObjectMeta (name, generateName, namespace, labels,
annotations), ConfigMap data, and SelfSubjectAccessReview attributes. Field numbers come
from ``k8s.io/api``'s generated.proto. Other kinds answer 415 (:class:`ProtobufUnsupported`);
bytes that are not such a message (no prefix, truncated, a wire type that does not fit the
field, no kind) are the client's error and answer 400 with the texts of the API server's
decoder (gogo-protobuf's ``unexpected EOF``, ``proto: illegal wireType 7``); strings are
decoded with invalid UTF-8 replaced, so validation judges them as it would upstream.
"""

from __future__ import annotations

from typing import Any

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
    raw = parse_fields(_message(envelope, 2))
    obj: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": _metadata(_message(raw, 1)),
    }
    if kind == "ConfigMap":
        if _string_map(raw, 2):
            obj["data"] = _string_map(raw, 2)
    elif kind == "SelfSubjectAccessReview":
        spec = parse_fields(_message(raw, 2))
        attributes = parse_fields(_message(spec, 1))
        names = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
        obj["spec"] = {
            "resourceAttributes": {n: _text(attributes, i + 1) or "" for i, n in enumerate(names)}
        }
    elif kind not in ("Namespace",):
        raise ProtobufUnsupported(f"protobuf bodies of kind {kind} are not supported; send JSON")
    return obj
