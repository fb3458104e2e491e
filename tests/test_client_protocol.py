"""The client protocol behaves alike on both engines (tests/engines.py): reads, writes,
patches, server-side apply, subresources, the errors' classes and texts, watching through
the dispatcher, and the Event recorder's correlation of repeats."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from allot.client import errors
from allot.client.protocol import WatchEvent
from tests.engines import Engine

pytestmark = [
    pytest.mark.slow,
    # allot's two implementations: these hold the embedded server's texts and a quiet
    # cluster (no kubelet writing the pod meanwhile), which real Kubernetes is not
    pytest.mark.parametrize("engine", ["inprocess", "remote"], indirect=True),
]
MANAGER = "protocol-test"
NS = "team"


def _run(engine: Engine, body: Callable[[Engine], Awaitable[None]]) -> None:
    async def main() -> None:
        await engine.start()
        try:
            await body(engine)
        finally:
            await engine.stop()

    asyncio.run(main())


def _namespace(engine: Engine) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    engine.client.create(namespace, field_manager=MANAGER)


def _config(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NS}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def test_reads_writes_and_their_errors(engine: Engine) -> None:
    client = engine.client

    async def body(engine: Engine) -> None:
        _namespace(engine)
        created = client.create(_config("a", {"tier": "gold"}, k="1"), field_manager=MANAGER)
        client.create(_config("b", {"tier": "iron"}, k="2"), field_manager=MANAGER)
        assert created["metadata"]["uid"]
        copy = client.get("ConfigMap", NS, "a")
        assert copy is not None
        assert copy["data"] == {"k": "1"}
        copy["data"]["k"] = "changed"  # a copy: the cached object is untouched
        assert (client.peek("ConfigMap", NS, "a") or {})["data"] == {"k": "1"}
        assert client.get("ConfigMap", NS, "missing") is None
        gold = client.list("ConfigMap", NS, label_selector="tier=gold")
        assert [c["metadata"]["name"] for c in gold] == ["a"]
        named = client.list("ConfigMap", NS, field_selector="metadata.name=b")
        assert [c["metadata"]["name"] for c in named] == ["b"]
        with pytest.raises(errors.AlreadyExists) as exists:
            client.create(_config("a"), field_manager=MANAGER)
        assert exists.value.message == 'configmaps "a" already exists'
        updated = client.update({**created, "data": {"k": "3"}}, field_manager=MANAGER)
        with pytest.raises(errors.Conflict) as stale:
            client.update({**created, "data": {"k": "4"}}, field_manager=MANAGER)
        assert "the object has been modified" in stale.value.message
        assert updated["data"] == {"k": "3"}
        merged = client.patch("ConfigMap", NS, "a", {"data": {"m": "x"}}, field_manager=MANAGER)
        assert merged["data"] == {"k": "3", "m": "x"}
        patched = client.patch(
            "ConfigMap",
            NS,
            "a",
            [{"op": "remove", "path": "/data/m"}],
            field_manager=MANAGER,
            patch_type="json",
        )
        assert patched["data"] == {"k": "3"}
        client.delete("ConfigMap", NS, "b", options={"preconditions": {"uid": "not-its-uid"}})

    with pytest.raises(errors.Conflict) as refused:
        _run(engine, body)
    assert "Precondition failed: UID in precondition: not-its-uid" in refused.value.message


def test_delete_and_not_found(engine: Engine) -> None:
    client = engine.client

    async def body(engine: Engine) -> None:
        _namespace(engine)
        client.create(_config("a"), field_manager=MANAGER)
        client.delete("ConfigMap", NS, "a")
        with pytest.raises(errors.NotFound) as gone:
            client.delete("ConfigMap", NS, "a")
        assert gone.value.message == 'configmaps "a" not found'
        assert gone.value.status["code"] == 404

    _run(engine, body)


def test_server_side_apply_conflicts_and_force(engine: Engine) -> None:
    client = engine.client

    async def body(engine: Engine) -> None:
        _namespace(engine)
        client.apply(_config("a", k="1"), field_manager="first")
        with pytest.raises(errors.Conflict) as conflict:
            client.apply(_config("a", k="2"), field_manager="second")
        assert conflict.value.message.startswith("Apply failed with 1 conflict")
        forced = client.apply(_config("a", k="2"), field_manager="second", force=True)
        assert forced["data"] == {"k": "2"}
        managers = {e["manager"] for e in forced["metadata"]["managedFields"]}
        assert "second" in managers

    _run(engine, body)


def test_invalid_objects_carry_their_causes(engine: Engine) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": NS},
        "spec": {"devices": {"requests": [{"name": "Bad_Name", "exactly": {}}]}},
    }

    async def body(engine: Engine) -> None:
        _namespace(engine)
        with pytest.raises(errors.Invalid) as invalid:
            engine.client.create(claim, field_manager=MANAGER)
        fields = {cause.get("field") for cause in invalid.value.causes}
        assert "spec.devices.requests[0].name" in fields
        assert invalid.value.message.startswith('ResourceClaim.resource.k8s.io "c" is invalid')

    _run(engine, body)


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def test_status_binding_eviction_and_scale(engine: Engine) -> None:
    client = engine.client

    async def body(engine: Engine) -> None:
        _namespace(engine)
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}
        client.create(node, field_manager=MANAGER)
        pod = client.create(_pod("p"), field_manager=MANAGER)
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "p", "namespace": NS},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
        }
        client.create_subresource("Pod", NS, "p", "binding", binding)
        bound = client.get("Pod", NS, "p")
        assert bound is not None
        assert bound["spec"]["nodeName"] == "node-1"
        bound["status"] = {**bound.get("status", {}), "phase": "Running"}
        running = client.update(bound, field_manager=MANAGER, subresource="status")
        assert running["status"]["phase"] == "Running"
        assert running["metadata"]["uid"] == pod["metadata"]["uid"]
        client.create(_pod("q"), field_manager=MANAGER)
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "q", "namespace": NS},
        }
        client.create_subresource("Pod", NS, "q", "eviction", eviction)
        assert client.get("Pod", NS, "q") is None
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": NS},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                },
            },
        }
        client.create(deployment, field_manager=MANAGER)
        scale = client.get_subresource("Deployment", NS, "d", "scale")
        assert (scale["kind"], scale["spec"]["replicas"]) == ("Scale", 1)
        client.patch(
            "Deployment", NS, "d", {"spec": {"replicas": 3}}, field_manager=MANAGER,
            subresource="scale",
        )  # fmt: skip
        assert (client.get("Deployment", NS, "d") or {})["spec"]["replicas"] == 3

    _run(engine, body)


def test_changes_reach_subscribers_in_order_with_the_object_before(engine: Engine) -> None:
    client = engine.client
    seen: list[tuple[str, str, str | None]] = []

    def handler(event: WatchEvent) -> None:
        data = (event.object.get("data") or {}).get("k", "")
        before = (event.previous.get("data") or {}).get("k") if event.previous else None
        seen.append((event.type, data, before))

    client.inform("ConfigMap")
    client.dispatcher.subscribe("test", handler, resources=["configmaps"])

    async def body(engine: Engine) -> None:
        _namespace(engine)
        created = client.create(_config("a", k="1"), field_manager=MANAGER)
        client.update({**created, "data": {"k": "2"}}, field_manager=MANAGER)
        client.delete("ConfigMap", NS, "a")
        await engine.until(lambda: len(seen) >= 3, "three changes dispatched")

    _run(engine, body)
    assert seen == [("ADDED", "1", None), ("MODIFIED", "2", "1"), ("DELETED", "2", "2")]


def test_identical_events_are_counted_on_one(engine: Engine) -> None:
    client = engine.client

    async def body(engine: Engine) -> None:
        _namespace(engine)
        pod = client.create(_pod("p"), field_manager=MANAGER)
        recorder = client.events()
        recorder.record(pod, "Warning", "Failed", "it broke", "tester")
        recorder.record(pod, "Warning", "Failed", "it broke", "tester")
        recorder.record(pod, "Warning", "Failed", "it broke again", "tester")
        events = sorted(client.list("Event", NS), key=lambda e: e["metadata"]["name"])
        assert [(e["message"], e["count"]) for e in events] == [
            ("it broke", 2),
            ("it broke again", 1),
        ]
        assert all(e["metadata"]["name"].startswith("p.") for e in events)

    _run(engine, body)
