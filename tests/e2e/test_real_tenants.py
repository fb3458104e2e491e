"""Tenants on the real engine: a kube-apiserver and kube-controller-manager of their own.

``allot up --engine kubernetes`` runs as a user types it; ``allot tenant create`` with
seed 000's legal-ai values file starts the tenant's control plane, and the real kubectl
with the tenant's kubeconfig finds its own cluster: its own administrator, its own
ServiceAccount issuer, a Deployment whose ReplicaSet and pods upstream's controllers make
(a tenant has no scheduler and no nodes: its pods are synced to the host and placed there),
nothing of it on the host but the pods' twins and the
namespace ``tenant-legal-ai`` with its entitlement objects, whose real
ValidatingAdmissionPolicy refuses a claim there for a class outside legal-ai's
entitlement, as the same policy in the tenant's own API server refuses it in the tenant's
own kubectl call, until the class is relabelled into the entitlement. Its API server
killed, the tenant is listed Unhealthy; a restart of ``allot up`` brings it back with its
objects;
``allot tenant delete`` stops its processes (by PID) and removes its etcd keys, files and
host namespace. A host namespace allot did not make for a tenant is never adopted. Nothing
here builds: without ``make kube``'s binaries these skip.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from allot.kubeengine import pki, tenants
from tests.realkube import ALLOT, Up, allot_up, needs_real_kube, program_of

pytestmark = [pytest.mark.slow, needs_real_kube]
REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO / "examples" / "seeds"
PLANE = {"kube-apiserver", "kube-controller-manager"}


def _allot(up: Up, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(up.home), "KUBECONFIG": str(up.home / "config")}
    return subprocess.run(
        [ALLOT, *args, "--data-dir", str(up.data_dir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )


def _listed(up: Up) -> dict[str, list[str]]:
    done = _allot(up, "tenant", "list")
    assert done.returncode == 0, done.stderr
    return {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:]}


def _wait_phase(up: Up, name: str, phase: str) -> list[str]:
    deadline = time.monotonic() + 180
    while (row := _listed(up).get(name)) is None or row[1] != phase:
        assert time.monotonic() < deadline, f"tenant {name} never {phase}: {row}"
        time.sleep(0.5)
    return row


def _wait_for_classes(up: Up, name: str, classes: str) -> None:
    deadline = time.monotonic() + 60
    while (row := _listed(up)[name])[3] != classes:
        assert time.monotonic() < deadline, f"tenant {name} never entitled to {classes}: {row}"
        time.sleep(0.5)


def _etcd_keys(up: Up, name: str) -> int:
    """How many keys the host etcd holds under the tenant's prefix (read by the test itself:
    the host kube-apiserver's --etcd-servers names etcd's port)."""
    apiserver = next(pid for pid, program in up.children().items() if program == "kube-apiserver")
    flags = Path(f"/proc/{apiserver}/cmdline").read_bytes().decode().split("\0")
    port = int(next(f for f in flags if f.startswith("--etcd-servers=")).rsplit(":", 1)[1])
    prefix = f"/tenants/{name}/".encode()
    body = {
        "key": base64.b64encode(prefix).decode(),
        "range_end": base64.b64encode(prefix[:-1] + b"0").decode(),
        "count_only": True,
    }
    answer = tenants.etcd_request(pki.Pki(up.data_dir / "pki"), port, "/v3/kv/range", body)
    return int(answer.get("count") or 0)


def _claim(name: str, device_class: str, namespace: str) -> dict[str, object]:
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [request]}},
    }


def _wait_refused(up: Up, claim: dict[str, object], kubeconfig: Path | None = None) -> str:
    """A real kube-apiserver's refusal of ``claim`` (a new policy binding takes a moment to
    reach its admission)."""
    deadline = time.monotonic() + 30
    while True:
        document = json.dumps(claim)
        done = up.kubectl(
            "create",
            "--dry-run=server",
            "-f",
            "-",
            stdin=document,
            check=False,
            kubeconfig=kubeconfig,
        )
        if done.returncode != 0:
            return done.stderr
        assert time.monotonic() < deadline, f"the claims policy never refused {claim}"
        time.sleep(0.5)


def _wait_accepted(up: Up, claim: dict[str, object], kubeconfig: Path | None = None) -> None:
    """``claim`` admitted (dry run) once the params a policy reads have caught up."""
    deadline = time.monotonic() + 30
    while True:
        done = up.kubectl(
            "create",
            "--dry-run=server",
            "-f",
            "-",
            stdin=json.dumps(claim),
            check=False,
            kubeconfig=kubeconfig,
        )
        if done.returncode == 0:
            return
        assert time.monotonic() < deadline, f"{claim} never admitted: {done.stderr}"
        time.sleep(0.5)


def _refusal(name: str) -> str:
    return (
        f'resourceclaims.resource.k8s.io "{name}" is forbidden: ValidatingAdmissionPolicy '
        "'allot-tenant-claims' with binding 'allot-tenant-claims.legal-ai' denied request: "
        "device class gpu-slice is not in the entitlement of tenant legal-ai (entitled: "
        "gpu-whole)"
    )


def _issuer(token: str) -> str:
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["iss"])


def test_a_tenant_runs_its_own_control_plane_dies_comes_back_with_its_state_and_is_deleted(
    tmp_path: Path,
) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()
    values = str(SEEDS / "000-legal-ai-vcluster-config.yaml")
    with allot_up(data, home) as up:
        up.kubectl("apply", "-f", str(SEEDS / "000-gpu-deviceclasses.yaml"))
        up.kubectl("create", "namespace", "tenant-squatter")
        squatted = _allot(up, "tenant", "create", "squatter")
        assert squatted.returncode == 1
        assert squatted.stderr.startswith(
            'error: namespaces "tenant-squatter" already exists on the host and is not '
            "tenant squatter's"
        )
        created = _allot(up, "tenant", "create", "legal-ai", "-f", values)
        assert created.returncode == 0, created.stderr
        kubeconfig = data / "kubeconfigs" / "legal-ai.yaml"
        assert created.stdout.splitlines() == [
            "tenant.allot.dev/legal-ai created",
            "  host namespace: tenant-legal-ai   entitled classes: gpu-whole",
            f"  kubeconfig: {kubeconfig}",
        ]
        row = _listed(up)["legal-ai"]
        assert row[:4] == ["legal-ai", "Ready", "tenant-legal-ai", "gpu-whole"]
        assert row[4].startswith("https://127.0.0.1:")
        assert row[4] not in up.banner[1]
        assert "squatter" not in _listed(up)

        def tenant(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
            return up.kubectl(*args, kubeconfig=kubeconfig, stdin=stdin)

        connected = _allot(up, "tenant", "connect", "legal-ai")
        assert connected.returncode == 0, connected.stderr
        mine = home / "config"  # the user's kubeconfig, where connect merged the context
        whoami = json.loads(up.kubectl("auth", "whoami", "-o", "json", kubeconfig=mine).stdout)
        assert whoami["status"]["userInfo"]["username"] == "system:allot:legal-ai"
        token = tenant("create", "token", "default").stdout.strip()
        assert _issuer(token) == "https://legal-ai.tenant-legal-ai.svc"
        assert tenant("get", "nodes", "-o", "name").stdout == ""
        tenant("create", "deployment", "web", "--image=nginx", "--replicas=2")
        tenant("wait", "--for=jsonpath={.status.replicas}=2", "replicaset", "--all")
        pods = json.loads(tenant("get", "pods", "-o", "json").stdout)["items"]
        assert len(pods) == 2  # made by the tenant's own ReplicaSet controller
        assert up.kubectl("get", "deployments", "-A", "-o", "name").stdout == ""
        labels = up.get_json("namespace", "tenant-legal-ai")["metadata"]["labels"]
        assert labels["allot.dev/tenant"] == "legal-ai"
        host_claim = _claim("slice.team", "gpu-slice", "tenant-legal-ai")
        assert _refusal("slice.team") in _wait_refused(up, host_claim)
        up.apply(_claim("whole.team", "gpu-whole", "tenant-legal-ai"))  # entitled: passes
        tenant_claim = _claim("slice", "gpu-slice", "default")
        assert _refusal("slice") in _wait_refused(up, tenant_claim, kubeconfig)  # in its own call
        tenant("create", "-f", "-", stdin=json.dumps(_claim("whole", "gpu-whole", "default")))
        up.kubectl(
            "label", "deviceclass", "gpu-slice", "gpu.platform/tenant=legal-ai", "--overwrite"
        )
        _wait_for_classes(up, "legal-ai", "gpu-slice,gpu-whole")  # the entitlement follows
        _wait_accepted(up, host_claim)
        _wait_accepted(up, tenant_claim, kubeconfig)
        pids = tenants.recorded_pids(data, "legal-ai")
        assert {program_of(pid) for pid in pids.values()} == PLANE
        assert set(pids.values()) <= set(up.children())
        os.kill(pids["kube-apiserver"], signal.SIGKILL)
        _wait_phase(up, "legal-ai", "Unhealthy")
        shown = json.loads(_allot(up, "tenant", "list", "-o", "json").stdout)
        message = shown["items"][0]["status"]["conditions"][0]["message"]
        assert message.startswith("kube-apiserver exited with status -9; the last lines of")
        assert program_of(pids["kube-controller-manager"]) == ""  # stopped with it
        assert up.get_json("namespace", "default")  # the host goes on
    with allot_up(data, home) as again:
        _wait_phase(again, "legal-ai", "Ready")
        names = up.kubectl("get", "deployment", "-o", "name", kubeconfig=kubeconfig).stdout
        assert names.split() == ["deployment.apps/web"]
        assert _etcd_keys(again, "legal-ai") > 0
        pids = tenants.recorded_pids(data, "legal-ai")
        deleted = _allot(again, "tenant", "delete", "legal-ai")
        assert deleted.returncode == 0, deleted.stderr
        assert deleted.stdout.splitlines()[0] == 'tenant.allot.dev "legal-ai" deleted'
        assert deleted.stdout.splitlines()[1].startswith('Removed context "allot_legal-ai_')
        assert [pid for pid in pids.values() if program_of(pid) in PLANE] == []
        assert _etcd_keys(again, "legal-ai") == 0
        assert not kubeconfig.exists()
        assert not (data / "kube" / "tenants" / "legal-ai").exists()
        assert "legal-ai" not in json.loads((data / "tokens.json").read_text())
        assert _listed(again) == {}
        namespace = again.kubectl("get", "namespace", "tenant-legal-ai", check=False)
        assert namespace.returncode != 0 or "Terminating" in namespace.stdout
