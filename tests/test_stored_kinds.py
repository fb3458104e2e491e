"""The stored kinds (RBAC roles and bindings, PodDisruptionBudgets, Leases) are served in every
cluster with upstream's schema, defaults, validation texts and ``kubectl get`` columns."""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.api.errors import StrictDecodingError
from allot.apiserver.protobuf import decode as decode_protobuf
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.kinds import table_for
from allot.registry.listing import ListOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.statuses import InvalidObjectError, to_status
from allot.types import Obj
from tests.test_protobuf_workloads import envelope, field, metadata

MANIFEST = Path(__file__).parent / "data" / "stored" / "all-kinds.yaml"
OPTIONS = WriteOptions("test", "Strict", False)
RBAC = "rbac.authorization.k8s.io/v1"
NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
CREATED = "2026-11-25T11:00:00Z"


def documents() -> list[Obj]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def document(kind: str) -> Obj:
    return copy.deepcopy(next(d for d in documents() if d["kind"] == kind))


PROTECTED = {
    "PersistentVolumeClaim": "kubernetes.io/pvc-protection",
    "PersistentVolume": "kubernetes.io/pv-protection",
}


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    registry = Registry(tmp_path)
    registry.add_cluster("legal-ai")
    yield registry
    registry.close()


def target(kind: str, name: str | None = None) -> Target:
    served = by_kind(kind)
    return Target(served, "default" if served.namespaced else None, name, "")


def create(registry: Registry, doc: Obj, cluster: str = HOST_CLUSTER) -> Obj:
    return registry.handlers.create(cluster, target(doc["kind"]), doc, OPTIONS).object


def refusal(registry: Registry, doc: Obj) -> str:
    with pytest.raises(InvalidObjectError) as caught:
        create(registry, doc)
    return str(to_status(caught.value).message)


@pytest.mark.parametrize("cluster", [HOST_CLUSTER, "legal-ai"])
def test_every_kind_is_created_read_listed_and_deleted_in_every_cluster(
    registry: Registry, cluster: str
) -> None:
    for doc in documents():
        kind, name = doc["kind"], doc["metadata"]["name"]
        before = _names(registry, cluster, kind)  # kind's default StorageClass
        created = create(registry, copy.deepcopy(doc), cluster)
        fetched = registry.handlers.get(cluster, target(kind, name))
        assert fetched["metadata"]["uid"] == created["metadata"]["uid"]
        assert _names(registry, cluster, kind) == sorted([*before, name]), kind
        registry.handlers.delete(cluster, target(kind, name), {}, False)
        if kind in PROTECTED:  # Terminating until the protection controller lets it go
            deleted = registry.handlers.get(cluster, target(kind, name))
            assert deleted["metadata"]["finalizers"] == [PROTECTED[kind]]
            assert deleted["metadata"]["deletionTimestamp"]
            continue
        assert _names(registry, cluster, kind) == before


def _names(registry: Registry, cluster: str, kind: str) -> list[str]:
    """The names listed, but for the system PriorityClasses and the bootstrap RBAC policy
    every cluster has."""
    page = registry.handlers.list_page(cluster, target(kind), ListOptions())
    return [
        item["metadata"]["name"]
        for item in page.items
        if not (kind == "PriorityClass" and item["metadata"]["name"].startswith("system-"))
        and (item["metadata"].get("labels") or {}).get("kubernetes.io/bootstrapping")
        != "rbac-defaults"
    ]


def test_aggregation_rule_is_stored_as_given(registry: Registry) -> None:
    created = create(registry, document("ClusterRole"))
    assert created["aggregationRule"] == document("ClusterRole")["aggregationRule"]
    assert created["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_unknown_fields_are_refused(registry: Registry) -> None:
    role = document("Role")
    role["rules"][0]["verb"] = ["get"]
    with pytest.raises(StrictDecodingError, match=r'unknown field "rules\[0\]\.verb"'):
        create(registry, role)


def test_bindings_default_their_groups(registry: Registry) -> None:
    binding: Obj = {
        "apiVersion": RBAC,
        "kind": "RoleBinding",
        "metadata": {"name": "b", "namespace": "default"},
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "name": "x"}],
    }
    created = create(registry, binding)
    assert created["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert created["subjects"] == [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"},
        {"kind": "ServiceAccount", "name": "x"},
    ]


def _role(**rule: Any) -> Obj:
    return {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": {"name": "r", "namespace": "default"},
        "rules": [rule],
    }


def _budget(**spec: Any) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    }


def _lease(**spec: Any) -> Obj:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "leader", "namespace": "default"},
        "spec": spec,
    }


