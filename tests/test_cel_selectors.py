"""The DRA selector environment, table-driven from ``tests/scenarios/cel-selectors.yaml``."""

from __future__ import annotations

from typing import Any

import pytest

from allot.api import resource_v1 as resourceapi
from allot.cel import CompileError, DeviceView, EvaluationError, SelectorCompiler
from tests.conftest import load_scenarios

SCENARIOS = load_scenarios("cel-selectors.yaml")
LONG_EXPRESSION = " && ".join(["true"] * 2100)
LONG_PATTERN = "a" * 9000


def _device_view(scenario: dict[str, Any]) -> DeviceView:
    device = resourceapi.Device.model_validate(
        {
            "name": "device-0",
            "attributes": scenario.get("attributes", {}),
            "capacity": scenario.get("capacity", {}),
            "allowMultipleAllocations": scenario.get("allowMultipleAllocations"),
        }
    )
    return DeviceView(scenario.get("driver", "dra.example.com"), device)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[str(s["name"]) for s in SCENARIOS])
def test_selector_scenario(scenario: dict[str, Any], compiler: SelectorCompiler) -> None:
    expression = scenario["expression"]
    if expression == "LONG":
        expression = LONG_EXPRESSION
    expression = expression.replace("LONGPATTERN", LONG_PATTERN)
    expect = scenario["expect"]
    if "compileError" in expect:
        with pytest.raises(CompileError) as caught:
            compiler.compile(expression)
        assert expect["compileError"] in caught.value.detail
        return
    selector = compiler.compile(expression)
    view = _device_view(scenario)
    if "matchError" in expect:
        with pytest.raises(EvaluationError) as failed:
            selector.matches(view)
        assert str(failed.value) == expect["matchError"]
    else:
        assert selector.matches(view) is expect["match"]


def test_compile_error_text_matches_kubernetes_layout(compiler: SelectorCompiler) -> None:
    expression = 'device.capacity["gpu.nvidia.com"].memory >= quantity("40Gi")'
    with pytest.raises(CompileError) as caught:
        compiler.compile(expression)
    assert caught.value.detail == (
        "compilation failed: ERROR: <input>:1:42: found no matching overload for '_>=_' "
        "applied to '(kubernetes.Quantity, kubernetes.Quantity)'\n"
        ' | device.capacity["gpu.nvidia.com"].memory >= quantity("40Gi")\n'
        " | .........................................^"
    )


def test_compiled_programs_are_cached_by_text(compiler: SelectorCompiler) -> None:
    first = compiler.compile('device.driver == "cache.example.com"')
    assert compiler.compile('device.driver == "cache.example.com"') is first


def test_results_are_reused_for_the_device_and_for_devices_reading_the_same(
    compiler: SelectorCompiler,
) -> None:
    selector = compiler.compile('device.attributes["dra.example.com"].n > 1')
    view = _device_view({"attributes": {"n": {"int": 2}}})
    assert selector.matches(view) is True

    class Exploding:
        def eval(self, activation: object) -> None:
            raise AssertionError("re-evaluated a known result")

    selector.program = Exploding()
    try:
        assert selector.matches(view) is True
        # another device whose n is also 2 (its other attributes differ): the same result
        twin = _device_view({"attributes": {"n": {"int": 2}, "uuid": {"string": "other"}}})
        assert selector.matches(twin) is True
        # a device whose n differs, or is an int where this one has a string: evaluated
        for attributes in ({"n": {"int": 3}}, {"n": {"string": "2"}}, {}):
            with pytest.raises(AssertionError):
                selector.matches(_device_view({"attributes": attributes}))
    finally:
        compiler._cache.clear()


def test_expressions_reading_more_than_single_values_run_per_device(
    compiler: SelectorCompiler,
) -> None:
    selector = compiler.compile('size(device.attributes["dra.example.com"]) == 1')
    assert selector.reads is None
    assert selector.matches(_device_view({"attributes": {"n": {"int": 2}}})) is True
    assert selector.matches(_device_view({"attributes": {"n": {"int": 2}, "m": {"int": 1}}})) is (
        False
    )


def test_runtime_errors_are_cached_too(compiler: SelectorCompiler) -> None:
    selector = compiler.compile('device.attributes["dra.example.com"].missing == 1')
    view = _device_view({})
    for _ in range(2):
        with pytest.raises(EvaluationError, match="no such key: missing"):
            selector.matches(view)


def test_stored_expressions_skip_the_validation_limits(compiler: SelectorCompiler) -> None:
    long_expression = " && ".join(["true"] * 2100)
    assert compiler.compile(long_expression, stored=True).matches(_device_view({})) is True


def test_literals_learned_later_pad_existing_views(compiler: SelectorCompiler) -> None:
    view = _device_view({})
    assert compiler.compile('!has(device.attributes["a.example.com"].x)').matches(view)
    later = compiler.compile('!has(device.attributes["b.example.com"].x)')
    assert later.matches(view) is True
