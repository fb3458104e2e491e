"""How Kubernetes' CEL object types live inside the C++ CEL runtime.

Kubernetes declares ``kubernetes.Quantity`` and ``kubernetes.Semver`` as opaque types. The
Python binding of the runtime cannot carry opaque Python objects, but it can carry protobuf
messages, and a message type named ``kubernetes.Quantity`` type-checks and prints exactly
like the opaque one (``found no matching overload for '_>=_' applied to
'(kubernetes.Quantity, kubernetes.Quantity)'``). Each message holds one field: the value in
a normalised text form, so that the runtime's message equality is Kubernetes' numeric
equality (``quantity("200M") == quantity("0.2G")``). Used by the libraries and the device
view in this package.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory

from allot.api.quantity import NANO, Quantity, QuantityFormat
from allot.api.semver import Semver

QUANTITY_TYPE_NAME = "kubernetes.Quantity"
SEMVER_TYPE_NAME = "kubernetes.Semver"
_VALUE_FIELD = "normalized"


def _build_pool() -> descriptor_pool.DescriptorPool:
    file_proto = descriptor_pb2.FileDescriptorProto(
        name="allot/kubernetes_cel_types.proto", package="kubernetes", syntax="proto3"
    )
    for name in ("Quantity", "Semver"):
        message_proto = file_proto.message_type.add(name=name)
        message_proto.field.add(
            name=_VALUE_FIELD,
            number=1,
            type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    pool.Add(_authorization_file())
    return pool


AUTHORIZATION_PACKAGE = "kubernetes.authorization"
AUTHORIZATION_MESSAGES: dict[str, tuple[tuple[str, int], ...]] = {
    # the caller's cluster and user (JSON) travel with every check; see allot.cel.authz
    "Authorizer": (("cluster", 9), ("user", 9)),
    "PathCheck": (("cluster", 9), ("user", 9), ("path", 9)),
    "GroupCheck": (("cluster", 9), ("user", 9), ("group", 9)),
    "ResourceCheck": (
        ("cluster", 9),
        ("user", 9),
        ("group", 9),
        ("resource", 9),
        ("subresource", 9),
        ("namespace", 9),
        ("name", 9),
    ),
    "Decision": (("allowed", 8), ("reason", 9), ("error", 9)),
}
"""Kubernetes' authorizer library types (``kubernetes.authorization.Authorizer``, ...), as
messages of (field, protobuf type: 9 string, 8 bool)."""


def _authorization_file() -> descriptor_pb2.FileDescriptorProto:
    file_proto = descriptor_pb2.FileDescriptorProto(
        name="allot/kubernetes_authorization.proto",
        package=AUTHORIZATION_PACKAGE,
        syntax="proto3",
    )
    for name, fields in AUTHORIZATION_MESSAGES.items():
        message_proto = file_proto.message_type.add(name=name)
        for number, (field, kind) in enumerate(fields, 1):
            message_proto.field.add(
                name=field,
                number=number,
                type=kind,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
            )
    return file_proto


POOL = _build_pool()
_QUANTITY_CLASS: Any = message_factory.GetMessageClass(
    POOL.FindMessageTypeByName(QUANTITY_TYPE_NAME)
)
_SEMVER_CLASS: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName(SEMVER_TYPE_NAME))


def authorization_message(type_name: str, /, **fields: object) -> message.Message:
    """A ``kubernetes.authorization.<type_name>`` value."""
    cls: Any = message_factory.GetMessageClass(
        POOL.FindMessageTypeByName(f"{AUTHORIZATION_PACKAGE}.{type_name}")
    )
    result: message.Message = cls(**fields)
    return result


def quantity_message(value: Quantity) -> message.Message:
    """Wrap a Quantity; the text is the exact value in nanos, so equal values are equal."""
    result: message.Message = _QUANTITY_CLASS(normalized=str(value.nanos))
    return result


def message_text(value: message.Message) -> str:
    """The normalised text a quantity or version message carries."""
    text: str = getattr(value, _VALUE_FIELD)
    return text


def quantity_from_message(value: Any) -> Quantity:
    return Quantity(int(getattr(value, _VALUE_FIELD)), QuantityFormat.DECIMAL_SI)


def semver_message(value: Semver) -> message.Message:
    """Wrap a version; build metadata is dropped because it does not affect precedence."""
    text = f"{value.major}.{value.minor}.{value.patch}"
    if value.prerelease:
        text += "-" + ".".join(value.prerelease)
    result: message.Message = _SEMVER_CLASS(normalized=text)
    return result


def semver_from_message(value: Any) -> Semver:
    return Semver.parse(getattr(value, _VALUE_FIELD))


def integer_quantity(value: int) -> Quantity:
    return Quantity(value * NANO)
