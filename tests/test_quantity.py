"""Kubernetes Quantity: parsing, canonical form, ordering (apimachinery's resource package)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from allot.api.errors import QuantityError
from allot.api.quantity import ERR_FORMAT_WRONG, ERR_SUFFIX, Quantity
from allot.api.resource_v1 import DeviceCapacity

CANONICAL = [
    ("0", "0"),
    ("00", "0"),
    ("-0", "0"),
    ("1", "1"),
    ("1.5", "1500m"),
    ("0.1", "100m"),
    ("100m", "100m"),
    ("1000m", "1"),
    ("1.5Gi", "1536Mi"),
    ("40Gi", "40Gi"),
    ("42949672960", "42949672960"),
    ("81559Mi", "81559Mi"),
    ("5859375Ki", "5859375Ki"),
    ("6000000000", "6G"),
    ("0.2G", "200M"),
    ("200M", "200M"),
    ("1Ki", "1Ki"),
    ("1024", "1024"),
    ("0.5Ki", "512"),
    ("1.1Ki", "1126400m"),
    ("1e3", "1e3"),
    ("1E3", "1e3"),
    ("1.5e3", "1500"),
    ("1e-3", "1e-3"),
    ("12e6", "12e6"),
    ("+5", "5"),
    ("-1.5", "-1500m"),
    ("1n", "1n"),
    ("0.1n", "1n"),
    ("-0.1n", "-1n"),
    ("1u", "1u"),
    ("1k", "1k"),
    ("1000", "1k"),
    ("1M", "1M"),
    ("1E", "1E"),
    ("1Ei", "1Ei"),
    ("1024Ei", "1024Ei"),
    ("2048Mi", "2Gi"),
    (".5", "500m"),
    ("5.", "5"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_canonical_form(text: str, canonical: str) -> None:
    assert Quantity.parse(text).canonical() == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", ERR_FORMAT_WRONG),
        ("ten", ERR_FORMAT_WRONG),
        (".", ERR_FORMAT_WRONG),
        ("1.2.3", ERR_FORMAT_WRONG),
        ("1KiB", ERR_FORMAT_WRONG),
        ("1 Gi", ERR_FORMAT_WRONG),
        ("1ki", ERR_SUFFIX),
        ("1Kim", ERR_SUFFIX),
        ("1e", ERR_SUFFIX),
        ("1MM", ERR_SUFFIX),
    ],
)
def test_parse_errors_carry_upstream_text(text: str, message: str) -> None:
    with pytest.raises(QuantityError) as caught:
        Quantity.parse(text)
    assert str(caught.value) == message


def test_equality_is_numeric() -> None:
    assert Quantity.parse("200M") == Quantity.parse("0.2G")
    assert Quantity.parse("1Gi") == Quantity.parse("1073741824")
    assert Quantity.parse("81559Mi") < Quantity.parse("80Gi")
    assert sorted([Quantity.parse("1Gi"), Quantity.parse("1G"), Quantity.parse("1Mi")]) == [
        Quantity.parse("1Mi"),
        Quantity.parse("1G"),
        Quantity.parse("1Gi"),
    ]


def test_arithmetic_and_conversions() -> None:
    total = Quantity.parse("1Gi").add(Quantity.parse("512Mi"))
    assert total.canonical() == "1536Mi"
    assert Quantity.parse("5").sub(Quantity.parse("7")).sign() == -1
    assert Quantity.parse("3").as_integer() == 3
    with pytest.raises(QuantityError, match="cannot convert value to integer"):
        Quantity.parse("1.5").as_integer()
    with pytest.raises(QuantityError, match="cannot convert value to integer"):
        Quantity.parse("10E").as_integer()
    assert Quantity.parse("1.5").as_approximate_float() == 1.5


SUFFIX_VALUES: dict[str, Fraction | int] = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "m": Fraction(1, 1000),
}


@given(st.integers(min_value=-(10**12), max_value=10**12), st.sampled_from(sorted(SUFFIX_VALUES)))
def test_parse_value_matches_exact_arithmetic(number: int, suffix: str) -> None:
    quantity = Quantity.parse(f"{number}{suffix}")
    assert Fraction(quantity.nanos, 10**9) == number * SUFFIX_VALUES[suffix]


@given(st.integers(min_value=-(10**15), max_value=10**15), st.sampled_from(sorted(SUFFIX_VALUES)))
def test_canonical_form_round_trips(number: int, suffix: str) -> None:
    quantity = Quantity.parse(f"{number}{suffix}")
    canonical = quantity.canonical()
    again = Quantity.parse(canonical)
    assert again == quantity
    assert again.canonical() == canonical


@given(
    st.lists(
        st.tuples(st.integers(-(10**9), 10**9), st.sampled_from(sorted(SUFFIX_VALUES))),
        min_size=2,
        max_size=8,
    )
)
def test_ordering_agrees_with_exact_values(items: list[tuple[int, str]]) -> None:
    quantities = [Quantity.parse(f"{n}{s}") for n, s in items]
    exact = [n * SUFFIX_VALUES[s] for n, s in items]
    order = sorted(range(len(items)), key=lambda i: quantities[i])
    assert [exact[i] for i in order] == sorted(exact)
    for i in range(len(items)):
        for j in range(len(items)):
            assert quantities[i].compare(quantities[j]) == (exact[i] > exact[j]) - (
                exact[i] < exact[j]
            )


@pytest.mark.parametrize(
    ("wire", "canonical"), [("40Gi", "40Gi"), (5, "5"), (1.5, "1500m"), (Quantity.parse("2"), "2")]
)
def test_a_model_takes_strings_json_numbers_and_quantities(wire: object, canonical: str) -> None:
    assert str(DeviceCapacity.model_validate({"value": wire}).value) == canonical


@pytest.mark.parametrize("wire", [True, [1], {"value": "1"}, "1Qi"])
def test_a_model_refuses_other_values_with_the_reason(wire: object) -> None:
    with pytest.raises(ValidationError) as raised:
        DeviceCapacity.model_validate({"value": wire})
    text = str(raised.value)
    assert "quantity must be a string or a number" in text or ERR_FORMAT_WRONG in text
