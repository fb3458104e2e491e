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
    return pool


POOL = _build_pool()
_QUANTITY_CLASS: Any = message_factory.GetMessageClass(
    POOL.FindMessageTypeByName(QUANTITY_TYPE_NAME)
)
_SEMVER_CLASS: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName(SEMVER_TYPE_NAME))


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