REFUSALS = [
    (
        _role(apiGroups=[""], resources=["pods"]),
        'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: '
        "verbs must contain at least one value",
    ),
    (
        _role(verbs=["get"], nonResourceURLs=["/healthz"]),
        'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid '
        'value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs',
    ),
    (
        _role(verbs=["get"]),
        'Role.rbac.authorization.k8s.io "r" is invalid: [rules[0].apiGroups: Required value: '
        "resource rules must supply at least one api group, rules[0].resources: Required "
        "value: resource rules must supply at least one resource]",
    ),
    (
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": {"name": ".."},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"], "resources": ["pods"]}],
        },
        'ClusterRole.rbac.authorization.k8s.io ".." is invalid: [metadata.name: Invalid value: '
        '"..": may not be \'..\', rules[0].nonResourceURLs: Invalid value: ["/x"]: rules '
        "cannot apply to both regular resources and non-resource URLs]",
    ),
    (
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "default"},
            "roleRef": {"kind": "Pod", "name": "r"},
            "subjects": [{"kind": "Robot", "name": "r2"}, {"kind": "User", "name": ""}],
        },
        'RoleBinding.rbac.authorization.k8s.io "b" is invalid: [roleRef.kind: Unsupported '
        'value: "Pod": supported values: "Role", "ClusterRole", subjects[0].kind: Unsupported '
        'value: "Robot": supported values: "ServiceAccount", "User", "Group", '
        'subjects[1].name: Required value, subjects[1].name: Invalid value: "": user name '
        "cannot be empty]",
    ),
    (
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "b"},
            "roleRef": {"kind": "ClusterRole", "name": "r", "apiGroup": "example.com"},
            "subjects": [{"kind": "ServiceAccount", "name": "Op"}],
        },
        'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: [roleRef.apiGroup: '
        'Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io", '
        'subjects[0].name: Invalid value: "Op": a lowercase RFC 1123 subdomain must consist '
        "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), "
        "subjects[0].namespace: Required value]",
    ),
    (
        _budget(minAvailable=1, maxUnavailable="10%"),
        'PodDisruptionBudget.policy "web" is invalid: spec: Invalid value: '
        '{"maxUnavailable":"10%","minAvailable":1}: minAvailable and maxUnavailable cannot be '
        "both set",
    ),
    (
        _budget(minAvailable="150%", unhealthyPodEvictionPolicy="Never"),
        'PodDisruptionBudget.policy "web" is invalid: [spec.minAvailable: Invalid value: '
        '"150%": must not be greater than 100%, spec.unhealthyPodEvictionPolicy: Unsupported '
        'value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"]',
    ),
    (
        _budget(maxUnavailable=-1, selector={"matchLabels": {"app": "-web"}}),
        'PodDisruptionBudget.policy "web" is invalid: [spec.maxUnavailable: Invalid value: -1: '
        "must be greater than or equal to 0, spec.selector.matchLabels: Invalid value: "
        '"-web": a valid label must be an empty string or consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]",
    ),
    (
        _lease(leaseDurationSeconds=0, leaseTransitions=-1),
        'Lease.coordination.k8s.io "leader" is invalid: [spec.leaseDurationSeconds: Invalid '
        "value: 0: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be "
        "greater than or equal to 0]",
    ),
    (
        _lease(strategy="Newest", preferredHolder="a"),
        'Lease.coordination.k8s.io "leader" is invalid: spec.strategy.strategy: Unsupported '
        'value: "Newest": supported values: "OldestEmulationVersion"',
    ),
    (
        _lease(preferredHolder="a"),
        'Lease.coordination.k8s.io "leader" is invalid: spec.preferredHolder: Forbidden: may '
        "only be specified if `strategy` is defined",
    ),
]


@pytest.mark.parametrize(("doc", "message"), REFUSALS)
def test_invalid_objects_are_refused_with_upstream_texts(
    registry: Registry, doc: Obj, message: str
) -> None:
    assert refusal(registry, doc) == message


def test_a_binding_s_role_ref_cannot_change(registry: Registry) -> None:
    created = create(registry, document("RoleBinding"))
    changed = {**created, "roleRef": {**created["roleRef"], "name": "other"}}
    with pytest.raises(InvalidObjectError) as caught:
        registry.handlers.update(HOST_CLUSTER, target("RoleBinding", "read-pods"), changed, OPTIONS)
    assert str(to_status(caught.value).message) == (
        'RoleBinding.rbac.authorization.k8s.io "read-pods" is invalid: roleRef: Invalid value: '
        '{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"other"}: cannot change '
        "roleRef"
    )


