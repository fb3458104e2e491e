"""The second set of stored kinds (Ingress, IngressClass, NetworkPolicy,
HorizontalPodAutoscaler, PriorityClass, PersistentVolumeClaim, StorageClass) is served in
every cluster with upstream's schema, defaults, validation texts, ``kubectl get`` columns
and the protobuf bodies of kubectl's generators."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from allot.api.errors import StrictDecodingError
from allot.apiserver.protobuf import decode as decode_protobuf
from allot.cli.main import main
from allot.registry import HOST_CLUSTER
from allot.registry.admission import AdmissionDenied
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.listing import ListOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.statuses import InvalidObjectError, to_status
from allot.types import Obj
from tests.test_protobuf_workloads import envelope, field, metadata
from tests.test_stored_kinds import (
    CREATED,
    OPTIONS,
    _names,
    cells,
    columns,
    create,
    document,
    refusal,
    registry,
    target,
)

__all__ = ["registry"]  # the fixture, shared with the first set's tests
NETWORKING = "networking.k8s.io/v1"


def _ingress(**spec: Any) -> Obj:
    return {
        "apiVersion": NETWORKING,
        "kind": "Ingress",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    }


def _backend(name: str = "web", **port: Any) -> Obj:
    return {"service": {"name": name, "port": port}}


def _path(path: str | None, path_type: str | None, backend: Obj | None = None) -> Obj:
    found: Obj = {"backend": backend or _backend(number=80)}
    if path is not None:
        found["path"] = path
    if path_type is not None:
        found["pathType"] = path_type
    return found


def _rule(*paths: Obj, host: str | None = None) -> Obj:
    rule: Obj = {"http": {"paths": list(paths)}}
    if host is not None:
        rule["host"] = host
    return rule


def _ingress_class(**spec: Any) -> Obj:
    return {
        "apiVersion": NETWORKING,
        "kind": "IngressClass",
        "metadata": {"name": "c"},
        "spec": spec,
    }


def _policy(**spec: Any) -> Obj:
    return {
        "apiVersion": NETWORKING,
        "kind": "NetworkPolicy",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": spec,
    }


LABEL_TEXT = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
REFUSALS = [
    (
        _ingress(),
        'Ingress.networking.k8s.io "web" is invalid: spec: Invalid value: null: either '
        "`defaultBackend` or `rules` must be specified",
    ),
    (
        _ingress(rules=[_rule(_path("/", None)), _rule(_path("api", "Prefix"), host="10.0.0.1")]),
        'Ingress.networking.k8s.io "web" is invalid: [spec.rules[0].http.paths[0].pathType: '
        "Required value: pathType must be specified, spec.rules[1].host: Invalid value: "
        '"10.0.0.1": must be a DNS name, not an IP address, '
        'spec.rules[1].http.paths[0].path: Invalid value: "api": must be an absolute path]',
    ),
    (
        _ingress(rules=[_rule(_path("/a/../b/.", "Exact"), _path("/", "Regex"))]),
        'Ingress.networking.k8s.io "web" is invalid: [spec.rules[0].http.paths[0].path: '
        "Invalid value: \"/a/../b/.\": must not contain '/../', "
        'spec.rules[0].http.paths[0].path: Invalid value: "/a/../b/.": cannot end with '
        "'/.', spec.rules[0].http.paths[1].pathType: Unsupported value: \"Regex\": "
        'supported values: "Exact", "ImplementationSpecific", "Prefix"]',
    ),
    (
        _ingress(
            defaultBackend={"service": {"name": "Web", "port": {"name": "http", "number": 80}}},
            rules=[{"host": "*.*.example.com"}, {"http": {"paths": []}}],
        ),
        'Ingress.networking.k8s.io "web" is invalid: [spec.defaultBackend.service.name: '
        f'Invalid value: "Web": {LABEL_TEXT}, spec.defaultBackend: Invalid value: "": cannot '
        "set both port name & port number, spec.rules[0].host: Invalid value: "
        "\"*.*.example.com\": a wildcard DNS-1123 subdomain must start with '*.', followed by "
        "a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' "
        "or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for "
        "validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
        "'), spec.rules[1].http.paths: Required value]",
    ),
    (
        _ingress(defaultBackend={}),
        'Ingress.networking.k8s.io "web" is invalid: spec.defaultBackend: Invalid value: "": '
        "resource or service backend is required",
    ),
    (
        _ingress(
            defaultBackend=_backend(),
            ingressClassName="nginx",
        )
        | {
            "metadata": {
                "name": "web",
                "namespace": "default",
                "annotations": {"kubernetes.io/ingress.class": "traefik"},
            }
        },
        'Ingress.networking.k8s.io "web" is invalid: [spec.defaultBackend: Required value: port '
        "name or number is required, annotations.kubernetes.io/ingress.class: Invalid value: "
        '"traefik": must match `ingressClassName` when both are specified]',
    ),
    (
        _ingress_class(),
        'IngressClass.networking.k8s.io "c" is invalid: spec.controller: Required value',
    ),
    (
        _ingress_class(
            controller="nginx", parameters={"kind": "P", "name": "a/b", "scope": "Namespace"}
        ),
        'IngressClass.networking.k8s.io "c" is invalid: [spec.controller: Invalid value: '
        '"nginx": must be a domain-prefixed path (such as "acme.io/foo"), '
        "spec.parameters.name: Invalid value: \"a/b\": may not contain '/', "
        "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace']",
    ),
    (
        _ingress_class(controller="example.com/lb", parameters={"name": "p", "namespace": "x"}),
        'IngressClass.networking.k8s.io "c" is invalid: [spec.parameters.kind: Required value, '
        "spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster']",
    ),
    (
        _policy(
            ingress=[
                {
                    "from": [{}, {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}],
                    "ports": [{"port": "http", "endPort": 90}, {"protocol": "ICMP"}],
                }
            ],
            egress=[{"to": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.0.0/8"]}}]}],
            policyTypes=["Ingress", "Both"],
        ),
        'NetworkPolicy.networking.k8s.io "p" is invalid: [spec.ingress[0].ports[0].endPort: '
        "Invalid value: 90: may not be specified when `port` is non-numeric, "
        'spec.ingress[0].ports[1].protocol: Unsupported value: "ICMP": supported values: '
        '"TCP", "UDP", "SCTP", spec.ingress[0].from[0]: Required value: must specify a peer, '
        "spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer, "
        'spec.egress[0].to[0].ipBlock.except[0]: Invalid value: "10.0.0.0/8": must be a '
        'strict subset of `cidr`, spec.policyTypes[1]: Unsupported value: "Both": supported '
        'values: "Ingress", "Egress"]',
    ),
    (
        _policy(ingress=[{"ports": [{"port": 70000}, {"endPort": 5}]}]),
        'NetworkPolicy.networking.k8s.io "p" is invalid: [spec.ingress[0].ports[0].port: '
        "Invalid value: 70000: must be between 1 and 65535, inclusive, "
        "spec.ingress[0].ports[1].endPort: Invalid value: 5: may not be specified when "
        "`port` is not specified]",
    ),
]


@pytest.mark.parametrize(("doc", "message"), REFUSALS)
def test_invalid_objects_are_refused_with_upstream_texts(
    registry: Registry, doc: Obj, message: str
) -> None:
    assert refusal(registry, doc) == message


def test_kinds_are_served_with_upstream_names() -> None:
    expected = {
        "Ingress": ("ingresses", True, ("ing",), ("status",), NETWORKING),
        "IngressClass": ("ingressclasses", False, (), (), NETWORKING),
        "NetworkPolicy": ("networkpolicies", True, ("netpol",), (), NETWORKING),
    }
    for kind, (plural, namespaced, short, subresources, api_version) in expected.items():
        served = by_kind(kind)
        assert (served.plural, served.namespaced, served.short_names, served.subresources) == (
            plural, namespaced, short, subresources
        ), kind  # fmt: skip
        assert served.info.api_version == api_version


def test_an_ingress_starts_with_an_empty_load_balancer(registry: Registry) -> None:
    sent = {**document("Ingress"), "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}
    created = create(registry, sent, "legal-ai")
    assert created["status"] == {"loadBalancer": {}}
    status = Target(by_kind("Ingress"), "default", "web", "status")
    bad = {
        **created,
        "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3"}, {"hostname": "10.0.0.1"}]}},
    }
    with pytest.raises(InvalidObjectError) as caught:
        registry.handlers.update("legal-ai", status, bad, OPTIONS)
    assert str(to_status(caught.value).message) == (
        'Ingress.networking.k8s.io "web" is invalid: [status.loadBalancer.ingress[0].ip: '
        'Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff), '
        'status.loadBalancer.ingress[1].hostname: Invalid value: "10.0.0.1": must be a DNS '
        "name, not an IP address]"
    )
    good = {**created, "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}]}}}
    written = registry.handlers.update("legal-ai", status, good, OPTIONS).object
    assert cells("ingresses", written)[3] == "10.0.0.9"


def test_ingress_and_class_tables() -> None:
    assert columns("ingresses") == ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    assert cells("ingresses", document("Ingress")) == [
        "web", "nginx", "web.example.com", "", "80, 443", "60m"
    ]  # fmt: skip
    many = _ingress(rules=[{"host": f"h{i}.example.com"} for i in range(5)] + [{}])
    many["metadata"]["creationTimestamp"] = CREATED
    assert cells("ingresses", many)[1:5] == [
        "<none>", "h0.example.com,h1.example.com,h2.example.com + 3 more...", "", "80"
    ]  # fmt: skip
    assert (
        cells("ingresses", _ingress(defaultBackend=_backend()) | {"metadata": {"name": "x"}})[2]
        == "*"
    )
    assert columns("ingressclasses") == ["Name", "Controller", "Parameters", "Age"]
    assert cells("ingressclasses", document("IngressClass")) == [
        "nginx", "k8s.io/ingress-nginx", "IngressParameters.k8s.example.com/external-lb", "60m"
    ]  # fmt: skip


def test_an_ingress_class_parameters_default_to_cluster_scope_and_its_controller_is_fixed(
    registry: Registry,
) -> None:
    created = create(registry, document("IngressClass"))
    assert created["spec"]["parameters"]["scope"] == "Cluster"
    changed = {**created, "spec": {**created["spec"], "controller": "example.com/other"}}
    with pytest.raises(InvalidObjectError) as caught:
        registry.handlers.update(HOST_CLUSTER, target("IngressClass", "nginx"), changed, OPTIONS)
    assert str(to_status(caught.value).message) == (
        'IngressClass.networking.k8s.io "nginx" is invalid: spec.controller: Invalid value: '
        '"example.com/other": field is immutable'
    )


def test_network_policy_defaults_and_table(registry: Registry) -> None:
    created = create(registry, document("NetworkPolicy"))
    assert created["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert created["spec"]["ingress"][0]["ports"] == [
        {"protocol": "TCP", "port": 8080, "endPort": 8090}
    ]
    bare = create(registry, _policy())
    assert bare["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    assert columns("networkpolicies") == ["Name", "Pod-Selector", "Age"]
    assert cells("networkpolicies", created)[1] == "app=web"
    assert cells("networkpolicies", bare)[1] == "<none>"


def test_unknown_ingress_fields_are_refused(registry: Registry) -> None:
    doc = document("Ingress")
    doc["spec"]["rules"][0]["http"]["paths"][0]["backend"]["serviceName"] = "web"
    with pytest.raises(
        StrictDecodingError, match=r'unknown field "spec.rules\[0\].http.paths\[0\].backend'
    ):
        create(registry, doc)


def test_kubectl_create_ingress_protobuf_body_decodes() -> None:
    """``kubectl create ingress web --class=nginx --rule="web.example.com/*=web:80,tls=s"``."""
    port = field(2, 80)
    backend = field(4, field(1, "web") + field(2, port))
    path = field(1, "/") + field(2, backend) + field(3, "Prefix")
    rule = field(1, "web.example.com") + field(2, field(1, field(1, path)))
    tls = field(1, "web.example.com") + field(2, "s")
    spec = field(2, tls) + field(3, rule) + field(4, "nginx")
    raw = field(1, metadata("web")) + field(2, spec) + field(3, field(1, b""))
    assert decode_protobuf(envelope(NETWORKING, "Ingress", raw)) == {
        "apiVersion": NETWORKING,
        "kind": "Ingress",
        "metadata": {"name": "web"},
        "spec": {
            "ingressClassName": "nginx",
            "rules": [
                {
                    "host": "web.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "web", "port": {"number": 80}}},
                            }
                        ]
                    },
                }
            ],
            "tls": [{"hosts": ["web.example.com"], "secretName": "s"}],
        },
        "status": {"loadBalancer": {}},
    }


def _autoscaler(**spec: Any) -> Obj:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 3,
            **spec,
        },
    }


AUTOSCALER_REFUSALS = [
    (
        _autoscaler(minReplicas=0, maxReplicas=0, scaleTargetRef={"kind": "Deployment"}),
        'HorizontalPodAutoscaler.autoscaling "web" is invalid: [spec.minReplicas: Invalid '
        "value: 0: must be greater than or equal to 1, spec.maxReplicas: Invalid value: 0: "
        "must be greater than 0, spec.scaleTargetRef.name: Required value]",
    ),
    (
        _autoscaler(minReplicas=5),
        'HorizontalPodAutoscaler.autoscaling "web" is invalid: spec.maxReplicas: Invalid value: '
        "3: must be greater than or equal to `minReplicas`",
    ),
    (
        _autoscaler(
            metrics=[
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization"}},
                },
                {"type": "Pods", "resource": {"name": "cpu", "target": {"type": "Bad"}}},
                {"type": "Foo"},
                {
                    "type": "External",
                    "external": {"metric": {"name": "q"}, "target": {"type": "Value"}},
                    "pods": {},
                },
            ]
        ),
        'HorizontalPodAutoscaler.autoscaling "web" is invalid: [spec.metrics[0].resource.target'
        ".averageUtilization: Required value: must set either a target raw value or a target "
        'utilization, spec.metrics[1].resource.target.type: Invalid value: "Bad": must be '
        "either Utilization, Value, or AverageValue, spec.metrics[1].resource.target."
        "averageUtilization: Required value: must set either a target raw value or a target "
        "utilization, spec.metrics[1].pods: Required value: must populate information for the "
        'given metric source, spec.metrics[2].type: Unsupported value: "Foo": supported '
        'values: "ContainerResource", "External", "Object", "Pods", "Resource", '
        "spec.metrics[3].external.target.averageValue: Required value: must set either a "
        "target value for metric or a per-pod target, spec.metrics[3].pods: Forbidden: must "
        "populate the given metric source only]",
    ),
    (
        _autoscaler(
            behavior={
                "scaleUp": {
                    "selectPolicy": "Fast",
                    "stabilizationWindowSeconds": 4000,
                    "policies": [{"type": "Nodes", "value": 0, "periodSeconds": 1801}],
                },
                "scaleDown": {"policies": []},
            }
        ),
        'HorizontalPodAutoscaler.autoscaling "web" is invalid: [spec.behavior.scaleUp.'
        "stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600, "
        'spec.behavior.scaleUp.selectPolicy: Unsupported value: "Fast": supported values: '
        '"Disabled", "Max", "Min", spec.behavior.scaleUp.policies[0].type: Unsupported value: '
        '"Nodes": supported values: "Percent", "Pods", spec.behavior.scaleUp.policies[0].value: '
        "Invalid value: 0: must be greater than zero, spec.behavior.scaleUp.policies[0]."
        "periodSeconds: Invalid value: 1801: must be less than or equal to 1800, "
        "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy]",
    ),
]


@pytest.mark.parametrize(("doc", "message"), AUTOSCALER_REFUSALS)
def test_invalid_autoscalers_are_refused_with_upstream_texts(
    registry: Registry, doc: Obj, message: str
) -> None:
    assert refusal(registry, doc) == message


def test_an_autoscaler_is_defaulted_as_upstream(registry: Registry) -> None:
    created = create(registry, _autoscaler(behavior={"scaleDown": {"selectPolicy": "Min"}}))
    assert created["spec"]["minReplicas"] == 1
    assert created["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80},
            },
        }
    ]
    assert created["spec"]["behavior"] == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {
            "selectPolicy": "Min",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }
    assert created["status"] == {"desiredReplicas": 0}
    status = Target(by_kind("HorizontalPodAutoscaler"), "default", "web", "status")
    refused = {**created, "status": {"desiredReplicas": -1}}
    with pytest.raises(InvalidObjectError, match=r"status.desiredReplicas: Invalid value: -1"):
        registry.handlers.update(HOST_CLUSTER, status, refused, OPTIONS)


def test_autoscaler_table_formats_targets_as_upstream() -> None:
    assert columns("horizontalpodautoscalers") == [
        "Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"
    ]  # fmt: skip
    doc = document("HorizontalPodAutoscaler")
    assert cells("horizontalpodautoscalers", doc) == [
        "web",
        "Deployment/web",
        "cpu: <unknown>/60%, memory: <unknown>/500Mi + 1 more...",
        "2",
        10,
        0,
        "60m",
    ]
    doc["status"] = {
        "currentReplicas": 2,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "current": {"averageUtilization": 41}},
            },
            {
                "type": "Resource",
                "resource": {"name": "memory", "current": {"averageValue": "2Mi"}},
            },
        ],
    }
    doc["spec"]["metrics"] = doc["spec"]["metrics"][:2]
    assert cells("horizontalpodautoscalers", doc)[2:6] == [
        "cpu: 41%/60%, memory: 2Mi/500Mi", "2", 10, 2
    ]  # fmt: skip
    doc["spec"]["metrics"] = []
    doc["spec"].pop("minReplicas")
    assert cells("horizontalpodautoscalers", doc)[2:4] == ["<none>", "<unset>"]


def test_kubectl_autoscale_protobuf_body_decodes() -> None:
    """``kubectl autoscale deployment web --min 1 --max 3 --cpu-percent 50``."""
    ref = field(1, "Deployment") + field(2, "web") + field(3, "apps/v1")
    target = field(1, "Utilization") + field(4, 50)
    metric = field(1, "Resource") + field(4, field(1, "cpu") + field(2, target))
    spec = field(1, ref) + field(2, 1) + field(3, 3) + field(4, metric)
    raw = field(1, metadata("web")) + field(2, spec) + field(3, field(4, 0))
    assert decode_protobuf(envelope("autoscaling/v2", "HorizontalPodAutoscaler", raw)) == {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "minReplicas": 1,
            "maxReplicas": 3,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 50},
                    },
                }
            ],
        },
        "status": {},
    }
    served = by_kind("HorizontalPodAutoscaler")
    assert (served.plural, served.short_names, served.categories, served.subresources) == (
        "horizontalpodautoscalers", ("hpa",), ("all",), ("status",)
    )  # fmt: skip


SCHEDULING = "scheduling.k8s.io/v1"
TENANT_USER = WriteOptions("kubectl", "Strict", False, user="legal-ai")


def _priority_class(name: str, value: int, **fields: Any) -> Obj:
    return {
        "apiVersion": SCHEDULING,
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **fields,
    }


def _pod(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def _create_as_tenant(registry: Registry, doc: Obj) -> Obj:
    return registry.handlers.create("legal-ai", target(doc["kind"]), doc, TENANT_USER).object


def _forbidden(registry: Registry, doc: Obj) -> str:
    with pytest.raises(AdmissionDenied) as caught:
        _create_as_tenant(registry, doc)
    return str(to_status(caught.value).message)


@pytest.mark.parametrize("cluster", [HOST_CLUSTER, "legal-ai"])
def test_every_cluster_has_the_system_priority_classes(registry: Registry, cluster: str) -> None:
    page = registry.handlers.list_page(cluster, target("PriorityClass"), ListOptions())
    assert [
        (c["metadata"]["name"], c["value"], c.get("globalDefault"), c["preemptionPolicy"])
        for c in page.items
    ] == [
        ("system-cluster-critical", 2000000000, None, "PreemptLowerPriority"),
        ("system-node-critical", 2000001000, None, "PreemptLowerPriority"),
    ]
    assert columns("priorityclasses") == [
        "Name", "Value", "Global-Default", "Age", "PreemptionPolicy"
    ]  # fmt: skip
    assert cells("priorityclasses", page.items[0]) == [
        "system-cluster-critical", 2000000000, False, "60m", "PreemptLowerPriority"
    ]  # fmt: skip


PRIORITY_REFUSALS = [
    (
        _priority_class("system-high", 10),
        'PriorityClass.scheduling.k8s.io "system-high" is invalid: metadata.name: Forbidden: '
        "priority class names with 'system-' prefix are reserved for system use only. error: "
        "system-high is not a known system priority class",
    ),
    (
        _priority_class("system-node-critical", 2000000000),
        'PriorityClass.scheduling.k8s.io "system-node-critical" is invalid: metadata.name: '
        "Forbidden: priority class names with 'system-' prefix are reserved for system use "
        "only. error: value of system-node-critical PriorityClass must be 2000001000",
    ),
    (
        _priority_class("huge", 1000000001, preemptionPolicy="Sometimes"),
        'PriorityClass.scheduling.k8s.io "huge" is invalid: [value: Forbidden: maximum allowed '
        "value of a user defined priority is 1000000000, preemptionPolicy: Unsupported value: "
        '"Sometimes": supported values: "Never", "PreemptLowerPriority"]',
    ),
]


@pytest.mark.parametrize(("doc", "message"), PRIORITY_REFUSALS)
def test_invalid_priority_classes_are_refused_with_upstream_texts(
    registry: Registry, doc: Obj, message: str
) -> None:
    assert refusal(registry, doc) == message


def test_a_priority_class_keeps_its_value_and_only_one_is_the_default(registry: Registry) -> None:
    created = create(registry, document("PriorityClass"))
    assert created["preemptionPolicy"] == "PreemptLowerPriority"
    changed = {**created, "value": 5, "preemptionPolicy": "Never"}
    with pytest.raises(InvalidObjectError) as caught:
        registry.handlers.update(
            HOST_CLUSTER, target("PriorityClass", "batch-high"), changed, OPTIONS
        )
    assert str(to_status(caught.value).message) == (
        'PriorityClass.scheduling.k8s.io "batch-high" is invalid: [value: Forbidden: may not be '
        'changed in an update., preemptionPolicy: Invalid value: "Never": field is immutable]'
    )
    create(registry, _priority_class("standard", 10, globalDefault=True))
    with pytest.raises(AdmissionDenied) as denied:
        create(registry, _priority_class("other", 20, globalDefault=True))
    assert str(to_status(denied.value).message) == (
        'priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass standard is '
        "already marked as default. Only one default can exist"
    )
    assert create(registry, _priority_class("zero", 0))["value"] == 0


def test_a_pod_s_priority_class_resolves_into_its_priority(registry: Registry) -> None:
    _create_as_tenant(registry, _priority_class("batch", 500, preemptionPolicy="Never"))
    spec = _create_as_tenant(registry, _pod("a", priorityClassName="batch"))["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (500, "Never")
    critical = _create_as_tenant(registry, _pod("b", priorityClassName="system-node-critical"))
    assert critical["spec"]["priority"] == 2000001000
    plain = _create_as_tenant(registry, _pod("c"))["spec"]
    assert "priority" not in plain
    assert "priorityClassName" not in plain
    assert _forbidden(registry, _pod("d", priorityClassName="gold")) == (
        'pods "d" is forbidden: no PriorityClass with name gold was found'
    )
    assert _forbidden(registry, _pod("e", priorityClassName="batch", priority=7)) == (
        'pods "e" is forbidden: the integer value of priority (7) must not be provided in pod '
        "spec; priority admission controller computed 500 from the given PriorityClass name"
    )
    assert _forbidden(
        registry, _pod("f", priorityClassName="batch", preemptionPolicy="PreemptLowerPriority")
    ) == (
        'pods "f" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must '
        "not be provided in pod spec; priority admission controller computed Never from the "
        "given PriorityClass name"
    )


def test_the_global_default_class_applies_to_pods_without_one(registry: Registry) -> None:
    _create_as_tenant(registry, _priority_class("low", -5, globalDefault=True))
    spec = _create_as_tenant(registry, _pod("a"))["spec"]
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
        "low", -5, "PreemptLowerPriority"
    )  # fmt: skip
    host = registry.handlers.create(HOST_CLUSTER, target("Pod"), _pod("b"), OPTIONS).object
    assert "priority" not in host["spec"]  # the tenant's default is its cluster's alone


def test_a_pod_the_platform_writes_with_a_priority_keeps_it(registry: Registry) -> None:
    """A tenant pod's twin carries the priority resolved in the tenant's cluster."""
    twin = _pod("twin", priorityClassName="tenant-only", priority=42)
    spec = create(registry, twin)["spec"]
    assert (spec["priorityClassName"], spec["priority"]) == ("tenant-only", 42)


def test_kubectl_create_priorityclass_protobuf_body_decodes() -> None:
    """``kubectl create priorityclass high --value=1000 --description=x``."""
    raw = field(1, metadata("high")) + field(2, 1000) + field(4, "x")
    assert decode_protobuf(envelope(SCHEDULING, "PriorityClass", raw)) == {
        "apiVersion": SCHEDULING,
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
        "description": "x",
    }
    served = by_kind("PriorityClass")
    assert (served.plural, served.namespaced, served.short_names) == (
        "priorityclasses", False, ("pc",)
    )  # fmt: skip


def _claim(**spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": spec,
    }


def _storage_class(**fields: Any) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "fast"},
        **fields,
    }


STORAGE_REFUSALS = [
    (
        _claim(),
        'PersistentVolumeClaim "data" is invalid: [spec.accessModes: Required value: at least 1 '
        "access mode is required, spec.resources[storage]: Required value]",
    ),
    (
        _claim(
            accessModes=["ReadWriteOncePod", "ReadWriteMany", "WriteOnly"],
            resources={"requests": {"storage": "0"}},
            storageClassName="Fast",
            volumeMode="Raw",
        ),
        'PersistentVolumeClaim "data" is invalid: [spec.accessModes: Unsupported value: '
        '"WriteOnly": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", '
        '"ReadWriteOncePod", spec.accessModes: Forbidden: may not use ReadWriteOncePod with '
        'other access modes, spec.resources[storage]: Invalid value: "0": must be greater than '
        'zero, spec.storageClassName: Invalid value: "Fast": a lowercase RFC 1123 subdomain '
        "must consist of lower case alphanumeric characters, '-' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), "
        'spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"]',
    ),
    (
        _storage_class(reclaimPolicy="Recycle", parameters={"": "x"}),
        'StorageClass.storage.k8s.io "fast" is invalid: [provisioner: Required value, '
        'parameters: Invalid value: "": field can not be empty., reclaimPolicy: Unsupported '
        'value: "Recycle": supported values: "Delete", "Retain"]',
    ),
    (
        _storage_class(provisioner="a/b/c", volumeBindingMode="Later"),
        'StorageClass.storage.k8s.io "fast" is invalid: [provisioner: Invalid value: "a/b/c": '
        "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName'), "
        'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", '
        '"WaitForFirstConsumer"]',
    ),
]


@pytest.mark.parametrize(("doc", "message"), STORAGE_REFUSALS)
def test_invalid_claims_and_classes_are_refused_with_upstream_texts(
    registry: Registry, doc: Obj, message: str
) -> None:
    assert refusal(registry, doc) == message


def test_a_claim_is_pending_protected_and_gets_the_default_class(registry: Registry) -> None:
    create(registry, document("StorageClass"), "legal-ai")
    claim = _claim(accessModes=["ReadWriteOnce"], resources={"requests": {"storage": "1Gi"}})
    created = create(registry, {**claim, "status": {"phase": "Bound"}}, "legal-ai")
    assert created["status"] == {"phase": "Pending"}
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert created["spec"]["storageClassName"] == "fast"  # as new as standard: by name
    assert created["spec"]["volumeMode"] == "Filesystem"
    unclassed = {**claim, "metadata": {"name": "raw", "namespace": "default"}}
    unclassed["spec"] = {**claim["spec"], "storageClassName": ""}
    assert create(registry, unclassed, "legal-ai")["spec"]["storageClassName"] == ""
    on_host = create(registry, claim)  # the tenant's default class is its own
    assert on_host["spec"]["storageClassName"] == "standard"  # kind's, in a new cluster
    changed = {**created, "spec": {**created["spec"], "accessModes": ["ReadWriteMany"]}}
    with pytest.raises(InvalidObjectError) as caught:
        registry.handlers.update(
            "legal-ai", target("PersistentVolumeClaim", "data"), changed, OPTIONS
        )
    assert str(to_status(caught.value).message) == (
        'PersistentVolumeClaim "data" is invalid: spec: Forbidden: spec is immutable after '
        "creation except resources.requests and volumeAttributesClassName for bound claims"
    )


def test_storage_class_defaults_updates_and_table(registry: Registry) -> None:
    created = create(registry, _storage_class(provisioner="example.com/nfs"))
    assert (created["reclaimPolicy"], created["volumeBindingMode"]) == ("Delete", "Immediate")
    changed = {**created, "provisioner": "example.com/other", "parameters": {"a": "b"}}
    with pytest.raises(InvalidObjectError) as caught:
        registry.handlers.update(HOST_CLUSTER, target("StorageClass", "fast"), changed, OPTIONS)
    assert str(to_status(caught.value).message) == (
        'StorageClass.storage.k8s.io "fast" is invalid: [parameters: Forbidden: updates to '
        "parameters are forbidden., provisioner: Forbidden: updates to provisioner are "
        "forbidden.]"
    )
    assert columns("storageclasses") == [
        "Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"
    ]  # fmt: skip
    assert cells("storageclasses", document("StorageClass")) == [
        "fast (default)", "ebs.csi.aws.com", "Delete", "WaitForFirstConsumer", True, "60m"
    ]  # fmt: skip


def test_claim_table() -> None:
    assert columns("persistentvolumeclaims") == [
        "Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass",
        "VolumeAttributesClass", "Age", "VolumeMode*",
    ]  # fmt: skip
    pending = {**document("PersistentVolumeClaim"), "status": {"phase": "Pending"}}
    assert cells("persistentvolumeclaims", pending) == [
        "data", "Pending", "", "", "", "fast", "<unset>", "60m", "<unset>"
    ]  # fmt: skip
    bound = copy.deepcopy(pending)
    bound["spec"].update(volumeName="pv-1", volumeMode="Filesystem")
    bound["status"] = {
        "phase": "Bound",
        "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
        "capacity": {"storage": "10Gi"},
    }
    assert cells("persistentvolumeclaims", bound)[1:5] == ["Bound", "pv-1", "10Gi", "RWO,RWX"]
    served = by_kind("PersistentVolumeClaim")
    assert (served.plural, served.short_names, served.subresources) == (
        "persistentvolumeclaims", ("pvc",), ("status",)
    )  # fmt: skip
    assert by_kind("StorageClass").short_names == ("sc",)


def test_allot_validate_judges_the_new_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kinds of partly served groups (networking.k8s.io, storage.k8s.io...) are judged,
    not skipped; kinds allot does not serve still are."""
    manifest = tmp_path / "chart.yaml"
    manifest.write_text(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: x}\nspec: {}\n"
        "---\napiVersion: v1\nkind: LimitRange\nmetadata: {name: l}\n"
    )
    assert main(["validate", str(manifest)]) == 1
    out = capsys.readouterr()
    assert "either `defaultBackend` or `rules` must be specified" in out.out + out.err
    assert "v1 LimitRange l skipped" in out.out + out.err


