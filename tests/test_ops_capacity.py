"""What can still be allocated on a DynamicMIG fleet (tests/scenarios/dynamic-mig-capacity.yaml):
devices are unallocated while their shared counters are used up, and a 3g.40gb fits nowhere.
The claims are allocated by allot's allocator in a simulation; ``allot doctor``, the capacity
view, ``/metrics`` and the alert rules then read the same objects. The greedy count of
:mod:`allot.dra.allocatable` is checked against a brute-force maximum on the H100 layout."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from allot.api.core_v1 import Node
from allot.api.features import KUBERNETES_1_36
from allot.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from allot.cli.main import main as allot
from allot.dra import allocatable
from allot.dra.index import SliceEntry
from allot.driver.fleet import expand, parse_fleet
from allot.driver.publisher import device_classes, node_object
from allot.driver.slices import node_slices
from allot.ops import views
from allot.ops.capacity import CapacityView, Snapshot
from allot.ops.metrics import MetricSources, PlatformMetrics
from allot.ops.rules import AlertSettings, RuleInputs, evaluate
from allot.registry.inprocess import StoreReads
from allot.registry.resources import by_kind
from allot.simulation.runner import Simulation
from allot.simulation.scenario import Scenario, Step
from allot.store import Store

SCENARIO = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "dynamic-mig-capacity.yaml").read_text()
)
NOW = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)


def _claim(name: str, profile: str) -> dict[str, Any]:
    expression = f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"
    request = {
        "deviceClassName": "mig.nvidia.com",
        "selectors": [{"cel": {"expression": expression}}],
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
    }


def _fleet(fleet: dict[str, Any] = SCENARIO["fleet"]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = list(device_classes())
    for spec in expand(parse_fleet(fleet)):
        found.append(node_object(spec))
        for index, document in enumerate(node_slices(spec.name, f"uid-{spec.name}", spec.gpus,
                                                     dynamic_mig=spec.dynamic_mig)):  # fmt: skip
            document["metadata"]["name"] = f"{spec.name}-slice-{index}"
            found.append(document)
    return found


def simulation_of(fleet: list[dict[str, Any]], claims: list[dict[str, Any]]) -> Simulation:
    """allot's allocator over the fleet's classes, slices and nodes, with ``claims``."""
    return Simulation(
        Scenario(
            KUBERNETES_1_36,
            [DeviceClass.model_validate(o) for o in fleet if o["kind"] == "DeviceClass"],
            [ResourceSlice.model_validate(o) for o in fleet if o["kind"] == "ResourceSlice"],
            [ResourceClaim.model_validate(c) for c in claims],
            [Node.model_validate(o) for o in fleet if o["kind"] == "Node"],
        )
    )


def _allocated(
    fleet: list[dict[str, Any]], claims: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The scenario's claims (or ``claims``), allocated one after the other by allot's
    allocator (each on the first node where it fits, by name)."""
    if claims is None:
        claims = [_claim(c["name"], c["profile"]) for c in SCENARIO["claims"]]
    simulation = simulation_of(fleet, claims)
    for index, claim in enumerate(claims):
        label = f"default/{claim['metadata']['name']}"
        assert simulation.run_step(Step(index, label, [label])).success, label
    return [simulation.claims[f"default/{c['metadata']['name']}"].to_wire() for c in claims]


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    fleet = _fleet()
    return [*fleet, *_allocated(fleet)]


@pytest.fixture
def snapshot(objects: list[dict[str, Any]], tmp_path: Path) -> Snapshot:
    return snapshot_of(objects, tmp_path)


def snapshot_of(objects: list[dict[str, Any]], tmp_path: Path) -> Snapshot:
    """The capacity snapshot of a store holding ``objects``' classes, slices and claims."""
    store = Store(tmp_path / "capacity.db", durable=False)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    store.create("host", by_kind("Namespace").store, namespace)
    for obj in objects:
        if obj["kind"] in ("DeviceClass", "ResourceSlice", "ResourceClaim"):
            metadata = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
            store.create("host", by_kind(obj["kind"]).store, {**obj, "metadata": metadata})
    return CapacityView(StoreReads(store)).snapshot(NOW)


