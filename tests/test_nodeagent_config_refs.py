"""The node agent's check of a pod's ConfigMap and Secret references, as the kubelet's
``makeEnvironmentVariables``: a missing object or key keeps the pod Pending with its
container waiting ``CreateContainerConfigError`` and a Warning ``Failed`` event, until a
ConfigMap or Secret event of its namespace wakes it and the reference resolves."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from allot.controllers import envsources
from allot.controllers.context import ControllerContext
from allot.controllers.envsources import ContainerConfigError
from allot.controllers.nodeagent import DevicePreparer, NodeAgent
from allot.controllers.runtimes import SimulatedRuntime, container_environment
from allot.store import WatchEvent
from allot.types import Obj


def _agent(context: ControllerContext, tmp_path: Path, **options: Any) -> NodeAgent:
    return NodeAgent(context, DevicePreparer(tmp_path / "cdi"), SimulatedRuntime(), **options)


def _pod(context: ControllerContext, container: Obj, namespace: str = "team") -> Obj:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace},
        "spec": {
            "nodeName": "node-a",
            "containers": [{"name": "c", "image": "busybox:1", **container}],
        },
    }
    return context.create("Pod", pod, "test")


def _key_ref(kind: str, name: str, key: str = "k", **extra: object) -> Obj:
    return {"name": "V", "valueFrom": {kind: {"name": name, "key": key, **extra}}}


def _state(context: ControllerContext, namespace: str = "team") -> tuple[str, Obj]:
    pod = context.get("Pod", namespace, "p")
    assert pod is not None
    statuses = pod["status"].get("containerStatuses") or [{"state": {}}]
    return pod["status"]["phase"], statuses[0]["state"]


def _warnings(context: ControllerContext) -> list[tuple[str, str, int]]:
    events = sorted(context.list("Event", "team"), key=lambda e: e["metadata"]["name"])
    return [(e["reason"], e["message"], e["count"]) for e in events if e["type"] == "Warning"]


def _object(kind: str, name: str, data: dict[str, str]) -> Obj:
    if kind == "Secret":
        data = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "team"},
            "data": data}  # fmt: skip


MISSING = [
    ("configmap", {"env": [_key_ref("configMapKeyRef", "nosuch")]}, 'configmap "nosuch" not found'),
    ("secret", {"env": [_key_ref("secretKeyRef", "x")]}, 'secret "x" not found'),
    (
        "envFrom configmap",
        {"envFrom": [{"configMapRef": {"name": "settings"}}]},
        'configmap "settings" not found',
    ),
    ("envFrom secret", {"envFrom": [{"secretRef": {"name": "creds"}}]}, 'secret "creds" not found'),
]


@pytest.mark.parametrize(("case", "container", "message"), MISSING, ids=[c[0] for c in MISSING])
def test_a_missing_object_keeps_the_container_waiting_with_the_kubelet_s_message(
    team_context: ControllerContext, tmp_path: Path, case: str, container: Obj, message: str
) -> None:
    agent = _agent(team_context, tmp_path)
    _pod(team_context, container)
    agent.reconcile(("pod", "team", "p"))
    phase, state = _state(team_context)
    assert phase == "Pending"
    assert state == {"waiting": {"reason": "CreateContainerConfigError", "message": message}}
    assert _warnings(team_context) == [("Failed", f"Error: {message}", 1)]
    agent.reconcile(("pod", "team", "p"))  # woken by its own status write: nothing new
    assert _warnings(team_context) == [("Failed", f"Error: {message}", 1)]


def test_the_pod_starts_once_its_config_map_and_key_appear(
    team_context: ControllerContext, tmp_path: Path
) -> None:
    context, agent = team_context, _agent(team_context, tmp_path)
    _pod(context, {"env": [_key_ref("configMapKeyRef", "nosuch")]})
    agent.reconcile(("pod", "team", "p"))
    created = context.create("ConfigMap", _object("ConfigMap", "nosuch", {"other": "1"}), "test")
    other_namespace = {**created, "metadata": {**created["metadata"], "namespace": "elsewhere"}}
    assert agent.keys_for(WatchEvent("ADDED", 1, "host", "configmaps", other_namespace)) == []
    woken = agent.keys_for(WatchEvent("ADDED", 1, "host", "configmaps", created))
    assert woken == [("pod", "team", "p")]
    agent.reconcile(woken[0])
    phase, state = _state(context)
    assert (phase, state["waiting"]["message"]) == (
        "Pending",
        "couldn't find key k in ConfigMap team/nosuch",
    )
    created["data"] = {"k": "v"}
    context.update("ConfigMap", created, "test")
    agent.reconcile(("pod", "team", "p"))
    phase, state = _state(context)
    assert phase == "Running"
    assert "running" in state
    reasons = [e["reason"] for e in context.list("Event", "team")]
    assert reasons.count("Failed") == 2
    assert "Started" in reasons
    assert agent.keys_for(WatchEvent("MODIFIED", 2, "host", "configmaps", created)) == []


def test_optional_references_are_skipped(team_context: ControllerContext, tmp_path: Path) -> None:
    container = {
        "env": [_key_ref("secretKeyRef", "x", optional=True)],
        "envFrom": [{"configMapRef": {"name": "settings", "optional": True}}],
    }
    _pod(team_context, container)
    _agent(team_context, tmp_path).reconcile(("pod", "team", "p"))
    assert _state(team_context)[0] == "Running"


def test_a_tenant_pod_s_twin_is_checked_against_the_twins_of_its_sources(
    team_context: ControllerContext, tmp_path: Path
) -> None:
    """A tenant pod's twin names the host twins of its ConfigMaps (``<name>.<namespace>``,
    made by the tenant sync): the agent checks them as any pod's references."""
    team_context.create("Namespace", {"metadata": {"name": "tenant-legal"}}, "test")
    agent = _agent(team_context, tmp_path)
    _pod(team_context, {"env": [_key_ref("configMapKeyRef", "app.default")]}, "tenant-legal")
    agent.reconcile(("pod", "tenant-legal", "p"))
    phase, state = _state(team_context, "tenant-legal")
    assert phase == "Pending"
    assert state["waiting"]["message"] == 'configmap "app.default" not found'
    twin = {"metadata": {"name": "app.default", "namespace": "tenant-legal"}, "data": {"k": "v"}}
    team_context.create("ConfigMap", twin, "test")
    agent.reconcile(("pod", "tenant-legal", "p"))
    assert _state(team_context, "tenant-legal")[0] == "Running"


