"""The one pydantic base every API model derives from, and the shared field types.

Kubernetes JSON is camelCase, omits unset optionals and rejects unknown fields when a
client asks for strict field validation (kubectl's default). ``ApiModel`` encodes those
rules once: snake_case attributes in Python, camelCase aliases on the wire, ``None`` for
"omitted", ``extra="forbid"``. Maps are written with sorted keys, as Go's encoder does,
and times in RFC 3339 at second precision. Every module under ``allot.api`` uses these.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar, Self, TypeVar

from pydantic import (
    AliasGenerator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    WrapSerializer,
)
from pydantic.alias_generators import to_camel

from allot.api.costs import COSTS
from allot.types import rfc3339

V = TypeVar("V")


def _wire_name(python_name: str) -> str:
    """camelCase, except a trailing ``_`` used to dodge Python builtins (``int_``)."""
    return to_camel(python_name.rstrip("_"))


class ApiModel(BaseModel):
    """Base of all wire models: camelCase aliases, unknown fields forbidden."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(alias=_wire_name),
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=False,
        revalidate_instances="never",
        defer_build=True,
    )

    _whole_object: ClassVar[bool | None] = None
    """Whether the model is a whole API object (``apiVersion`` and ``metadata``), whose
    decodes :mod:`allot.api.costs` counts; worked out at the first decode."""

    @classmethod
    def model_validate(cls, obj: Any, **options: Any) -> Self:
        whole = cls.__dict__.get("_whole_object")
        if whole is None:
            whole = "api_version" in cls.model_fields and "metadata" in cls.model_fields
            cls._whole_object = whole
        if whole:
            COSTS.decoded(cls.__name__)
        return super().model_validate(obj, **options)

    def to_wire(self) -> dict[str, Any]:
        """The object as Kubernetes would write it in JSON (omitted fields left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_wire(cls, data: Any) -> Self:
        """Decode a wire dict strictly; raises pydantic's ValidationError on bad input."""
        return cls.model_validate(data)


def _sort_map(value: dict[str, Any], handler: SerializerFunctionWrapHandler) -> Any:
    dumped = handler(value)
    if isinstance(dumped, dict):
        return dict(sorted(dumped.items()))
    return dumped


SortedMap = Annotated[dict[str, V], WrapSerializer(_sort_map)]
"""A string-keyed map that is written with sorted keys, like Go's JSON encoder."""


def _parse_time(value: object) -> object:
    if isinstance(value, str) and value.endswith("Z"):
        return value[:-1] + "+00:00"
    return value


def _format_time(value: dt.datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return rfc3339(value)


def _format_micro_time(value: dt.datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


Time = Annotated[dt.datetime, BeforeValidator(_parse_time), PlainSerializer(_format_time)]
"""``metav1.Time``: RFC 3339, second precision, UTC on output."""

MicroTime = Annotated[
    dt.datetime, BeforeValidator(_parse_time), PlainSerializer(_format_micro_time)
]
"""``metav1.MicroTime``: RFC 3339 with microseconds (Event.eventTime)."""
