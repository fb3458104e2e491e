"""Kubernetes ``resource.Quantity``: exact parsing, canonical formatting and ordering.

Capacities, counters and ResourceQuota amounts are Quantities, and the allocator compares
and sums them, so they must behave exactly like ``k8s.io/apimachinery/pkg/api/resource``:
values with more precision than a nano are rounded away from zero, ``==`` is numeric
(``200M`` equals ``0.2G``), and the wire form is the canonical string (``1.5`` becomes
``1500m``, ``1.5Gi`` becomes ``1536Mi``).

The value is held as an integer number of nano-units, which makes every operation exact.
Used by the API models (as a pydantic field type), by the CEL quantity library and by the
allocator's counter and capacity arithmetic.
"""

from __future__ import annotations

import enum
import functools
import re
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from allot.api.errors import QuantityError

NANO = 10**9

FORMAT_REGEX_TEXT = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = f"quantities must match the regular expression '{FORMAT_REGEX_TEXT}'"
ERR_SUFFIX = "unable to parse quantity's suffix"

_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIXES = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_BY_EXPONENT = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {exp: suffix for suffix, exp in _BINARY_SUFFIXES.items()}
_NUMBER = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?")
_EXPONENT_SUFFIX = re.compile(r"^[eE]([-+]?[0-9]+)$")


class QuantityFormat(enum.Enum):
    """How a Quantity was written; canonical output keeps the family of the input."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


def _ceil_div_away_from_zero(numerator: int, denominator: int) -> int:
    """Divide, rounding any remainder away from zero (inf.RoundUp)."""
    quotient, remainder = divmod(abs(numerator), denominator)
    if remainder:
        quotient += 1
    return -quotient if numerator < 0 else quotient


def _split_suffix(suffix: str) -> tuple[int, int, QuantityFormat]:
    """Return (base, exponent, format) for a quantity suffix."""
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], QuantityFormat.BINARY_SI
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], QuantityFormat.DECIMAL_SI
    match = _EXPONENT_SUFFIX.match(suffix)
    if match:
        return 10, int(match.group(1)), QuantityFormat.DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX)


@functools.total_ordering
class Quantity:
    """An exact, immutable Kubernetes quantity."""

    __slots__ = ("_format", "_nanos")

    def __init__(self, nanos: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> None:
        self._nanos = nanos
        self._format = fmt

    # -- construction -------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse like ``resource.ParseQuantity``; raise QuantityError with upstream's text."""
        return _parse_cached(text)

    @classmethod
    def from_int(cls, value: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> Quantity:
        return cls(value * NANO, fmt)

    # -- accessors ----------------------------------------------------------------------
    @property
    def nanos(self) -> int:
        """The value in units of 1e-9."""
        return self._nanos

    @property
    def format(self) -> QuantityFormat:
        return self._format

    def is_integer(self) -> bool:
        return self._nanos % NANO == 0

    def as_integer(self) -> int:
        """The value as an integer; raise QuantityError when it has a fraction or overflows."""
        if not self.is_integer():
            raise QuantityError("cannot convert value to integer")
        value = self._nanos // NANO
        if not -(2**63) <= value < 2**63:
            raise QuantityError("cannot convert value to integer")
        return value

    def as_approximate_float(self) -> float:
        return self._nanos / NANO

    def sign(self) -> int:
        return (self._nanos > 0) - (self._nanos < 0)

    def add(self, other: Quantity) -> Quantity:
        fmt = other._format if self._nanos == 0 else self._format
        return Quantity(self._nanos + other._nanos, fmt)

    def sub(self, other: Quantity) -> Quantity:
        fmt = other._format if self._nanos == 0 else self._format
        return Quantity(self._nanos - other._nanos, fmt)

    def compare(self, other: Quantity) -> int:
        return (self._nanos > other._nanos) - (self._nanos < other._nanos)

    # -- canonical text -----------------------------------------------------------------
    def canonical(self) -> str:
        """The string Kubernetes writes on the wire (``Quantity.String()``)."""
        return _canonical_cached(self._nanos, self._format)

    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({self.canonical()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._nanos == other._nanos

    def __lt__(self, other: Quantity) -> bool:
        return self._nanos < other._nanos

    def __hash__(self) -> int:
        return hash(self._nanos)

    # -- pydantic integration -----------------------------------------------------------
    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            _coerce_quantity,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda value: value.canonical(), when_used="always"
            ),
            json_schema_input_schema=core_schema.str_schema(),
        )


def _coerce_quantity(value: object) -> Quantity:
    """Accept what Kubernetes' JSON decoder accepts: a string or a JSON number."""
    if type(value) is not str:  # nearly every quantity on the wire is a string
        if isinstance(value, Quantity):
            return value
        value = _number_text(value)
    try:
        return Quantity.parse(value)
    except QuantityError as err:
        raise ValueError(str(err)) from None


def _number_text(value: object) -> str:
    """A JSON number as the text Kubernetes parses; anything else is refused."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("quantity must be a string or a number")
    return repr(value) if isinstance(value, float) else str(value)


@functools.lru_cache(maxsize=65536)
def _parse_cached(text: str) -> Quantity:
    match = _NUMBER.match(text)
    if not text or match is None:
        raise QuantityError(ERR_FORMAT_WRONG)
    sign, whole, fraction = match.group(1), match.group(2), match.group(3)
    if not whole and not fraction:
        raise QuantityError(ERR_FORMAT_WRONG)
    suffix = text[match.end() :]
    if not re.fullmatch(r"[eEinumkKMGTP]*[-+]?[0-9]*", suffix):
        raise QuantityError(ERR_FORMAT_WRONG)
    base, exponent, fmt = _split_suffix(suffix)
    fraction = fraction or ""
    digits = int((whole or "0") + fraction)
    # value = digits * 10^-len(fraction) * base^exponent, expressed in nanos
    numerator, denominator = digits, 10 ** len(fraction)
    if base == 2:
        numerator *= 2**exponent
    elif exponent >= 0:
        numerator *= 10**exponent
    else:
        denominator *= 10 ** (-exponent)
    nanos = _ceil_div_away_from_zero(numerator * NANO, denominator)
    if sign == "-":
        nanos = -nanos
    return Quantity(nanos, fmt)


@functools.lru_cache(maxsize=65536)
def _canonical_cached(nanos: int, fmt: QuantityFormat) -> str:
    if nanos == 0:
        return "0"
    if fmt is QuantityFormat.BINARY_SI:
        if -1024 * NANO < nanos < 1024 * NANO or nanos % NANO:
            fmt = QuantityFormat.DECIMAL_SI
        else:
            return _canonical_binary(nanos // NANO)
    return _canonical_decimal(nanos, fmt)


def _canonical_binary(value: int) -> str:
    exponent = 0
    while value % 1024 == 0 and exponent < 60:
        value //= 1024
        exponent += 10
    return f"{value}{_BINARY_BY_EXPONENT.get(exponent, '')}"


def _canonical_decimal(nanos: int, fmt: QuantityFormat) -> str:
    mantissa, exponent = nanos, -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3  # floor the exponent to a multiple of three
    mantissa *= 10**shift
    exponent -= shift
    if fmt is QuantityFormat.DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    suffix = _DECIMAL_BY_EXPONENT.get(exponent)
    if suffix is None:
        return f"{mantissa}e{exponent}"
    return f"{mantissa}{suffix}"


def parse_quantity(text: str) -> Quantity:
    """Module-level alias of :meth:`Quantity.parse` for call sites that read better so."""
    return Quantity.parse(text)
