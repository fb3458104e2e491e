"""The Kubernetes CEL libraries a DRA selector may call, declared for the C++ runtime.

Kubernetes 1.36 compiles stored selectors with the apiserver's base environment: the
Quantity library, the semver library, its Lists and Regex libraries, and cel-go's
extension libraries (strings v2, sets, lists v3, bindings, optional types). The runtime
ships strings, bindings and optionals; everything else is declared here with Kubernetes'
signatures and implemented in Python. The list members ``indexOf``, ``lastIndexOf`` and
``reverse`` are missing: the runtime's strings extension owns those names and its
binding cannot add list overloads to them (recorded in the conformance ledger). Each
implementation raises ``ValueError`` with upstream's text for bad input; the runtime turns
that into a CEL error value.

Called by ``allot.cel.compiler`` when it builds the environment.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from cel_expr_python import cel

from allot.api.errors import QuantityError, SemverError
from allot.api.quantity import Quantity
from allot.api.semver import Semver, is_semver, normalize
from allot.cel import regex, values

T = cel.Type
QUANTITY = T(values.QUANTITY_TYPE_NAME)
SEMVER = T(values.SEMVER_TYPE_NAME)
ELEMENT = T.DYN  # the binding has no type parameters; dyn unifies with any element
LIST_OF_ELEMENT = T.List(ELEMENT)

OverloadSpec = tuple[str, Any, Sequence[Any], bool, Callable[..., Any] | None]
"""(overload id, result type, parameter types, is member, implementation or None)"""


# ------------------------------------------------------------------------ quantities
def _quantity(text: str) -> Any:
    try:
        return values.quantity_message(Quantity.parse(text))
    except QuantityError as err:
        raise ValueError(str(err)) from None


def _is_quantity(text: str) -> bool:
    try:
        Quantity.parse(text)
    except QuantityError:
        return False
    return True


def _q(value: Any) -> Quantity:
    return values.quantity_from_message(value)


def _ordered(left: Any, right: Any) -> int:
    """compareTo for Quantity or Semver messages (-1, 0, 1)."""
    if left.DESCRIPTOR.full_name == values.SEMVER_TYPE_NAME:
        return values.semver_from_message(left).compare(values.semver_from_message(right))
    return _q(left).compare(_q(right))


def _as_integer(value: Any) -> int:
    try:
        return _q(value).as_integer()
    except QuantityError as err:
        raise ValueError(str(err)) from None


QUANTITY_OVERLOADS: list[OverloadSpec] = [
    ("string_to_quantity", QUANTITY, [T.STRING], False, _quantity),
    ("is_quantity_string", T.BOOL, [T.STRING], False, _is_quantity),
    ("quantity_sign", T.INT, [QUANTITY], False, lambda q: _q(q).sign()),
    (
        "quantity_is_greater_than",
        T.BOOL,
        [QUANTITY, QUANTITY],
        True,
        lambda a, b: _ordered(a, b) > 0,
    ),
    ("quantity_is_less_than", T.BOOL, [QUANTITY, QUANTITY], True, lambda a, b: _ordered(a, b) < 0),
    ("quantity_compare_to", T.INT, [QUANTITY, QUANTITY], True, lambda a, b: _ordered(a, b)),
    (
        "quantity_add",
        QUANTITY,
        [QUANTITY, QUANTITY],
        True,
        lambda a, b: values.quantity_message(_q(a).add(_q(b))),
    ),
    (
        "quantity_add_int",
        QUANTITY,
        [QUANTITY, T.INT],
        True,
        lambda a, b: values.quantity_message(_q(a).add(values.integer_quantity(b))),
    ),
    (
        "quantity_sub",
        QUANTITY,
        [QUANTITY, QUANTITY],
        True,
        lambda a, b: values.quantity_message(_q(a).sub(_q(b))),
    ),
    (
        "quantity_sub_int",
        QUANTITY,
        [QUANTITY, T.INT],
        True,
        lambda a, b: values.quantity_message(_q(a).sub(values.integer_quantity(b))),
    ),
    ("quantity_as_integer", T.INT, [QUANTITY], True, _as_integer),
    ("quantity_is_integer", T.BOOL, [QUANTITY], True, lambda q: _q(q).is_integer()),
    (
        "quantity_as_approximate_float",
        T.DOUBLE,
        [QUANTITY],
        True,
        lambda q: _q(q).as_approximate_float(),
    ),
]
QUANTITY_NAMES = {
    "string_to_quantity": "quantity",
    "is_quantity_string": "isQuantity",
    "quantity_sign": "sign",
    "quantity_is_greater_than": "isGreaterThan",
    "quantity_is_less_than": "isLessThan",
    "quantity_compare_to": "compareTo",
    "quantity_add": "add",
    "quantity_add_int": "add",
    "quantity_sub": "sub",
    "quantity_sub_int": "sub",
    "quantity_as_integer": "asInteger",
    "quantity_is_integer": "isInteger",
    "quantity_as_approximate_float": "asApproximateFloat",
}


# -------------------------------------------------------------------------- semver
def _semver(text: str, normalize_first: bool = False) -> Any:
    try:
        parsed = Semver.parse_normalized(text) if normalize_first else Semver.parse(text)
    except SemverError as err:
        raise ValueError(str(err)) from None
    return values.semver_message(parsed)


def _is_semver(text: str, normalize_first: bool = False) -> bool:
    return is_semver(normalize(text) if normalize_first else text)


def _v(value: Any) -> Semver:
    return values.semver_from_message(value)


SEMVER_OVERLOADS: list[OverloadSpec] = [
    ("string_to_semver", SEMVER, [T.STRING], False, _semver),
    ("string_bool_to_semver", SEMVER, [T.STRING, T.BOOL], False, _semver),
    ("is_semver_string", T.BOOL, [T.STRING], False, _is_semver),
    ("is_semver_string_bool", T.BOOL, [T.STRING, T.BOOL], False, _is_semver),
    # The runtime dispatches on value kinds, and both types are messages to it: these three
    # share the Quantity overloads' implementation (see _ordered) and declare none here.
    ("semver_is_greater_than", T.BOOL, [SEMVER, SEMVER], True, None),
    ("semver_is_less_than", T.BOOL, [SEMVER, SEMVER], True, None),
    ("semver_compare_to", T.INT, [SEMVER, SEMVER], True, None),
    ("semver_major", T.INT, [SEMVER], True, lambda a: _v(a).major),
    ("semver_minor", T.INT, [SEMVER], True, lambda a: _v(a).minor),
    ("semver_patch", T.INT, [SEMVER], True, lambda a: _v(a).patch),
]
SEMVER_NAMES = {
    "string_to_semver": "semver",
    "string_bool_to_semver": "semver",
    "is_semver_string": "isSemver",
    "is_semver_string_bool": "isSemver",
    "semver_is_greater_than": "isGreaterThan",
    "semver_is_less_than": "isLessThan",
    "semver_compare_to": "compareTo",
    "semver_major": "major",
    "semver_minor": "minor",
    "semver_patch": "patch",
}


# ---------------------------------------------------------------------------- lists
def _require_comparable(items: list[Any]) -> None:
    kinds = {type(item) for item in items}
    if len(kinds) > 1 and not kinds <= {int, float}:
        raise ValueError("no such overload")


def _is_sorted(items: list[Any]) -> bool:
    _require_comparable(items)
    return all(a <= b for a, b in itertools.pairwise(items))


def _list_min(items: list[Any]) -> Any:
    if not items:
        raise ValueError("min called on empty list")
    _require_comparable(items)
    return min(items)


def _list_max(items: list[Any]) -> Any:
    if not items:
        raise ValueError("max called on empty list")
    _require_comparable(items)
    return max(items)


def _slice(items: list[Any], start: int, end: int) -> list[Any]:
    if start < 0 or end < 0:
        raise ValueError(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise ValueError(
            f"cannot slice({start}, {end}), start index must be less than or equal to end index"
        )
    if end > len(items):
        raise ValueError(f"cannot slice({start}, {end}), list is length {len(items)}")
    return items[start:end]


def _flatten(items: list[Any], depth: int = 1) -> list[Any]:
    if depth < 0:
        raise ValueError("level must be non-negative")
    result: list[Any] = []
    for item in items:
        if isinstance(item, list) and depth > 0:
            result.extend(_flatten(item, depth - 1))
        else:
            result.append(item)
    return result


def _distinct(items: list[Any]) -> list[Any]:
    result: list[Any] = []
    for item in items:
        if item not in result:
            result.append(item)
    return result


def _lists_range(count: int) -> list[int]:
    return list(range(count))


def _sort(items: list[Any]) -> list[Any]:
    _require_comparable(items)
    return sorted(items)


LIST_OVERLOADS: list[OverloadSpec] = [
    ("list_is_sorted", T.BOOL, [LIST_OF_ELEMENT], True, _is_sorted),
    ("list_sum", ELEMENT, [LIST_OF_ELEMENT], True, lambda items: sum(items)),
    ("list_min", ELEMENT, [LIST_OF_ELEMENT], True, _list_min),
    ("list_max", ELEMENT, [LIST_OF_ELEMENT], True, _list_max),
    ("list_slice", LIST_OF_ELEMENT, [LIST_OF_ELEMENT, T.INT, T.INT], True, _slice),
    ("list_flatten", T.List(T.DYN), [T.List(T.DYN)], True, _flatten),
    ("list_flatten_int", T.List(T.DYN), [T.List(T.DYN), T.INT], True, _flatten),
    ("list_distinct", LIST_OF_ELEMENT, [LIST_OF_ELEMENT], True, _distinct),
    ("list_sort", LIST_OF_ELEMENT, [LIST_OF_ELEMENT], True, _sort),
    ("lists_range", T.List(T.INT), [T.INT], False, _lists_range),
    (
        "sets_contains",
        T.BOOL,
        [LIST_OF_ELEMENT, LIST_OF_ELEMENT],
        False,
        lambda a, b: all(item in a for item in b),
    ),
    (
        "sets_equivalent",
        T.BOOL,
        [LIST_OF_ELEMENT, LIST_OF_ELEMENT],
        False,
        lambda a, b: all(item in a for item in b) and all(item in b for item in a),
    ),
    (
        "sets_intersects",
        T.BOOL,
        [LIST_OF_ELEMENT, LIST_OF_ELEMENT],
        False,
        lambda a, b: any(item in a for item in b),
    ),
]
LIST_NAMES = {
    "list_is_sorted": "isSorted",
    "list_sum": "sum",
    "list_min": "min",
    "list_max": "max",
    "list_slice": "slice",
    "list_flatten": "flatten",
    "list_flatten_int": "flatten",
    "list_distinct": "distinct",
    "list_sort": "sort",
    "lists_range": "lists.range",
    "sets_contains": "sets.contains",
    "sets_equivalent": "sets.equivalent",
    "sets_intersects": "sets.intersects",
}


# ---------------------------------------------------------------------------- regex
MATCHES_FUNCTION = "__allot_matches__"
"""What the compiler renames ``matches`` calls to in the programs it runs: the runtime's
own ``matches`` cannot be replaced, and this one has Go's semantics and a cost."""

