"""``/metrics`` renders the snapshot's families with ``allot.ops.metrics.exposition``: for
any gauge and counter families (label values with quotes, backslashes, newlines and any
Unicode; any float, infinities and NaN included) it writes exactly the bytes
``prometheus_client.generate_latest`` writes, and hands other families to it."""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from allot.ops.metrics import exposition

LABELS = ["tenant", "class", "node"]
values = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**12), 10**12)


@st.composite
def families(draw: st.DrawFn) -> list[Metric]:
    found: list[Metric] = []
    for index in range(draw(st.integers(0, 4))):
        labels = LABELS[: draw(st.integers(0, len(LABELS)))]
        documentation = draw(st.text(max_size=20))
        family: GaugeMetricFamily | CounterMetricFamily
        if draw(st.booleans()):
            family = GaugeMetricFamily(f"allot_test_{index}", documentation, labels=labels)
        else:
            family = CounterMetricFamily(f"allot_test_{index}", documentation, labels=labels)
        for _ in range(draw(st.integers(0, 4))):
            label_values = [draw(st.text(max_size=8)) for _ in labels]
            family.add_metric(label_values, draw(values))
        found.append(family)
    return found


class _Families(Collector):
    def __init__(self, found: list[Metric]) -> None:
        self.found = found

    def collect(self) -> Iterator[Metric]:
        yield from self.found


def _library(found: list[Metric]) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(found))
    return generate_latest(registry)


@settings(max_examples=300, deadline=None)
@given(families())
def test_the_text_is_what_prometheus_client_writes(found: list[Metric]) -> None:
    assert exposition(found) == _library(found)


def test_other_families_go_through_the_library() -> None:
    histogram = HistogramMetricFamily(
        "allot_test_seconds", "A histogram.", buckets=[("0.5", 2.0), ("+Inf", 3.0)], sum_value=1.2
    )
    gauge = GaugeMetricFamily("allot_test", 'Quoted "help"\nand a \\.', labels=["tenant"])
    gauge.add_metric(['a "b"\n\\c'], 2.5)
    found: list[Metric] = [gauge, histogram]
    assert exposition(found) == _library(found)
    assert b'allot_test{tenant="a \\"b\\"\\n\\\\c"} 2.5\n' in exposition(found)
    assert b"allot_test_seconds_bucket{le=" in exposition(found)
