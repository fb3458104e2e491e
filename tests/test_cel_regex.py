"""Regular expressions in every CEL environment: Go's regexp semantics (RE2) and
Kubernetes' cost bound (issue 28). Outcomes only: timing belongs to bench/selectors.py."""

from __future__ import annotations

import pytest

from allot.api import resource_v1 as resourceapi
from allot.cel import DeviceView, EvaluationError, SelectorCompiler, regex
from allot.cel.cost import COST_LIMIT_EXCEEDED
from allot.cel.policy import PolicyCompiler


@pytest.mark.parametrize(
    ("pattern", "go_error"),
    [
        ("(a)\\1", "invalid escape sequence: `\\1`"),
        ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
        ("(?<=a)b", "invalid named capture: `(?<=a)b`"),
        ("(?<!a>)b", "invalid named capture: `(?<!a>`"),
        ("x++", "invalid nested repetition operator: `++`"),
        (")", "unexpected ): `)`"),
        ("(a", "missing closing ): `(a`"),
        ("[a", "missing closing ]: `[a`"),
        ("a{1001}", "invalid repeat count: `{1001}`"),
        ("\\C", "invalid escape sequence: `\\C`"),
    ],
)
def test_patterns_go_refuses_are_refused_with_gos_text(pattern: str, go_error: str) -> None:
    with pytest.raises(regex.RegexError) as caught:
        regex.compile_pattern(pattern)
    assert str(caught.value) == f"error parsing regexp: {go_error}"


def test_quoted_any_byte_escape_is_a_literal() -> None:
    assert regex.find("x\\Cy", "\\Q\\C\\E") == "\\C"


def test_find_all_follows_gos_find_all_string() -> None:
    assert regex.find_all("123 abc 456", "[0-9]*") == ["123", "", "", "", "", "456"]
    assert regex.find_all("123 abc 456", "[0-9]+", 1) == ["123"]
    assert regex.find_all("aé", "") == ["", "", ""]


def test_cost_is_kubernetes_strings_times_pattern() -> None:
    assert regex.call_cost(0, 4) == 1
    assert regex.call_cost(64, 6) == 7 * 2
    assert regex.call_cost(1_000_000, 400) == 100_001 * 100


BIG = "a" * 1_000_000
EXPENSIVE = "a" * 400  # 100,001 x 100 > 1,000,000


@pytest.mark.parametrize(
    "expression",
    [
        f"object.s.matches('{EXPENSIVE}')",
        f"object.s.matches('{EXPENSIVE}') || true",  # the abort is not absorbed
        f"object.s.find('{EXPENSIVE}') == '' && false",
        f"object.s.findAll('{EXPENSIVE}', 1) == []",
        f"matches(object.s, '{EXPENSIVE}')",
    ],
)
def test_admission_regex_past_the_cost_limit_fails_the_evaluation(expression: str) -> None:
    compiled = PolicyCompiler().compile(expression)
    with pytest.raises(EvaluationError) as caught:
        compiled.evaluate({"object": {"s": BIG}})
    assert str(caught.value) == COST_LIMIT_EXCEEDED


def test_admission_regex_within_the_cost_limit_runs() -> None:
    compiled = PolicyCompiler().compile("object.s.findAll('(a|aa)*b').size() == 0")
    assert compiled.evaluate({"object": {"s": BIG}}) is True


def test_each_evaluation_has_its_own_budget() -> None:
    compiled = PolicyCompiler().compile("object.s.find('" + "a" * 36 + "') != ''")
    for _ in range(5):  # 100,001 x 9 each: five together would pass the limit
        assert compiled.evaluate({"object": {"s": BIG}}) is True


def test_stored_selector_past_the_cost_limit_fails_at_run_time() -> None:
    pattern = "b" * 40_000  # 2 x 10,000 per call, 64 calls
    selector = SelectorCompiler().compile(
        f'lists.range(64).all(i, device.driver.find("{pattern}") == "")', stored=True
    )
    view = DeviceView("dra.example.com", resourceapi.Device(name="d"))
    with pytest.raises(EvaluationError) as caught:
        selector.matches(view)
    assert str(caught.value) == COST_LIMIT_EXCEEDED