def test_kinds_are_served_with_upstream_names() -> None:
    expected = {
        "Role": ("roles", True),
        "RoleBinding": ("rolebindings", True),
        "ClusterRole": ("clusterroles", False),
        "ClusterRoleBinding": ("clusterrolebindings", False),
    }
    for kind, (plural, namespaced) in expected.items():
        served = by_kind(kind)
        assert (served.plural, served.namespaced, served.short_names) == (plural, namespaced, ())
        assert served.info.api_version == RBAC
    budgets = by_kind("PodDisruptionBudget")
    assert (budgets.plural, budgets.short_names, budgets.subresources) == (
        "poddisruptionbudgets",
        ("pdb",),
        ("status",),
    )
    assert budgets.info.api_version == "policy/v1"
    leases = by_kind("Lease")
    assert (leases.plural, leases.namespaced, leases.short_names) == ("leases", True, ())
    assert leases.info.api_version == "coordination.k8s.io/v1"


def columns(plural: str) -> list[str]:
    table = table_for(plural)
    assert table is not None
    return [c["name"] + ("*" if c["priority"] else "") for c in table.columns]


def cells(plural: str, item: Obj) -> list[Any]:
    table = table_for(plural)
    assert table is not None
    return table.cells(
        {**item, "metadata": {**item["metadata"], "creationTimestamp": CREATED}}, NOW
    )


def test_role_tables_are_upstream_s_default_table() -> None:
    for plural in ("roles", "clusterroles"):
        assert columns(plural) == ["Name", "Created At"]
    table = table_for("roles")
    assert table is not None
    assert table.columns[1]["type"] == "date"
    assert cells("roles", document("Role")) == ["pod-reader", CREATED]


def test_binding_tables_name_the_role_and_the_subjects() -> None:
    for plural in ("rolebindings", "clusterrolebindings"):
        assert columns(plural) == [
            "Name", "Role", "Age", "Users*", "Groups*", "ServiceAccounts*"
        ]  # fmt: skip
    assert cells("rolebindings", document("RoleBinding")) == [
        "read-pods", "Role/pod-reader", "60m", "jane", "", "default/operator"
    ]  # fmt: skip
    assert cells("clusterrolebindings", document("ClusterRoleBinding")) == [
        "monitoring", "ClusterRole/monitoring", "60m", "", "system:monitoring", ""
    ]  # fmt: skip


def test_kubectl_create_role_and_rolebinding_protobuf_bodies_decode() -> None:
    """``kubectl create role`` / ``rolebinding`` post protobuf: the same JSON comes out."""
    rule = field(1, "get") + field(1, "list") + field(2, "") + field(3, "pods")
    role = envelope(
        "rbac.authorization.k8s.io/v1", "Role", field(1, metadata("r")) + field(2, rule)
    )
    assert decode_protobuf(role) == {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": {"name": "r"},
        "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}],
    }
    subject = field(1, "ServiceAccount") + field(3, "op") + field(4, "default")
    ref = field(1, "rbac.authorization.k8s.io") + field(2, "Role") + field(3, "r")
    raw = field(1, metadata("rb")) + field(2, subject) + field(3, ref)
    assert decode_protobuf(envelope(RBAC, "RoleBinding", raw))["subjects"] == [
        {"kind": "ServiceAccount", "name": "op", "namespace": "default"}
    ]


def test_a_budget_starts_with_an_empty_status_and_takes_status_writes(registry: Registry) -> None:
    sent = {**document("PodDisruptionBudget"), "status": {"disruptionsAllowed": 5}}
    created = create(registry, sent)
    empty = {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}
    assert created["status"] == empty
    assert created["metadata"]["generation"] == 1
    status_target = Target(by_kind("PodDisruptionBudget"), "default", "web", "status")
    refused = {**created, "status": {**empty, "currentHealthy": -1}}
    with pytest.raises(InvalidObjectError, match=r"status.currentHealthy: Invalid value: -1"):
        registry.handlers.update(HOST_CLUSTER, status_target, refused, OPTIONS)


def test_budget_table() -> None:
    assert columns("poddisruptionbudgets") == [
        "Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"
    ]  # fmt: skip
    budget = {**document("PodDisruptionBudget"), "status": {"disruptionsAllowed": 1}}
    assert cells("poddisruptionbudgets", budget) == ["web", "50%", "N/A", 1, "60m"]


def test_kubectl_create_pdb_protobuf_body_decodes() -> None:
    int_or_percent = field(1, 1) + field(3, "50%")
    selector = field(1, field(1, "app") + field(2, "web"))
    spec = field(1, int_or_percent) + field(2, selector)
    raw = field(1, metadata("web")) + field(2, spec) + field(3, b"")
    assert decode_protobuf(envelope("policy/v1", "PodDisruptionBudget", raw)) == {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
        "status": {},
    }


def test_lease_keeps_its_micro_times_and_prints_its_holder(registry: Registry) -> None:
    created = create(registry, document("Lease"), "legal-ai")
    assert created["spec"]["renewTime"] == "2026-11-25T11:59:50.123456Z"
    assert columns("leases") == ["Name", "Holder", "Age"]
    assert cells("leases", created) == ["operator-leader", "operator-7d9f_0b3c", "60m"]
