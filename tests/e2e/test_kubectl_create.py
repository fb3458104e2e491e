"""``kubectl create <kind>`` for the workload and RBAC kinds and budgets: kubectl posts
these objects as protobuf, and the server decodes them into exactly what ``kubectl create
-o json --dry-run=client`` shows (the same object as JSON)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

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
    ("service", "edge", ["service", "nodeport", "edge", "--tcp=80:8080"]),
    ("service", "lb", ["service", "loadbalancer", "lb", "--tcp=443:8443"]),
    ("service", "away", ["service", "externalname", "away", "--external-name=example.com"]),
    (
        "resourcequota",
        "q",
        ["quota", "q", "--hard=pods=2,requests.cpu=500m", "--scopes=NotBestEffort"],
    ),
    ("configmap", "settings", ["configmap", "settings", "--from-literal=mode=fast"]),
    ("namespace", "team-b", ["namespace", "team-b"]),
    (
        "secret",
        "pull",
        [
            "secret",
            "docker-registry",
            "pull",
            "--docker-server=r.example",
            "--docker-username=u",
            "--docker-password=p",
        ],
    ),
    ("role", "reader", ["role", "reader", "--verb=get,list", "--resource=pods,deployments.apps"]),
    (
        "rolebinding",
        "read",
        ["rolebinding", "read", "--role=reader", "--user=ada", "--serviceaccount=default:bot"],
    ),
    ("clusterrole", "metrics", ["clusterrole", "metrics", "--verb=get", "--non-resource-url=/x"]),
    (
        "clusterrolebinding",
        "metrics",
        ["clusterrolebinding", "metrics", "--clusterrole=metrics", "--group=ops"],
    ),
    ("pdb", "web", ["pdb", "web", "--selector=app=web", "--min-available=50%"]),
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
    for field in ("spec", "data", "type", "rules", "roleRef", "subjects"):
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


def test_a_binary_file_keeps_its_bytes_in_binary_data(cluster: Cluster, tmp_path: Path) -> None:
    """``create configmap --from-file``: a file that is not UTF-8 goes to ``binaryData``."""
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\xff\x00\x01")
    (tmp_path / "note.txt").write_text("hello\n")
    cluster.kubectl(
        "create", "configmap", "files", f"--from-file={blob}", f"--from-file={tmp_path}/note.txt"
    )
    stored = cluster.get_json("configmap", "files")
    assert stored["binaryData"] == {"blob.bin": base64.b64encode(b"\xff\x00\x01").decode()}
    assert stored["data"] == {"note.txt": "hello\n"}
    cluster.kubectl("delete", "configmap", "files")


def test_a_quota_made_by_kubectl_create_quota_is_enforced(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "team-a")
    created = cluster.kubectl("create", "quota", "q", "--hard=pods=1", "-n", "team-a")
    assert created.stdout.strip() == "resourcequota/q created"
    assert cluster.get_json("resourcequota", "q", "-n", "team-a")["spec"]["hard"] == {"pods": "1"}
    cluster.kubectl("run", "one", "--image=busybox", "-n", "team-a")
    refused = cluster.kubectl("run", "two", "--image=busybox", "-n", "team-a", check=False)
    assert "exceeded quota: q" in refused.stderr
    cluster.kubectl("delete", "namespace", "team-a")


def test_a_job_from_a_cron_job(cluster: Cluster) -> None:
    cluster.kubectl("create", "cronjob", "tick", "--image=busybox", "--schedule=@hourly")
    cluster.kubectl("create", "job", "tick-now", "--from=cronjob/tick")
    job = cluster.get_json("job", "tick-now")
    assert job["metadata"]["ownerReferences"][0]["name"] == "tick"
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    cluster.kubectl("delete", "cronjob", "tick")
