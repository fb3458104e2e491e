"""Protobuf bodies of the workload kinds (what ``kubectl create deployment|job|secret...``
posts) decode into the JSON kubectl would have sent."""

from __future__ import annotations

import pytest

from allot.apiserver.protobuf import MAGIC, ProtobufError, decode


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = b""
    while True:
        byte, value = value & 0x7F, value >> 7
        out += bytes([byte | (0x80 if value else 0)])
        if not value:
            return out


def field(number: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field(1, api_version) + field(2, kind)
    return MAGIC + field(1, type_meta) + field(2, raw)


def metadata(name: str, **labels: str) -> bytes:
    entries = b"".join(field(11, field(1, k) + field(2, v)) for k, v in labels.items())
    zero_time = field(8, b"")
    return field(1, name) + field(3, "") + zero_time + entries


def test_a_deployment_decodes_with_its_template_and_explicit_zero_replicas() -> None:
    container = field(1, "web") + field(2, "nginx") + field(6, field(3, 80)) + field(8, b"")
    pod_spec = field(2, container)
    template = field(1, metadata("", app="web")) + field(2, pod_spec)
    selector = field(1, field(1, "app") + field(2, "web"))
    rolling = field(1, field(1, 1) + field(3, "50%")) + field(2, field(1, 0) + field(2, 2))
    spec = (
        field(1, 0)
        + field(2, selector)
        + field(3, template)
        + field(4, field(1, "RollingUpdate") + field(2, rolling))
        + field(5, 0)
    )
    body = envelope("apps/v1", "Deployment", field(1, metadata("web", app="web")) + field(2, spec))
    assert decode(body) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx",
                            "ports": [{"containerPort": 80}],
                            "resources": {},
                        }
                    ]
                },
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "50%", "maxSurge": 2},
            },
        },
    }


def test_a_pod_decodes_as_kubectl_debug_sends_it() -> None:
    """``kubectl debug node/n -it --image busybox`` posts its Pod as protobuf (it used
    to answer 415 UnsupportedMediaType); a status (field 3) is not read."""
    container = field(1, "debugger") + field(2, "busybox") + field(16, 1) + field(18, 1)
    spec = field(2, container) + field(10, "node-a") + field(11, 1) + field(3, "Never")
    status = field(1, "Running")
    body = envelope("v1", "Pod", field(1, metadata("dbg")) + field(2, spec) + field(3, status))
    assert decode(body) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "dbg"},
        "spec": {
            "containers": [{"name": "debugger", "image": "busybox", "stdin": True, "tty": True}],
            "nodeName": "node-a",
            "hostNetwork": True,
            "restartPolicy": "Never",
        },
    }


def test_a_secret_s_bytes_become_base64_and_negative_numbers_stay_negative() -> None:
    data = field(2, field(1, "token") + field(2, b"s3cr3t\x00"))
    secret = envelope("v1", "Secret", field(1, metadata("s")) + data + field(3, "Opaque"))
    assert decode(secret)["data"] == {"token": "czNjcjN0AA=="}
    job_spec = field(1, -1) + field(7, 6)
    job = envelope("batch/v1", "Job", field(1, metadata("j")) + field(2, job_spec))
    assert decode(job)["spec"] == {"parallelism": -1, "backoffLimit": 6}


def test_a_wrong_wire_type_is_the_client_s_error() -> None:
    bad = envelope("v1", "ServiceAccount", field(1, 7))  # metadata as a number
    with pytest.raises(ProtobufError, match="wrong wireType"):
        decode(bad)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", {}),
        (field(1, 0), {"gracePeriodSeconds": 0}),  # "now": an explicit 0 is kept
        (
            field(1, 30) + field(4, "Foreground"),
            {"gracePeriodSeconds": 30, "propagationPolicy": "Foreground"},
        ),
        (field(3, 0), {"orphanDependents": False}),
        (
            field(2, field(1, "uid-1") + field(2, "42")) + field(5, "All"),
            {"preconditions": {"uid": "uid-1", "resourceVersion": "42"}, "dryRun": ["All"]},
        ),
        (field(6, 1), {"ignoreStoreReadErrorWithClusterBreakingPotential": True}),
    ],
)
def test_delete_options_decode_with_their_explicit_zeros(
    raw: bytes, expected: dict[str, object]
) -> None:
    """kubectl's DELETE bodies: meta/v1 DeleteOptions, no ObjectMeta of their own."""
    body = envelope("meta.k8s.io/v1", "DeleteOptions", raw)
    assert decode(body) == {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", **expected}


def test_an_eviction_carries_its_pod_s_name_and_delete_options() -> None:
    meta = field(1, "evictme") + field(3, "default")
    body = envelope("policy/v1", "Eviction", field(1, meta) + field(2, field(1, 0)))
    assert decode(body) == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "evictme", "namespace": "default"},
        "deleteOptions": {"gracePeriodSeconds": 0},
    }


def test_a_resource_quota_decodes_its_hard_limits_and_scopes() -> None:
    """``kubectl create quota q --hard=pods=2,requests.cpu=500m --scopes=BestEffort``."""
    hard = field(1, field(1, "pods") + field(2, field(1, "2"))) + field(
        1, field(1, "requests.cpu") + field(2, field(1, "500m"))
    )
    selector = field(1, field(1, "PriorityClass") + field(2, "In") + field(3, "high"))
    spec = hard + field(2, "BestEffort") + field(3, selector)
    body = envelope("v1", "ResourceQuota", field(1, metadata("q")) + field(2, spec) + field(3, b""))
    assert decode(body) == {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q"},
        "spec": {
            "hard": {"pods": "2", "requests.cpu": "500m"},
            "scopes": ["BestEffort"],
            "scopeSelector": {
                "matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}
                ]
            },
        },
        "status": {},
    }


def test_a_config_map_keeps_its_binary_data_and_empty_values() -> None:
    """``kubectl create configmap --from-file`` of a binary file sends ``binaryData``."""
    data = field(2, field(1, "empty")) + field(2, field(1, "k") + field(2, "v"))
    binary = field(3, field(1, "blob") + field(2, b"\xff\x00"))
    body = envelope("v1", "ConfigMap", field(1, metadata("c", app="x")) + data + binary)
    assert decode(body) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"app": "x"}},
        "data": {"empty": "", "k": "v"},
        "binaryData": {"blob": "/wA="},
    }


def test_embedded_structs_are_inlined_as_in_json() -> None:
    """A reference's name, a volume's source and a probe's handler are Go structs embedded
    with ``json:",inline"``: their fields belong to the parent object in JSON."""
    key_ref = field(1, field(1, "settings")) + field(2, "mode")
    env = field(1, "MODE") + field(3, field(3, key_ref))
    probe = field(1, field(1, field(1, "true"))) + field(2, 5)
    container = field(1, "c") + field(2, "busybox") + field(7, env) + field(10, probe)
    volume = field(1, "config") + field(2, field(19, field(1, field(1, "settings"))))
    pod_spec = field(1, volume) + field(2, container)
    template = field(1, metadata("")) + field(2, pod_spec)
    body = envelope("batch/v1", "Job", field(1, metadata("j")) + field(2, field(6, template)))
    spec = decode(body)["spec"]["template"]["spec"]
    assert spec["volumes"] == [{"name": "config", "configMap": {"name": "settings"}}]
    assert spec["containers"][0]["env"] == [
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}}
    ]
    assert spec["containers"][0]["livenessProbe"] == {
        "exec": {"command": ["true"]},
        "initialDelaySeconds": 5,
    }
