"""``kubectl create <kind>`` for the workload kinds: kubectl posts these objects as
protobuf, and the server decodes them into exactly what ``kubectl create -o json
--dry-run=client`` shows (the same object as JSON)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Cluster

CREATES = [
    ("deployment", "web", ["deployment", "web", "--image=busybox", "--replicas=2", "--port=80"]),
    ("job", "hello", ["job", "hello", "--image=busybox", "--", "echo", "hi"]),
    (
        "cronjob",
        "nightly",
        ["cronjob", "nightly", "--image=busybox", "--schedule=*/5 * * * *", "--", "date"],
    ),
    ("secret", "creds", ["secret", "generic", "creds", "--from-literal=user=ada"]),
    ("serviceaccount", "bot", ["serviceaccount", "bot"]),
    ("service", "front", ["service", "clusterip", "front", "--tcp=80:8080"]),
]
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def _without_server_fields(obj: dict[str, object]) -> dict[str, object]:
    metadata = dict(obj["metadata"])  # type: ignore[call-overload]
    for key in SERVER_FIELDS:
        metadata.pop(key, None)
    return {**obj, "metadata": metadata}


@pytest.mark.parametrize(("kind", "name", "args"), CREATES, ids=[c[0] for c in CREATES])
def test_kubectl_create_sends_protobuf_the_server_decodes(
    cluster: Cluster, kind: str, name: str, args: list[str]
) -> None:
    client = json.loads(cluster.kubectl("create", *_with(args, "--dry-run=client")).stdout)
    server = json.loads(cluster.kubectl("create", *_with(args, "--dry-run=server")).stdout)
    created = cluster.kubectl("create", *args)
    assert created.stdout.strip().endswith(f"{name} created")
    stored = cluster.get_json(kind, name)
    assert stored["metadata"]["name"] == name
    for field in ("spec", "data", "type"):
        if field in client:  # every field kubectl sent arrived (the server adds defaults)
            _assert_contains(server[field], client[field], field)
    cluster.kubectl("delete", kind, name)


def _with(args: list[str], dry_run: str) -> list[str]:
    """``args`` with a dry run and JSON output, before any ``--`` (the container's command)."""
    split = args.index("--") if "--" in args else len(args)
    return [*args[:split], dry_run, "-o", "json", *args[split:]]


def _assert_contains(actual: object, expected: object, path: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict), path
        for key, value in expected.items():
            if value in ({}, [], None) and key not in actual:
                continue  # empty values kubectl sends are omitted on the wire
            assert key in actual, f"{path}.{key} missing"
            _assert_contains(actual[key], value, f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list), path
        assert len(actual) == len(expected), path
        for index, (one, other) in enumerate(zip(actual, expected, strict=True)):
            _assert_contains(one, other, f"{path}[{index}]")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
