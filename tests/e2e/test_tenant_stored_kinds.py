"""A Helm-rendered manifest with a ServiceAccount, Role, RoleBinding, PodDisruptionBudget
and Lease applies in a tenant's virtual cluster with the real kubectl, as on vCluster:
the kinds are discovered, stored, listed with upstream's columns and short names; the
tenant's disruption controller keeps the budget's status and its evictions respect it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.tenancy import Tenancy, seed_platform

pytestmark = pytest.mark.slow
TENANT = "legal-ai"
CHART = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: operator}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: operator}
rules:
  - apiGroups: [""]
    resources: [pods, configmaps]
    verbs: [get, list, watch]
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [get, create, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: operator}
subjects:
  - {kind: ServiceAccount, name: operator, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: operator}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: operator}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: operator}}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: operator-leader}
spec: {holderIdentity: operator-0, leaseDurationSeconds: 15}
"""
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "operator-0", "labels": {"app": "operator"}},
    "spec": {"containers": [{"name": "op", "image": "busybox", "command": ["sleep", "3600"]}]},
}


def test_a_chart_with_rbac_a_budget_and_a_lease_applies_in_a_tenant(tmp_path: Path) -> None:
    with seed_platform(tmp_path) as tenancy:
        applied = tenancy.as_tenant(TENANT, "apply", "-f", "-", stdin=CHART).stdout
        assert applied.splitlines() == [
            "serviceaccount/operator created",
            "role.rbac.authorization.k8s.io/operator created",
            "rolebinding.rbac.authorization.k8s.io/operator created",
            "poddisruptionbudget.policy/operator created",
            "lease.coordination.k8s.io/operator-leader created",
        ]
        again = tenancy.as_tenant(TENANT, "apply", "-f", "-", stdin=CHART).stdout
        assert all(line.endswith(" unchanged") for line in again.splitlines()), again
        resources = tenancy.as_tenant(TENANT, "api-resources").stdout
        for plural in ("roles", "rolebindings", "clusterroles", "poddisruptionbudgets", "leases"):
            assert f"\n{plural} " in resources, plural
        table = tenancy.as_tenant(TENANT, "get", "pdb").stdout.splitlines()
        assert table[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED",
                                    "DISRUPTIONS", "AGE"]  # fmt: skip
        assert table[1].split()[:4] == ["operator", "1", "N/A", "0"]
        leases = tenancy.as_tenant(TENANT, "get", "leases").stdout.splitlines()
        assert leases[1].split()[:2] == ["operator-leader", "operator-0"]
        wide = tenancy.as_tenant(TENANT, "get", "rolebinding", "operator", "-o", "wide").stdout
        assert wide.splitlines()[1].split()[:2] == ["operator", "Role/operator"]
        assert "default/operator" in wide
        roles = tenancy.as_tenant(TENANT, "get", "roles").stdout.splitlines()
        assert roles[0].split() == ["NAME", "CREATED", "AT"]
        refused = tenancy.as_tenant(
            TENANT, "create", "rolebinding", "bad", "--role=operator", "--user=", check=False
        )
        assert refused.returncode == 1
        _the_budget_holds_the_tenant_s_only_operator_pod(tenancy)
        host = tenancy.host_json("roles,poddisruptionbudgets,leases", "-A")["items"]
        assert [i["metadata"]["name"] for i in host] == []  # stored in the tenant, not synced


def _the_budget_holds_the_tenant_s_only_operator_pod(tenancy: Tenancy) -> None:
    tenancy.as_tenant(TENANT, "apply", "-f", "-", stdin=json.dumps(POD))
    tenancy.as_tenant(TENANT, "wait", "--for=condition=Ready", "pod/operator-0", "--timeout=30s")
    drained = tenancy.as_tenant(
        TENANT, "drain", "--pod-selector=app=operator", "--timeout=3s", "--force",
        "--ignore-daemonsets", *_nodes(tenancy), check=False
    )  # fmt: skip
    assert "Cannot evict pod as it would violate the pod's disruption budget." in drained.stderr
    assert tenancy.tenant_json(TENANT, "pod", "operator-0")["metadata"].get(
        "deletionTimestamp"
    ) is None  # fmt: skip
    status = tenancy.tenant_json(TENANT, "pdb", "operator")["status"]
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "currentHealthy": 1, "desiredHealthy": 1, "disruptionsAllowed": 0, "expectedPods": 1,
        "observedGeneration": 1,
    }  # fmt: skip
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("DisruptionAllowed", "False", "InsufficientPods")
    ]
    second = {**POD, "metadata": {"name": "operator-1", "labels": {"app": "operator"}}}
    tenancy.as_tenant(TENANT, "apply", "-f", "-", stdin=json.dumps(second))
    tenancy.as_tenant(
        TENANT, "wait", "--for=jsonpath={.status.disruptionsAllowed}=1", "pdb/operator",
        "--timeout=30s"
    )  # fmt: skip
    table = tenancy.as_tenant(TENANT, "get", "pdb", "operator").stdout.splitlines()
    assert table[1].split()[:4] == ["operator", "1", "N/A", "1"]


def _nodes(tenancy: Tenancy) -> list[str]:
    node = tenancy.tenant_json(TENANT, "pod", "operator-0")["spec"]["nodeName"]
    return [node]
