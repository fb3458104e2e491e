"""Field errors in the shape of ``k8s.io/apimachinery/pkg/util/validation/field``.

A validation failure is a list of :class:`FieldError` (path, type, bad value, detail). Their
text (``spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than
zero``) and their ``Status`` cause reasons (``FieldValueInvalid``) are what kubectl shows, so
they are reproduced exactly. Used by every validator in this package; turned into a
``Status`` by ``allot.manifests.statuses``.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any


class ErrorType(enum.Enum):
    """Error types with their display text and Status cause reason."""

    NOT_FOUND = ("Not found", "FieldValueNotFound")
    REQUIRED = ("Required value", "FieldValueRequired")
    DUPLICATE = ("Duplicate value", "FieldValueDuplicate")
    INVALID = ("Invalid value", "FieldValueInvalid")
    NOT_SUPPORTED = ("Unsupported value", "FieldValueNotSupported")
    FORBIDDEN = ("Forbidden", "FieldValueForbidden")
    TOO_LONG = ("Too long", "FieldValueTooLong")
    TOO_MANY = ("Too many", "FieldValueTooMany")
    INTERNAL = ("Internal error", "InternalError")
    TYPE_INVALID = ("Invalid value", "FieldValueTypeInvalid")

    @property
    def text(self) -> str:
        return self.value[0]

    @property
    def reason(self) -> str:
        return self.value[1]


_NO_VALUE = object()
_VALUELESS = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}


class Path:
    """An immutable field path: ``Path("spec").child("devices").index(0)``."""

    __slots__ = ("_text",)

    def __init__(self, text: str = "") -> None:
        self._text = text

    def child(self, *names: str) -> Path:
        text = self._text
        for name in names:
            text = f"{text}.{name}" if text else name
        return Path(text)

    def index(self, position: int) -> Path:
        return Path(f"{self._text}[{position}]")

    def key(self, name: str) -> Path:
        return Path(f"{self._text}[{name}]")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Path({self._text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Path) and other._text == self._text

    def __hash__(self) -> int:
        return hash(self._text)


def format_value(value: Any) -> str:
    """Go's rendering of a bad value: strings quoted (%q), numbers and bools bare."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return '"null"'
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


@dataclass(frozen=True)
class FieldError:
    path: Path
    type: ErrorType
    detail: str = ""
    bad_value: Any = _NO_VALUE

    def body(self) -> str:
        """The text after ``<path>: `` (``ErrorBody`` upstream)."""
        text = self.type.text
        if self.type not in _VALUELESS and self.bad_value is not _NO_VALUE:
            text = f"{text}: {format_value(self.bad_value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.path}: {self.body()}" if str(self.path) else self.body()


ErrorList = list[FieldError]


def required(path: Path, detail: str = "") -> FieldError:
    return FieldError(path, ErrorType.REQUIRED, detail)


def invalid(path: Path, value: Any, detail: str) -> FieldError:
    return FieldError(path, ErrorType.INVALID, detail, value)


def forbidden(path: Path, detail: str) -> FieldError:
    return FieldError(path, ErrorType.FORBIDDEN, detail)


def internal(path: Path, detail: str) -> FieldError:
    return FieldError(path, ErrorType.INTERNAL, detail)


def duplicate(path: Path, value: Any) -> FieldError:
    return FieldError(path, ErrorType.DUPLICATE, "", value)


def not_supported(path: Path, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported)
    return FieldError(path, ErrorType.NOT_SUPPORTED, detail, value)


def too_many(path: Path, actual: int | None, limit: int) -> FieldError:
    value: Any = actual if actual is not None else _NO_VALUE
    return FieldError(path, ErrorType.TOO_MANY, f"must have at most {limit} items", value)


def too_long(path: Path, limit: int) -> FieldError:
    return FieldError(path, ErrorType.TOO_LONG, f"may not be more than {limit} bytes")


def not_found(path: Path, value: Any, detail: str = "") -> FieldError:
    return FieldError(path, ErrorType.NOT_FOUND, detail, value)
