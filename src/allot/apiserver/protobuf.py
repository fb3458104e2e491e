"""Decoding the few protobuf bodies kubectl sends (``create namespace``, ``auth can-i``...).

kubectl posts some objects as ``application/vnd.kubernetes.protobuf``: the magic
``k8s\\x00`` followed by a ``runtime.Unknown`` envelope (type meta, raw object bytes). Only
the fields the server needs are read: ObjectMeta (name, generateName, namespace, labels,
annotations), ConfigMap data, SelfSubjectAccessReview attributes, and the workload
objects of ``kubectl create deployment|job|cronjob|secret|service|serviceaccount`` as
:mod:`allot.apiserver.protoschema` lists their fields. Field numbers come from
``k8s.io/api``'s generated.proto. Other kinds answer 415 (:class:`ProtobufUnsupported`);
bytes that are not such a message (no prefix, truncated, a wire type that does not fit the
field, no kind) are the client's error and answer 400 with the texts of the API server's
decoder (gogo-protobuf's ``unexpected EOF``, ``proto: illegal wireType 7``); strings are
decoded with invalid UTF-8 replaced, so validation judges them as it would upstream.
"""

from __future__ import annotations

import base64
from typing import Any

from allot.apiserver.protoschema import OBJECTS, SCHEMAS, STATUS_FIELD, Field

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
    elif kind in OBJECTS:
        obj.update(decode_object(kind, raw))
    elif kind not in ("Namespace",):
        raise ProtobufUnsupported(f"protobuf bodies of kind {kind} are not supported; send JSON")
    return obj


def decode_object(kind: str, fields: Fields) -> dict[str, Any]:
    """Everything but ``metadata`` of a top-level object of ``kind`` (in OBJECTS)."""
    status = STATUS_FIELD.get(kind)
    kept = {n: v for n, v in fields.items() if n != 1 and n != status}
    return _decode(kind, OBJECTS[kind], kept)


def decode_message(message: str, raw: bytes) -> dict[str, Any]:
    return _decode(message, SCHEMAS[message], parse_fields(raw))


def _decode(message: str, schema: dict[int, Field], fields: Fields) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for number, values in fields.items():
        field = schema.get(number)
        if field is None:
            if all(value in (0, b"") for value in values):
                continue  # a field Go always writes, at its zero value
            raise ProtobufUnsupported(
                f"field {number} of protobuf message {message} is not decoded by allot; "
                "send the object as JSON (kubectl apply -f, or kubectl create -o yaml "
                "--dry-run=client | kubectl apply -f -)"
            )
        if field.shape == "ignored":
            continue
        value = _DECODERS[field.shape.rstrip("*")](field, values)
        if field.shape.endswith("*") or value not in ("", 0, False, {}, []):
            result[field.name] = value
    return result


def _bytes(values: list[Any], field: Field) -> list[bytes]:
    for value in values:
        if not isinstance(value, bytes):
            raise ProtobufError(f"proto: wrong wireType = 0 for field {field.name}")
    return values


def _integer(values: list[Any], field: Field) -> int:
    value = values[-1]
    if not isinstance(value, int):
        raise ProtobufError(f"proto: wrong wireType = 2 for field {field.name}")
    return value - (1 << 64) if value >= 1 << 63 else value  # two's complement varints


def _pairs(field: Field, values: list[Any]) -> list[tuple[str, bytes]]:
    pairs = []
    for entry in _bytes(values, field):
        pair = parse_fields(entry)
        key = _bytes(pair.get(1, [b""]), field)[-1].decode(errors="replace")
        pairs.append((key, _bytes(pair.get(2, [b""]), field)[-1]))
    return pairs


def _int_or_string(field: Field, values: list[Any]) -> int | str:
    fields = parse_fields(_bytes(values, field)[-1])
    if fields.get(1) and _integer(fields[1], field) == 1:
        return _bytes(fields.get(3, [b""]), field)[-1].decode(errors="replace")
    return _integer(fields.get(2, [0]), field)


_DECODERS = {
    "string": lambda f, v: _bytes(v, f)[-1].decode(errors="replace"),
    "strings": lambda f, v: [item.decode(errors="replace") for item in _bytes(v, f)],
    "int": lambda f, v: _integer(v, f),
    "bool": lambda f, v: bool(_integer(v, f)),
    "message": lambda f, v: decode_message(f.message, _bytes(v, f)[-1]),
    "messages": lambda f, v: [decode_message(f.message, item) for item in _bytes(v, f)],
    "string_map": lambda f, v: {k: b.decode(errors="replace") for k, b in _pairs(f, v)},
    "bytes_map": lambda f, v: {k: base64.b64encode(b).decode() for k, b in _pairs(f, v)},
    "quantity_map": lambda f, v: {
        k: _bytes(parse_fields(b).get(1, [b""]), f)[-1].decode() for k, b in _pairs(f, v)
    },
    "int_or_string": _int_or_string,
}
