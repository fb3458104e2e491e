"""Events recorded by the platform's controllers: named as client-go names them, so that
listing order is the order they happened in, and repeats counted on one Event."""

from __future__ import annotations

from allot.controllers import lifecycle
from allot.controllers.context import ControllerContext
from allot.controllers.lifecycle import NodeImages, pull_policy

REASONS = ["Scheduled", "Pulling", "Pulled", "Created", "Started", "QuotaReserved", "Pending"]


def test_events_of_one_second_list_in_the_order_they_happened(
    team_context: ControllerContext,
) -> None:
    context = team_context
    pod = {"kind": "Pod", "apiVersion": "v1",
           "metadata": {"name": "trainer", "namespace": "team", "uid": "u-1"}}  # fmt: skip
    for reason in REASONS:
        context.event(pod, "Normal", reason, f"{reason} happened", "test")
    context.event(pod, "Normal", "Pulled", "Pulled happened", "test")  # a repeat
    events = sorted(context.list("Event", "team"), key=lambda e: e["metadata"]["name"])
    assert [e["reason"] for e in events] == REASONS
    assert all(e["metadata"]["name"].startswith("trainer.") for e in events)
    assert [e["count"] for e in events] == [1, 1, 2, 1, 1, 1, 1]


def _started(
    context: ControllerContext, images: NodeImages, name: str, node: str, **spec: str
) -> list[str]:
    """Start a pod of one container on ``node``; its events' reasons, in order."""
    container = {"name": "c", "image": "python:3.12-slim", **spec}
    pod = {"kind": "Pod", "apiVersion": "v1",
           "metadata": {"name": name, "namespace": "team", "uid": f"u-{name}"},
           "spec": {"nodeName": node, "containers": [container]}}  # fmt: skip
    lifecycle.started_events(context, pod, images)
    events = [e for e in context.list("Event", "team") if e["involvedObject"]["name"] == name]
    return [e["reason"] for e in sorted(events, key=lambda e: e["metadata"]["name"])]


def test_an_image_is_pulled_once_per_node_unless_the_policy_says_always(
    team_context: ControllerContext,
) -> None:
    context, images = team_context, NodeImages()
    pulled = ["Pulling", "Pulled", "Created", "Started"]
    assert _started(context, images, "first", "node-a") == pulled
    assert _started(context, images, "again", "node-a") == ["Pulled", "Created", "Started"]
    present = next(
        e for e in context.list("Event", "team") if e["involvedObject"]["name"] == "again"
    )
    assert present["message"] == (
        'Container image "python:3.12-slim" already present on machine and can be '
        "accessed by the pod"
    )
    assert _started(context, images, "other-node", "node-b") == pulled
    assert _started(context, images, "always", "node-a", imagePullPolicy="Always") == pulled
    assert _started(context, images, "never", "node-c", imagePullPolicy="Never") == [
        "Pulled",
        "Created",
        "Started",
    ]


def test_the_default_pull_policy_is_upstreams() -> None:
    cases = {
        "python:3.12-slim": "IfNotPresent",
        "python": "Always",
        "python:latest": "Always",
        "registry.local:5000/team/trainer": "Always",
        "registry.local:5000/team/trainer:v2": "IfNotPresent",
        "python@sha256:" + "0" * 64: "IfNotPresent",
    }
    assert {image: pull_policy({"image": image}) for image in cases} == cases
    assert pull_policy({"image": "python", "imagePullPolicy": "Never"}) == "Never"
