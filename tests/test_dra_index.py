"""The DRA index fed event by event equals one computed from scratch (issue 15).

Random interleavings of creates, updates and deletes of slices, classes and claims (with
allocations, some with adminAccess results) are fed to a :class:`DraIndex` as watch
events; after every step its class verdicts, device memory and allocated devices must
equal a from-scratch computation over the same objects, and the :class:`Allocator` that
:class:`AllocatorFeed` updates in place must answer ``allocate`` exactly as one freshly
built from the same slices and classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allot.allocator import AllocatedState, AllocationError, Allocator
from allot.api import claims as claims_api
from allot.api import core_v1 as corev1
from allot.api import resource_v1 as resourceapi
from allot.cel import CelError, DeviceView, SelectorCompiler
from allot.dra import AllocatorFeed, DraIndex
from allot.dra.index import CLAIMS, CLASSES, SLICES

Obj = dict[str, Any]
DRIVER = "gpu.example.com"
NODES = ["n0", "n1"]
EXPRESSIONS = [
    f'device.attributes["{DRIVER}"].model == "a"',
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("20Gi")) >= 0',
    "true",
    f'device.attributes["{DRIVER}"].missing == "x"',  # fails at runtime: selects nothing
    "device.driver ==",  # does not compile: selects nothing
]


@dataclass(frozen=True)
class Event:
    type: str
    rv: int
    cluster: str
    resource: str
    object: Obj


def _slice(
    name: str, node: str | None, pool: str, generation: int, count: int, devices: Any
) -> Obj:
    spec: Obj = {
        "driver": DRIVER,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": [
            {
                "name": device,
                "attributes": {"model": {"string": model}},
                "capacity": {"memory": {"value": f"{memory}Gi"}},
            }
            for device, model, memory in devices
        ],
    }
    if node is None:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {"metadata": {"name": name}, "spec": spec}


slices = st.builds(
    _slice,
    st.sampled_from(["s0", "s1", "s2", "s3"]),
    st.sampled_from([*NODES, None]),
    st.sampled_from(["p0", "p1"]),
    st.sampled_from([1, 1, 2]),  # generation
    st.sampled_from([1, 1, 1, 2]),  # resourceSliceCount: mostly complete pools
    st.lists(
        st.tuples(
            st.sampled_from(["d0", "d1", "d2"]),
            st.sampled_from(["a", "b"]),
            st.sampled_from([10, 40]),
        ),
        max_size=3,
        unique_by=lambda d: d[0],
    ),
)
classes = st.builds(
    lambda name, expressions: {
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]},
    },
    st.sampled_from(["c0", "c1", "c2"]),
    st.lists(st.sampled_from(EXPRESSIONS), max_size=2),
)
allocated = st.lists(
    st.tuples(st.sampled_from(["p0", "p1"]), st.sampled_from(["d0", "d1", "d2"]), st.booleans()),
    max_size=2,
)
claims = st.builds(
    lambda name, device_class, results: {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "r", "exactly": {"deviceClassName": device_class, "count": 1}}
                ]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "r",
                            "driver": DRIVER,
                            "pool": pool,
                            "device": device,
                            **({"adminAccess": True} if admin else {}),
                        }
                        for pool, device, admin in results
                    ]
                }
            }
        }
        if results
        else {},
    },
    st.sampled_from(["k0", "k1", "k2"]),
    st.sampled_from(["c0", "c1", "c2"]),
    allocated,
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just(SLICES), st.booleans(), slices),
        st.tuples(st.just(CLASSES), st.booleans(), classes),
        st.tuples(st.just(CLAIMS), st.booleans(), claims),
    ),
    min_size=1,
    max_size=25,
)


def _scratch_selects(expressions: list[str], view: DeviceView, compiler: SelectorCompiler) -> bool:
    try:
        return all(compiler.compile(e, stored=True).matches(view) for e in expressions)
    except CelError:
        return False


def _check_index(index: DraIndex, store: dict[str, dict[str, Obj]]) -> None:
    compiler = SelectorCompiler()
    for class_name, device_class in store[CLASSES].items():
        expressions = [s["cel"]["expression"] for s in device_class["spec"]["selectors"]]
        for slice_name, raw in store[SLICES].items():
            model = resourceapi.ResourceSlice.model_validate(raw)
            expected = {
                d.name
                for d in model.spec.devices or []
                if _scratch_selects(expressions, DeviceView(DRIVER, d), compiler)
            }
            assert index.selected(class_name, slice_name) == expected
    memory = {
        (DRIVER, raw["spec"]["pool"]["name"], d["name"]): int(d["capacity"]["memory"]["value"][:-2])
        << 30
        for raw in store[SLICES].values()
        for d in raw["spec"]["devices"]
    }
    assert index.device_memory() == memory
    state = AllocatedState()
    for key, claim in store[CLAIMS].items():
        entry = index.claims[key]
        assert entry.classes == tuple(claims_api.claim_classes(claim))
        assert entry.devices == claims_api.allocated_devices(claim)
        allocation = claim["status"].get("allocation")
        if allocation:
            state.add_allocation(key, resourceapi.AllocationResult.model_validate(allocation))
    assert set(index.claims) == set(store[CLAIMS])
    assert index.allocated_state().allocated_devices == state.allocated_devices


def _answer(allocator: Allocator, node: corev1.Node, claim: Obj, state: AllocatedState) -> Any:
    model = resourceapi.ResourceClaim.model_validate(claim)
    try:
        return allocator.allocate(node, [model], state)
    except AllocationError as err:
        return type(err), str(err)


def _check_allocator(
    feed: AllocatorFeed, index: DraIndex, store: dict[str, dict[str, Obj]]
) -> None:
    fresh = Allocator(
        [resourceapi.ResourceSlice.model_validate(s) for s in store[SLICES].values()],
        [resourceapi.DeviceClass.model_validate(c) for c in store[CLASSES].values()],
    )
    updated = feed.allocator()
    state = index.allocated_state()
    for node_name in NODES:
        node = corev1.Node.model_validate({"metadata": {"name": node_name}})
        assert updated.node_pools(node).device_ids == fresh.node_pools(node).device_ids
        for count in (1, 2):
            for device_class in ("c0", "c1", "c2"):
                claim = {
                    "metadata": {"name": "probe", "namespace": "ns", "uid": "u"},
                    "spec": {
                        "devices": {
                            "requests": [
                                {
                                    "name": "r",
                                    "exactly": {"deviceClassName": device_class, "count": count},
                                }
                            ]
                        }
                    },
                }
                assert _answer(updated, node, claim, state) == _answer(fresh, node, claim, state)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_index_fed_by_events_equals_scratch(ops: list[tuple[str, bool, Obj]]) -> None:
    index = DraIndex("host")
    feed = AllocatorFeed(index)
    store: dict[str, dict[str, Obj]] = {SLICES: {}, CLASSES: {}, CLAIMS: {}}
    feed.allocator()  # built once, then only updated
    for rv, (resource, delete, obj) in enumerate(ops, start=1):
        metadata = obj["metadata"]
        key = metadata["name"] if resource != CLAIMS else f"ns/{metadata['name']}"
        known = store[resource]
        if delete and key in known:
            gone = known.pop(key)
            index.observe(Event("DELETED", rv, "host", resource, gone))
        elif not delete:
            obj = {**obj, "metadata": {**metadata, "resourceVersion": str(rv)}}
            kind = "MODIFIED" if key in known else "ADDED"
            known[key] = obj
            index.observe(Event(kind, rv, "host", resource, obj))
        index.observe(Event("ADDED", rv, "tenant", resource, obj))  # another cluster: ignored
        _check_index(index, store)
        _check_allocator(feed, index, store)


def test_unchanged_resource_version_keeps_the_entry() -> None:
    index = DraIndex()
    raw = _slice("s0", "n0", "p0", 1, 1, [("d0", "a", 10)])
    raw["metadata"]["resourceVersion"] = "7"
    assert index.put_slice(raw)
    entry = index.slices["s0"]
    assert not index.put_slice({**raw})
    assert index.slices["s0"] is entry


def test_a_freed_allocation_is_reported_with_its_event() -> None:
    index = DraIndex()
    claim: Obj = {"metadata": {"name": "k0", "namespace": "ns"}, "spec": {}}
    claim["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "r", "driver": DRIVER, "pool": "p0", "device": "d0"}]
            }
        }
    }
    index.observe(Event("ADDED", 1, "host", CLAIMS, claim))
    assert index.freed_rv == -1
    assert index.allocated_state().allocated_devices == {(DRIVER, "p0", "d0")}
    index.observe(Event("MODIFIED", 2, "host", CLAIMS, {**claim, "status": {}}))
    assert index.freed_rv == 2
    assert index.allocated_state().allocated_devices == set()
