"""Each tenant installs its own CustomResourceDefinitions with the real kubectl, as in a
vCluster: two tenants define ``widgets.example.com`` with different schemas and each gets
its own (validation, printer columns, ``kubectl explain``, ``api-resources``); a tenant's
CRD and objects are invisible to the other tenant and to the host, the host's CRDs to the
tenants; ``kubectl delete crd`` removes the tenant's objects of that kind and nobody
else's. One platform for the module (tenants legal-ai and research-ai)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import KUBECTL
from tests.e2e.tenancy import REPO, Tenancy, seed_platform

pytestmark = pytest.mark.slow
LEGAL, RESEARCH = "legal-ai", "research-ai"
HOST_CRDS = (
    REPO / "tests" / "data" / "prometheusrule-crd.yaml",
    REPO / "tests" / "golden" / "render" / "00-tenant-crd.yaml",
)


def widget_crd(size_type: str, column: str, *, group: str = "example.com") -> str:
    """``widgets.<group>``: ``spec.size`` of ``size_type``, shown in column ``column``."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": column, "type": size_type, "jsonPath": ".spec.size"}
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["size"],
                                    "properties": {
                                        "size": {
                                            "type": size_type,
                                            "description": f"How big, as a {size_type}.",
                                        }
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    return json.dumps(crd)


def widget(name: str, size: object, *, group: str = "example.com") -> str:
    return json.dumps(
        {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": name},
            "spec": {"size": size},
        }
    )


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    """Both tenants with their own widgets.example.com (and one ``w`` each), legal-ai also
    with widgets.legal.example.com (``mine``), the host with its own CRDs."""
    with seed_platform(tmp_path_factory.mktemp("tenant-crds")) as running:
        for path in HOST_CRDS:
            running.cluster.kubectl("apply", "-f", str(path))
        running.as_tenant(LEGAL, "apply", "-f", "-", stdin=widget_crd("integer", "Size"))
        running.as_tenant(RESEARCH, "apply", "-f", "-", stdin=widget_crd("string", "Colour"))
        for tenant in (LEGAL, RESEARCH):  # as an installer waits, in the tenant's cluster
            running.as_tenant(
                tenant, "wait", "--for", "condition=established",
                "crd/widgets.example.com", "--timeout=20s",
            )  # fmt: skip
        running.as_tenant(LEGAL, "apply", "-f", "-", stdin=widget("w", 3))
        running.as_tenant(RESEARCH, "apply", "-f", "-", stdin=widget("w", "red"))
        only_legal = widget_crd("integer", "Size", group="legal.example.com")
        running.as_tenant(LEGAL, "apply", "-f", "-", stdin=only_legal)
        mine = widget("mine", 1, group="legal.example.com")
        running.as_tenant(LEGAL, "apply", "-f", "-", stdin=mine)
        yield running


def _items(tenancy: Tenancy, tenant: str, *args: str) -> list[Any]:
    return [i["metadata"]["name"] for i in tenancy.tenant_json(tenant, *args)["items"]]


def test_each_tenant_serves_its_own_schema_columns_and_explain(tenancy: Tenancy) -> None:
    legal = tenancy.as_tenant(LEGAL, "get", "widgets").stdout.splitlines()
    assert legal[0].split() == ["NAME", "SIZE"]
    assert legal[1].split() == ["w", "3"]
    research = tenancy.as_tenant(RESEARCH, "get", "wd").stdout.splitlines()
    assert research[0].split() == ["NAME", "COLOUR"]
    assert research[1].split() == ["w", "red"]
    refused = tenancy.as_tenant(LEGAL, "apply", "-f", "-", stdin=widget("x", "red"), check=False)
    assert refused.returncode != 0
    assert 'spec.size in body must be of type integer: "string"' in refused.stderr
    for tenant, size_type in ((LEGAL, "integer"), (RESEARCH, "string")):
        resources = tenancy.as_tenant(tenant, "api-resources", "--api-group", "example.com")
        assert resources.stdout.splitlines()[1].split() == [
            "widgets",
            "wd",
            "example.com/v1",
            "true",
            "Widget",
        ]
        explained = tenancy.as_tenant(tenant, "explain", "widgets.spec.size").stdout
        assert f"FIELD: size <{size_type}>" in explained
        assert f"How big, as a {size_type}." in explained


def test_a_tenants_crd_is_invisible_to_the_other_tenant_and_the_host(tenancy: Tenancy) -> None:
    assert _items(tenancy, LEGAL, "widgets.legal.example.com") == ["mine"]
    missing = 'the server doesn\'t have a resource type "widgets"'
    other = tenancy.as_tenant(RESEARCH, "get", "widgets.legal.example.com", check=False)
    assert other.returncode != 0
    assert "doesn't have a resource type" in other.stderr
    host = tenancy.cluster.kubectl("get", "widgets", "-A", check=False)
    assert host.returncode != 0
    assert missing in host.stderr
    host_crds = [i["metadata"]["name"] for i in tenancy.host_json("crds")["items"]]
    assert host_crds == [
        "alerts.allot.dev",
        "prometheusrules.monitoring.coreos.com",
        "tenants.allot.dev",
    ]
    assert _items(tenancy, RESEARCH, "crds") == ["widgets.example.com"]
    assert _items(tenancy, LEGAL, "crds") == ["widgets.example.com", "widgets.legal.example.com"]
    groups = tenancy.as_tenant(RESEARCH, "api-resources", "-o", "name").stdout.split()
    assert "widgets.example.com" in groups
    assert "widgets.legal.example.com" not in groups
    assert "prometheusrules.monitoring.coreos.com" not in groups
    tenants = tenancy.as_tenant(RESEARCH, "explain", "prometheusrules", check=False)
    assert tenants.returncode != 0
    on_host = tenancy.cluster.kubectl("explain", "prometheusrules.spec.groups").stdout
    assert "FIELD: groups <[]Object>" in on_host


def test_deleting_a_tenants_crd_removes_its_objects_only_there(tenancy: Tenancy) -> None:
    tenancy.as_tenant(LEGAL, "apply", "-f", "-", stdin=widget("gone", 5))
    tenancy.as_tenant(LEGAL, "delete", "crd", "widgets.example.com")
    after = tenancy.as_tenant(LEGAL, "get", "widgets.example.com", check=False)
    assert after.returncode != 0
    tenancy.as_tenant(LEGAL, "apply", "-f", "-", stdin=widget_crd("integer", "Size"))
    assert _items(tenancy, LEGAL, "widgets.example.com") == []
    assert _items(tenancy, RESEARCH, "widgets.example.com") == ["w"]
    assert _items(tenancy, LEGAL, "widgets.legal.example.com") == ["mine"]


def test_a_tenants_watch_sees_its_own_widgets_only(tenancy: Tenancy) -> None:
    """``kubectl get widgets -w`` in legal-ai: a widget research-ai creates meanwhile (same
    group, same plural, same namespace) never reaches it; legal-ai's own does."""
    env = {**os.environ, "HOME": str(tenancy.cluster.home)}
    env["KUBECONFIG"] = str(tenancy.kubeconfig(LEGAL))
    command = [KUBECTL, "get", "widgets.example.com", "-w", "-o", "name"]
    watch = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    timer = threading.Timer(30, watch.kill)  # a watch that never shows "late" fails, not hangs
    timer.start()
    seen: list[str] = []
    try:
        tenancy.as_tenant(RESEARCH, "apply", "-f", "-", stdin=widget("theirs", "blue"))
        tenancy.as_tenant(LEGAL, "apply", "-f", "-", stdin=widget("late", 7))
        assert watch.stdout is not None
        for line in watch.stdout:
            seen.append(line.strip())
            if line.strip() == "widget.example.com/late":
                break
    finally:
        timer.cancel()
        watch.kill()
        watch.communicate()
    assert "widget.example.com/late" in seen
    assert "widget.example.com/theirs" not in seen