REGEX_OVERLOADS: list[OverloadSpec] = [
    ("string_find", T.STRING, [T.STRING, T.STRING], True, regex.find),
    ("string_find_all", T.List(T.STRING), [T.STRING, T.STRING], True, regex.find_all),
    ("string_find_all_n", T.List(T.STRING), [T.STRING, T.STRING, T.INT], True, regex.find_all),
    ("allot_matches_string", T.BOOL, [T.STRING, T.STRING], True, regex.matches),
    ("allot_matches", T.BOOL, [T.STRING, T.STRING], False, regex.matches),
]
REGEX_NAMES = {
    "string_find": "find",
    "string_find_all": "findAll",
    "string_find_all_n": "findAll",
    "allot_matches_string": MATCHES_FUNCTION,
    "allot_matches": MATCHES_FUNCTION,
}


def function_declarations() -> list[Any]:
    """Every library function, grouped by CEL name as the runtime wants them."""
    grouped: dict[str, list[Any]] = {}
    for overloads, names in (
        (QUANTITY_OVERLOADS, QUANTITY_NAMES),
        (SEMVER_OVERLOADS, SEMVER_NAMES),
        (LIST_OVERLOADS, LIST_NAMES),
        (REGEX_OVERLOADS, REGEX_NAMES),
    ):
        for overload_id, result, params, is_member, impl in overloads:
            keywords = {"impl": impl} if impl is not None else {}
            grouped.setdefault(names[overload_id], []).append(
                cel.Overload(overload_id, result, list(params), is_member=is_member, **keywords)
            )
    return [cel.FunctionDecl(name, overloads) for name, overloads in grouped.items()]
