"""Selector results shared between devices that read the same values (``allot.cel``).

A compiled selector that reads only single values of ``device`` (``device.driver``, an
attribute or capacity entry named by literals) runs once per distinct set of those values.
These tests pin down which expressions qualify, and check with hypothesis that sharing
never changes an answer: every device gets what a compiler of its own would give it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.api import resource_v1 as resourceapi
from allot.cel import DeviceView, EvaluationError, SelectorCompiler, source

DOMAIN = "dra.example.com"

READS: list[tuple[str, tuple[tuple[str, ...], ...] | None]] = [
    ("true", ()),
    ('device.driver == "dra.example.com"', (("driver",),)),
    ("device.allowMultipleAllocations", (("allowMultipleAllocations",),)),
    ('device.attributes["d.io"].model == "x"', (("attributes", "d.io", "model"),)),
    ("device.attributes['d.io']['model'] == 'x'", (("attributes", "d.io", "model"),)),
    (
        'device.capacity["d.io"].memory.compareTo(quantity("1Gi")) >= 0 && '
        'device.capacity["d.io"].memory.isLessThan(quantity("2Gi"))',
        (("capacity", "d.io", "memory"),),
    ),
    ('has(device.attributes["d.io"].model)', (("attributes", "d.io", "model"),)),
    (
        'device.driver == "a" || device.attributes["d.io"].v.isGreaterThan(semver("1.0.0"))',
        (("driver",), ("attributes", "d.io", "v")),
    ),
    ('"x" in device.attributes["d.io"]', None),
    ('size(device.attributes["d.io"]) > 0', None),
    ('device.attributes["d.io"].exists(k, k == "model")', None),
    ('device.attributes.exists(d, d == "d.io")', None),
    ('device.attributes[?"d.io"].hasValue()', None),
    ('device.attributes["d.io"].?model.hasValue()', None),
    ('device.attributes["d" + ".io"].model == "x"', None),
    ('device.attributes["d\\x2eio"].model == "x"', None),
    ("[1, 2].exists(device, device > 1)", None),
]


@pytest.mark.parametrize(("expression", "reads"), READS, ids=[r[0] for r in READS])
def test_what_an_expression_reads_from_the_device(
    expression: str, reads: tuple[tuple[str, ...], ...] | None
) -> None:
    assert source.device_reads(expression, source.tokenize(expression)) == reads


EXPRESSIONS = [
    'device.driver == "dra.example.com"',
    "device.allowMultipleAllocations",
    f'device.attributes["{DOMAIN}"].model == "h100"',
    f'device.attributes["{DOMAIN}"]["count"] > 2',
    f'device.attributes["{DOMAIN}"].count == 1',  # a bool 1 is not the int 1
    f'has(device.attributes["{DOMAIN}"].model)',
    f'device.attributes["{DOMAIN}"].version.isGreaterThan(semver("1.5.0"))',
    f'device.capacity["{DOMAIN}"].memory.compareTo(quantity("40Gi")) >= 0',
    f'device.capacity["{DOMAIN}"].memory == quantity("40960Mi")',
    'device.attributes["other.io"].model == "h100"',
    'device.attributes["other.io"].missing == "h100"',
    f'size(device.attributes["{DOMAIN}"]) > 2',
    f'"uuid" in device.attributes["{DOMAIN}"]',
]

attribute_values = st.one_of(
    st.sampled_from(["h100", "a100"]).map(lambda v: {"string": v}),
    st.integers(0, 3).map(lambda v: {"int": v}),
    st.booleans().map(lambda v: {"bool": v}),
    st.sampled_from(["1.0.0", "2.1.0", "1.5.0"]).map(lambda v: {"version": v}),
)
devices = st.fixed_dictionaries(
    {
        "driver": st.sampled_from([DOMAIN, "other.io"]),
        "shared": st.booleans(),
        "attributes": st.dictionaries(
            st.sampled_from(["model", "count", "version", "other.io/model", "uuid"]),
            attribute_values,
            max_size=4,
        ),
        "memory": st.sampled_from([None, "40Gi", "40960Mi", "80Gi", "1"]),
    }
)


def _view(spec: dict[str, Any], index: int) -> DeviceView:
    wire: dict[str, Any] = {"name": f"device-{index}", "attributes": spec["attributes"]}
    if spec["shared"]:
        wire["allowMultipleAllocations"] = True
    if spec["memory"] is not None:
        wire["capacity"] = {"memory": {"value": spec["memory"]}}
    return DeviceView(spec["driver"], resourceapi.Device.model_validate(wire))


def _outcome(compiler: SelectorCompiler, expression: str, view: DeviceView) -> object:
    try:
        return compiler.compile(expression).matches(view)
    except EvaluationError as err:
        return f"error: {err}"


@settings(max_examples=60, deadline=None)
@given(st.lists(devices, min_size=1, max_size=8))
def test_sharing_results_never_changes_an_answer(specs: list[dict[str, Any]]) -> None:
    shared = SelectorCompiler()
    for index, spec in enumerate(specs):
        for expression in EXPRESSIONS:
            alone = SelectorCompiler()  # nothing to share with
            expected = _outcome(alone, expression, _view(spec, index))
            assert _outcome(shared, expression, _view(spec, index)) == expected, expression


@pytest.mark.parametrize(
    ("first", "second", "expression"),
    [
        ({"count": {"bool": True}}, {"count": {"int": 1}}, "count == 1"),
        ({"count": {"int": 1}}, {"count": {"bool": True}}, "count == true"),
        ({"count": {"int": 1}}, {"count": {"string": "1"}}, 'count == "1"'),
        ({"v": {"version": "1.5.0"}}, {"v": {"string": "1.5.0"}}, 'v == "1.5.0"'),
        ({}, {"other.io/x": {"int": 1}}, "x == 1"),
    ],
)
def test_values_that_cel_tells_apart_are_not_shared(
    first: dict[str, Any], second: dict[str, Any], expression: str
) -> None:
    compiler = SelectorCompiler()
    text = f'device.attributes["{DOMAIN}"].{expression}'
    for index, attributes in enumerate([first, second]):
        spec = {"driver": DOMAIN, "shared": False, "memory": None, "attributes": attributes}
        expected = _outcome(SelectorCompiler(), text, _view(spec, index))
        assert _outcome(compiler, text, _view(spec, index)) == expected


def test_equal_values_are_evaluated_once_and_kept_within_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiler = SelectorCompiler()
    selector = compiler.compile(f'device.attributes["{DOMAIN}"].model == "h100"')
    views = [
        _view({"driver": DOMAIN, "shared": False, "memory": None, "attributes": attributes}, i)
        for i, attributes in enumerate(
            [{"model": {"string": "h100"}, "uuid": {"string": f"GPU-{i}"}} for i in range(5)]
        )
    ]
    evaluated: list[DeviceView] = []
    real = selector._evaluate

    def counting(view: DeviceView) -> bool | EvaluationError:
        evaluated.append(view)
        return real(view)

    monkeypatch.setattr(selector, "_evaluate", counting)
    assert all(selector.matches(view) for view in views)
    assert evaluated == views[:1]
    monkeypatch.setattr("allot.cel.compiler.MAX_SHARED_RESULTS", 1)
    other = _view({"driver": DOMAIN, "shared": False, "memory": None, "attributes": {}}, 9)
    with pytest.raises(EvaluationError, match="no such key: model"):
        selector.matches(other)
    assert len(selector._by_inputs) == 1  # the full table was dropped before this entry