def test_an_ingress_without_a_class_gets_the_default_one(registry: Registry) -> None:
    assert (
        "ingressClassName"
        not in create(registry, _ingress(defaultBackend=_backend(number=80)))["spec"]
    )
    create(registry, document("IngressClass"))
    given = _ingress(defaultBackend=_backend(number=80))
    given["metadata"]["name"] = "second"
    assert create(registry, given)["spec"]["ingressClassName"] == "nginx"
    annotated = copy.deepcopy(given)
    annotated["metadata"].update(name="third", annotations={"kubernetes.io/ingress.class": "x"})
    assert "ingressClassName" not in create(registry, annotated)["spec"]


def test_only_the_platform_s_dry_runs_pass_an_unknown_class(registry: Registry) -> None:
    """The tenant guard tries a tenant's pod template on the host in a dry run: the class
    is the tenant's. A controller's real pod with an unknown class is refused, as the
    ReplicaSet controller's would be upstream."""
    dry = WriteOptions("guard", "Ignore", True)
    tried = registry.handlers.create(
        HOST_CLUSTER, target("Pod"), _pod("t", priorityClassName="tenant-only"), dry
    ).object
    assert "priority" not in tried["spec"]
    with pytest.raises(AdmissionDenied, match="no PriorityClass with name tenant-only"):
        create(registry, _pod("r", priorityClassName="tenant-only"))


def test_a_new_cluster_has_kind_s_default_class_until_it_is_deleted(tmp_path: Path) -> None:
    """``standard`` is written when a cluster is made, never again: deleted, it stays
    deleted across restarts; a tenant's cluster made later gets its own."""
    first = Registry(tmp_path)
    standard = first.handlers.get(HOST_CLUSTER, target("StorageClass", "standard"))
    assert (standard["provisioner"], standard["volumeBindingMode"]) == (
        "rancher.io/local-path", "WaitForFirstConsumer"
    )  # fmt: skip
    assert standard["reclaimPolicy"] == "Delete"
    assert standard["metadata"]["annotations"] == {
        "storageclass.kubernetes.io/is-default-class": "true"
    }
    first.handlers.delete(HOST_CLUSTER, target("StorageClass", "standard"), {}, False)
    first.close()
    again = Registry(tmp_path)
    try:
        assert _names(again, HOST_CLUSTER, "StorageClass") == []
        again.add_cluster("legal-ai")
        assert _names(again, "legal-ai", "StorageClass") == ["standard"]
    finally:
        again.close()