def test_values_resolve_env_from_first_then_env_with_secrets_decoded() -> None:
    objects = {
        ("ConfigMap", "settings"): _object("ConfigMap", "settings", {"MODE": "fast", "K": "cm"}),
        ("Secret", "creds"): _object("Secret", "creds", {"token": "s3cr3t"}),
    }
    container = {
        "envFrom": [
            {"configMapRef": {"name": "settings"}},
            {"secretRef": {"name": "creds"}, "prefix": "DB_"},
        ],
        "env": [_key_ref("configMapKeyRef", "settings", "MODE") | {"name": "K"}],
    }
    pod = {"metadata": {"name": "p", "namespace": "team"}, "spec": {}}
    environment = container_environment(container, pod, {}, lambda k, n: objects.get((k, n)))
    assert environment == {"MODE": "fast", "K": "fast", "DB_token": "s3cr3t"}
    missing_key = {"env": [_key_ref("secretKeyRef", "creds", "password")]}
    with pytest.raises(
        ContainerConfigError, match=r"^couldn't find key password in Secret team/creds$"
    ):
        container_environment(missing_key, pod, {}, lambda k, n: objects.get((k, n)))


@pytest.mark.parametrize(
    ("container", "names"),
    [
        ({"name": "c", "env": [{"name": "A", "value": "1"}]}, False),
        (
            {"name": "c", "env": [{"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]},
            False,
        ),
        (
            {"name": "c", "env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "m"}}}]},
            True,
        ),
        ({"name": "c", "env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s"}}}]}, True),
        ({"name": "c", "envFrom": [{"configMapRef": {"name": "m"}}]}, True),
        ({"name": "c"}, False),
    ],
)
def test_only_containers_naming_a_configmap_or_secret_are_looked_up(
    container: dict[str, Any], names: bool
) -> None:
    assert envsources.names_sources(container) is names
