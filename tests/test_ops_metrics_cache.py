"""``/metrics`` keeps what it derived from the store while the store says that nothing it
read changed (:meth:`allot.store.Store.changes`), and shows every change at the next
scrape: a claim allocated or released, a slice added, a class removed. The text it writes
from its kept sample heads is what ``prometheus_client`` writes for the same families."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from allot.driver.fleet import expand, parse_fleet
from allot.driver.publisher import device_classes, node_object
from allot.driver.slices import node_slices
from allot.ops.capacity import CapacityView, DeviceInfo, PoolInfo, SliceSummary, Snapshot
from allot.ops.metrics import MetricSources, PlatformMetrics
from allot.registry.inprocess import StoreReads
from allot.registry.resources import by_kind
from allot.store import Store

NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
FLEET = {"pools": [{"name": "h100", "nodes": 2, "gpu": "H100-80GB-HBM3", "gpusPerNode": 2,
                    "mig": {"dynamic": True}}]}  # fmt: skip
CLAIMS = by_kind("ResourceClaim").store
SLICES = by_kind("ResourceSlice").store
CLASSES = by_kind("DeviceClass").store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "state.db", durable=False)
    for document in device_classes():
        store.create("host", CLASSES, document)
    store.create(
        "host", by_kind("Namespace").store, {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": "tenant-vision"}},
    )  # fmt: skip
    for spec in expand(parse_fleet(FLEET)):
        node = store.create("host", by_kind("Node").store, node_object(spec))
        for document in node_slices(spec.name, node["metadata"]["uid"], spec.gpus,
                                    dynamic_mig=True):  # fmt: skip
            store.create("host", SLICES, document, owned=True)
    return store


def _metrics(store: Store) -> tuple[CapacityView, PlatformMetrics]:
    view = CapacityView(StoreReads(store))
    sources = MetricSources(lambda: view.snapshot(NOW), list, list, dict)
    return view, PlatformMetrics(sources)


def _samples(text: bytes, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text.decode())
        for sample in family.samples
        if sample.name == name
    }


def _claim(name: str, device: str | None, pool: str = "h100-1") -> dict[str, Any]:
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "tenant-vision"},
        "spec": {"devices": {"requests": [
            {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
    }  # fmt: skip
    if device is not None:
        result = {"request": "g", "driver": "gpu.nvidia.com", "pool": pool, "device": device}
        claim["status"] = {"allocation": {"devices": {"results": [result]}}}
    return claim


def test_the_store_counts_changes_per_collection(store: Store) -> None:
    before = store.changes("host", CLAIMS), store.changes("host", SLICES)
    created = store.create("host", CLAIMS, _claim("a", None))
    assert store.changes("host", CLAIMS) == before[0] + 1
    created["metadata"]["labels"] = {"x": "y"}
    store.update("host", CLAIMS, created)
    store.delete("host", CLAIMS, "tenant-vision", "a")
    assert store.changes("host", CLAIMS) == before[0] + 3
    assert store.changes("host", SLICES) == before[1]  # another collection: unchanged
    assert store.changes("tenant-x", CLAIMS) == 0  # another cluster


def test_an_idle_fleet_keeps_its_snapshot_and_its_text(store: Store) -> None:
    view, metrics = _metrics(store)
    first, text = view.snapshot(NOW), metrics.render()
    again = view.snapshot(NOW + dt.timedelta(seconds=30))
    assert again.version == first.version != ()
    assert again.summaries is first.summaries
    assert again.claims is first.claims
    assert again.now == NOW + dt.timedelta(seconds=30)
    assert metrics.render() == text


def test_every_change_shows_at_the_next_scrape(store: Store) -> None:
    view, metrics = _metrics(store)
    node = {("driver", "gpu.nvidia.com"), ("node", "h100-1"), ("pool", "h100-1")}

    def allocated() -> float:
        return _samples(metrics.render(), "allot_devices_allocated")[tuple(sorted(node))]

    assert allocated() == 0
    fleet_before = view.snapshot(NOW).summaries
    store.create("host", CLAIMS, _claim("a", "gpu-0"))
    assert allocated() == 1
    assert view.snapshot(NOW).summaries is fleet_before  # a claim leaves the fleet's part
    store.create("host", CLAIMS, _claim("b", "gpu-1"))
    assert allocated() == 2
    store.delete("host", CLAIMS, "tenant-vision", "a")
    assert allocated() == 1
    # a slice of a new pool: the fleet's part is made again
    extra = node_slices("h100-2", "uid", expand(parse_fleet(FLEET))[0].gpus, dynamic_mig=True)
    for document in extra:
        store.create("host", SLICES, document, owned=True)
    totals = _samples(metrics.render(), "allot_devices")
    assert {dict(k)["pool"] for k in totals} == {"h100-0", "h100-1", "h100-2"}
    # a class removed: no device counts in it any more
    store.delete("host", CLASSES, "", "mig.nvidia.com")
    per_class = _samples(metrics.render(), "allot_class_devices")
    assert {dict(k)["class"] for k in per_class} == {"gpu.nvidia.com"}


class _Families(Collector):
    def __init__(self, found: list[Metric]) -> None:
        self.found = found

    def collect(self) -> list[Metric]:
        return self.found


def test_the_row_families_are_what_prometheus_client_writes() -> None:
    """Label values that need escaping, classes selecting a device twice, a device of no
    class: the kept heads give the library's bytes."""
    odd = 'po"ol\\x\n'
    devices = {
        ("d", odd, "g0"): DeviceInfo("n1", "d", odd, "g0", ("a", "b"), 1, "gpu", "", "", ()),
        ("d", odd, "g1"): DeviceInfo("n1", "d", odd, "g1", (), 1, "gpu", "", "", ()),
    }
    summary = SliceSummary(
        list(devices.values()),
        {("set", "memory-slice-0"): 4, ("set", "cores"): 2},
        Counter({("n1", odd, "d", c): 1 for c in ("a", "b", "<none>")}),
        Counter({("n1", odd, "d"): 2}),
    )
    snapshot = Snapshot(
        NOW, devices, {}, {("d", odd, "set", "memory-slice-0"): 4, ("d", odd, "set", "cores"): 2},
        {}, [], [PoolInfo("d", odd, 1, 1, 1, "n1")], ["a", "b"], [summary],
    )  # fmt: skip
    text = PlatformMetrics(MetricSources(lambda: snapshot, list, list, dict)).render()
    expected: list[Metric] = []
    for name, labels, rows in (
        ("allot_devices", ["node", "pool", "driver"], [(["n1", odd, "d"], 2.0)]),
        ("allot_class_devices", ["node", "pool", "driver", "class"],
         [(["n1", odd, "d", "a"], 1.0), (["n1", odd, "d", "b"], 1.0)]),
        ("allot_counter_capacity", ["driver", "pool", "counter"],
         [(["d", odd, "cores"], 2.0), (["d", odd, "memory-slices"], 4.0)]),
    ):  # fmt: skip
        family = GaugeMetricFamily(name, "", labels=labels)
        for values, value in rows:
            family.add_metric(values, value)
        expected.append(family)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(expected))
    lines = generate_latest(registry).split(b"\n")
    library = [line for line in lines if line and not line.startswith(b"#")]
    assert len(library) == 5
    assert [line for line in text.split(b"\n") if line in library] == library
    assert list(text_string_to_metric_families(text.decode()))  # the whole text parses
