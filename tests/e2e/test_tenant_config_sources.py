"""A tenant's pod reads its ConfigMaps and Secrets, as on vCluster: the sync copies the
ones a pod uses to the host namespace before the pod's twin, so the node agent (the
process runtime) finds them; a missing one holds the pod with the kubelet's
``CreateContainerConfigError``, worded with the tenant's own names, until the tenant
creates it. Driven by the real kubectl with the tenant's kubeconfig."""

from __future__ import annotations

import json
import shutil
import socket
import sys
from pathlib import Path

import pytest

from tests.e2e.tenancy import Tenancy, seed_platform

pytestmark = pytest.mark.slow
SHOW = "import os; print(os.environ['MODE'], os.environ['DB_token'], os.environ.get('LATER'))"


def _pod(name: str, later: str) -> str:
    container = {
        "name": "app",
        "image": "python:3.12-slim",
        "command": [sys.executable, "-c", SHOW],
        "envFrom": [{"secretRef": {"name": "creds"}, "prefix": "DB_"}],
        "env": [
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
            {"name": "LATER", "valueFrom": {"configMapKeyRef": {"name": later, "key": "k"}}},
        ],
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }
    return json.dumps(pod)


def _waiting_message(tenancy: Tenancy, name: str) -> str:
    status = tenancy.tenant_json("legal-ai", "pod", name).get("status") or {}
    for container in status.get("containerStatuses") or []:
        return str(((container.get("state") or {}).get("waiting") or {}).get("message") or "")
    return ""


def _phase(tenancy: Tenancy, name: str) -> str:
    return str((tenancy.tenant_json("legal-ai", "pod", name).get("status") or {}).get("phase"))


def test_a_tenant_pod_reads_its_config_maps_and_secrets(tmp_path: Path) -> None:
    with seed_platform(tmp_path, runtime="process") as tenancy:
        tenant = "legal-ai"
        tenancy.as_tenant(tenant, "create", "configmap", "settings", "--from-literal=mode=fast")
        tenancy.as_tenant(tenant, "create", "configmap", "unused", "--from-literal=x=y")
        tenancy.as_tenant(
            tenant, "create", "secret", "generic", "creds", "--from-literal=token=t0k"
        )
        tenancy.as_tenant(tenant, "apply", "-f", "-", stdin=_pod("app", "later"))
        message = tenancy.wait(lambda: _waiting_message(tenancy, "app"), "the pod to wait")
        assert message == 'configmap "later" not found'  # the tenant's name, not the twin's
        described = tenancy.as_tenant(tenant, "describe", "pod", "app").stdout
        assert "CreateContainerConfigError" in described
        assert 'Error: configmap "later" not found' in described
        host = tenancy.host_json("configmaps,secrets", "-n", "tenant-legal-ai")
        names = sorted(f"{i['kind']}/{i['metadata']['name']}" for i in host["items"])
        assert "ConfigMap/settings.default" in names
        assert "Secret/creds.default" in names
        assert "ConfigMap/unused.default" not in names  # no pod uses it
        tenancy.as_tenant(tenant, "create", "configmap", "later", "--from-literal=k=now")
        tenancy.wait(lambda: _phase(tenancy, "app") == "Succeeded", "the pod to run", 30)
        assert tenancy.as_tenant(tenant, "logs", "app").stdout.split() == ["fast", "t0k", "now"]
        tenancy.as_tenant(tenant, "delete", "pod", "app")

        def gone() -> bool:
            left = tenancy.host_json("configmaps,secrets", "-n", "tenant-legal-ai")["items"]
            return not any(i["metadata"]["name"].endswith(".default") for i in left)

        tenancy.wait(gone, "the twins of the sources no pod uses any more")


def test_a_tenant_pod_sees_its_own_name_namespace_uid_and_hostname(tmp_path: Path) -> None:
    """The downward API and the hostname give the tenant's names, not the twin's
    (``who.default`` in ``tenant-legal-ai``), as vCluster rewrites them."""
    show = (
        "import os, socket; "
        "print(os.environ['POD'], os.environ['NS'], os.environ['UID'], socket.gethostname())"
    )
    fields = {"POD": "metadata.name", "NS": "metadata.namespace", "UID": "metadata.uid"}
    env = [{"name": k, "valueFrom": {"fieldRef": {"fieldPath": v}}} for k, v in fields.items()]
    container = {"name": "app", "image": "x", "command": [sys.executable, "-c", show], "env": env}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "who"},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }
    with seed_platform(tmp_path, runtime="process") as tenancy:
        tenancy.as_tenant("legal-ai", "apply", "-f", "-", stdin=json.dumps(pod))
        tenancy.wait(lambda: _phase(tenancy, "who") == "Succeeded", "the pod to run", 30)
        uid = tenancy.tenant_json("legal-ai", "pod", "who")["metadata"]["uid"]
        logs = tenancy.as_tenant("legal-ai", "logs", "who").stdout.split()
        sandboxed = shutil.which("bwrap") is not None  # the UTS namespace sets the hostname
        assert logs == ["who", "default", uid, "who" if sandboxed else socket.gethostname()]