def test_doctor_counts_what_the_shared_counters_leave(
    objects: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    assert allot(["doctor", "--from-dump", str(path), "-o", "json"]) == 0
    capacity = json.loads(capsys.readouterr().out)["capacity"]
    classes = {row.pop("class"): row for row in capacity["classes"]}
    assert {name: classes[name] for name in SCENARIO["classes"]} == SCENARIO["classes"]
    profiles = {row.pop("profile"): row for row in capacity["profiles"]}
    assert profiles == SCENARIO["profiles"]
    assert list(profiles) == sorted(profiles, key=lambda p: (int(p[0]), p))  # smallest first
    (pool,) = capacity["pools"]
    assert {k: pool[k] for k in SCENARIO["pool"]} == SCENARIO["pool"]
    assert allot(["doctor", "--from-dump", str(path)]) == 0
    text = capsys.readouterr().out
    assert (
        "3g.40gb: 2 device(s), 0 allocated, 0 free, 2 unavailable; 0 can still be allocated" in text
    )
    assert (
        "mig.nvidia.com: 25 device(s), 3 allocated, 3 free, 19 unavailable; "
        "1 can still be allocated"
    ) in text


def test_doctor_explains_the_nodes_that_matter_first_and_accounts_for_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Six DynamicMIG nodes; the scenario's three 2g.20gb slices on each of the first five,
    so only the last (by name) can still take a 3g.40gb. A claim for three 3g.40gb fits
    nowhere: it is explained on that node first, and the five others are all named."""
    fleet = _fleet({"pools": [{**SCENARIO["fleet"]["pools"][0], "nodes": 6}]})
    held = [_claim(f"slice-{i}", "2g.20gb") for i in range(15)]
    big = _claim("three-big", "3g.40gb")
    big["spec"]["devices"]["requests"][0]["exactly"]["count"] = 3
    path = tmp_path / "dump.yaml"
    items = [*fleet, *_allocated(fleet, held), big]
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    assert allot(["doctor", "--from-dump", str(path), "-o", "json"]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["pendingClaims"]
    explained = [line.split(":")[0] for line in entry["explanation"].splitlines()
                 if line.startswith("node ")]  # fmt: skip
    assert explained == ["node h100-5", "node h100-0", "node h100-1"]
    assert "needs 3, 2 candidate(s)" in entry["explanation"].splitlines()[0]
    assert entry["otherNodes"] == [
        {
            "nodes": ["h100-2", "h100-3", "h100-4"],
            "capacity": [{"class": "mig.nvidia.com", **SCENARIO["classes"]["mig.nvidia.com"]}],
        }
    ]
    assert "more node(s)" not in entry["explanation"]
    assert entry["explanation"].endswith(
        "h100-2, h100-3, h100-4 (3 node(s)): mig.nvidia.com: 25 device(s), 3 allocated, "
        "3 free, 19 unavailable; 1 can still be allocated"
    )


def test_metrics_report_free_unavailable_and_allocatable(snapshot: Snapshot) -> None:
    metrics = PlatformMetrics(MetricSources(lambda: snapshot, list, list, dict))
    samples = {
        (s.name, s.labels.get("class") or s.labels.get("profile") or ""): s.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for s in family.samples
    }
    pool = SCENARIO["pool"]
    assert samples[("allot_devices", "")] == pool["devices"]
    assert samples[("allot_devices_free", "")] == pool["free"]
    assert samples[("allot_devices_unavailable", "")] == pool["unavailable"]
    for name, row in SCENARIO["classes"].items():
        assert samples[("allot_class_devices_free", name)] == row["free"], name
        assert samples[("allot_class_devices_unavailable", name)] == row["unavailable"], name
        assert samples[("allot_class_devices_allocatable", name)] == row["allocatable"], name
    for name, row in SCENARIO["profiles"].items():
        assert samples[("allot_partition_profile_devices", name)] == row["devices"], name
        assert samples[("allot_partition_profile_devices_allocatable", name)] == row["allocatable"]


def test_the_low_capacity_alert_counts_what_can_be_allocated(snapshot: Snapshot) -> None:
    """Three unallocated MIG placements remain, but only one can be allocated."""
    inputs = RuleInputs(snapshot, {}, [], {"h100-0"}, {}, lambda claim: "")
    fired = {f.subject_name: f.message for f in evaluate(inputs, AlertSettings(class_free_below=2))}
    assert fired["mig.nvidia.com"] == (
        "device class mig.nvidia.com can still allocate 1 device(s) of 25 (threshold 2)"
    )
    assert fired["gpu.nvidia.com"].startswith("device class gpu.nvidia.com can still allocate 0")


# ------------------------------------------------------------ the greedy count
_SLICES = [
    SliceEntry.of({**document, "metadata": {"name": f"slice-{index}"}})
    for index, document in enumerate(
        node_slices("n", "uid", expand(parse_fleet(SCENARIO["fleet"]))[0].gpus, dynamic_mig=True)
    )
]
COUNTERS = {key: value for entry in _SLICES for key, value in entry.counters.items()}


class _Device:
    def __init__(self, entry: SliceEntry, wire: dict[str, Any]) -> None:
        self.name = wire["name"]
        self.consumes = entry.consumes[self.name]
        self.profile = str((wire["attributes"].get("profile") or {}).get("string") or "")


DEVICES = [_Device(e, wire) for e in _SLICES for wire in e.raw["spec"].get("devices") or []]


def _most(group: list[_Device], left: dict[tuple[str, str], int]) -> int:
    """The largest subset of ``group`` whose consumption fits together (brute force)."""
    for size in range(len(group), 0, -1):
        for subset in itertools.combinations(group, size):
            if allocatable.fits(_Together(subset), left):
                return size
    return 0


class _Together:
    def __init__(self, devices: tuple[_Device, ...]) -> None:
        self.consumes = allocatable.merged(item for d in devices for item in d.consumes)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(range(len(DEVICES))), max_size=4, unique=True))
def test_one_at_a_time_finds_the_most_of_a_profile_that_fit(held: list[int]) -> None:
    taken: list[_Device] = []
    for index in held:  # allocate what fits, as the allocator would
        left = allocatable.left_over(COUNTERS, taken)
        if allocatable.fits(DEVICES[index], left):
            taken.append(DEVICES[index])
    left = allocatable.left_over(COUNTERS, taken)
    free = [d for d in DEVICES if d not in taken and allocatable.fits(d, left)]
    for profile in {d.profile for d in DEVICES if d.profile}:
        group = [d for d in free if d.profile == profile]
        count = allocatable.one_at_a_time(group, left)
        assert count == _most(group, left), (profile, [d.name for d in taken])
        assert count <= len(group)


def test_ages_read_as_kubectl_writes_them(snapshot: Snapshot) -> None:
    """A claim pending for 1,308 s is ``21m`` old, as ``kubectl get`` says it."""
    held = snapshot.claims[0]
    assert held.created is not None
    waiting = replace(held, name="waits", tenant_claim="waits", allocated=False, devices=[])
    later = replace(snapshot, now=held.created + dt.timedelta(seconds=1308), claims=[waiting])
    rows = views.pending(later, {})
    assert [(r["claim"], r["age"], r["ageSeconds"]) for r in rows] == [("waits", "21m", 1308)]
    assert views.claim_row(later, held)["age"] == "21m"
