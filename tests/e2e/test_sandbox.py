"""The sandbox suite: every escape in tests/scenarios/sandbox.yaml, tried by tenant legal-ai
with its own kubeconfig and the real kubectl on a platform whose pods are real processes
(``--runtime process``): pod fields that would open the sandbox are refused at admission,
and what runs inside sees none of allot's data directory, network or devices. Host pods
keep ``hostPath`` mounts; the data directory is masked wherever it lies."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.controllers.sandbox import TOOLS_DIR, Confinement, Sandbox
from tests.e2e.tenancy import REPO, Tenancy, seed_platform
from tests.e2e.test_tenancy_isolation import _host_snapshot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("bwrap") is None,
        reason="bubblewrap is not installed (make test installs it as root: apt-get install "
        "bubblewrap)",
    ),
]
SCENARIOS = yaml.safe_load((REPO / "tests" / "scenarios" / "sandbox.yaml").read_text())
REFUSED = [s for s in SCENARIOS if "refused" in s]
RUN = [s for s in SCENARIOS if "script" in s]
HOST_SECRET = Path("/tmp/allot-host-secret")


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    HOST_SECRET.write_text("a file of the host's /tmp\n")
    try:
        with seed_platform(tmp_path_factory.mktemp("sandbox"), runtime="process") as running:
            yield running
    finally:
        HOST_SECRET.unlink(missing_ok=True)


def _pod(name: str, script: str, spec: Any = None, container: Any = None) -> dict[str, Any]:
    main = {"name": "main", "image": "busybox", "command": ["sh", "-c", script]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "containers": [{**main, **(container or {})}]}
        | (spec or {}),
    }


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:50]


@pytest.mark.parametrize("scenario", REFUSED, ids=[s["name"] for s in REFUSED])
def test_pod_fields_that_open_the_sandbox_are_refused(
    tenancy: Tenancy, scenario: dict[str, Any]
) -> None:
    before = _host_snapshot(tenancy)
    fields = scenario["refused"]
    pod = _pod(_slug(scenario["name"]), "true", fields.get("spec"), fields.get("container"))
    result = tenancy.as_tenant("legal-ai", "create", "-f", "-", stdin=json.dumps(pod), check=False)
    assert result.returncode != 0, f"the escape was accepted:\n{result.stdout}"
    assert re.search(scenario["error"], result.stderr), result.stderr
    assert "(tenant legal-ai)" in result.stderr
    assert _host_snapshot(tenancy) == before


def _environment(tenancy: Tenancy) -> list[dict[str, str]]:
    api = tenancy.cluster.server.api
    needles = [api.registry.tokens.ensure("host"), api.registry.tokens.ensure("research-ai")]
    values = {
        "DATA": str(tenancy.data_dir.resolve()),
        "PORT": str(tenancy.cluster.server.endpoint.url.rsplit(":", 1)[1]),
        "NEEDLES": "\n".join(needles),
        "PY1": os.path.realpath(sys.prefix),
        "PY2": os.path.realpath(sys.base_prefix),
    }
    return [{"name": k, "value": v} for k, v in values.items()]


def _finished_log(tenancy: Tenancy, name: str) -> str:
    def phase() -> str | None:
        status = tenancy.tenant_json("legal-ai", "pod", name).get("status") or {}
        found = status.get("phase")
        return found if found in ("Succeeded", "Failed") else None

    tenancy.wait(phase, f"pod {name} to finish", timeout=60)
    return tenancy.as_tenant("legal-ai", "logs", name).stdout


@pytest.mark.parametrize("scenario", RUN, ids=[s["name"] for s in RUN])
def test_what_runs_inside_sees_nothing_of_the_platform(
    tenancy: Tenancy, scenario: dict[str, Any]
) -> None:
    if scenario.get("as_root_only") and os.geteuid() != 0:
        pytest.skip("allot drops to an unprivileged user only when it runs as root")
    name = _slug(scenario["name"])
    pod = _pod(name, scenario["script"], container={"env": _environment(tenancy)})
    tenancy.as_tenant("legal-ai", "create", "-f", "-", stdin=json.dumps(pod))
    log = _finished_log(tenancy, name)
    assert re.search(scenario["output"], log), log
    for needle in _environment(tenancy)[2]["value"].splitlines():
        assert needle not in log


def test_host_pods_mount_host_paths(tenancy: Tenancy, tmp_path: Path) -> None:
    """What tenants are refused stays open to the platform's own (host) pods."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "greeting").write_text("from the host\n")
    shared.chmod(0o755)
    tmp_path.chmod(0o755)
    pod = _pod(
        "host-path-reader",
        "cat /mnt/shared/greeting",
        {"volumes": [{"name": "shared", "hostPath": {"path": str(shared)}}]},
        {"volumeMounts": [{"name": "shared", "mountPath": "/mnt/shared", "readOnly": True}]},
    )
    tenancy.cluster.apply(pod)
    tenancy.wait(
        lambda: tenancy.host_json("pod", "host-path-reader")["status"].get("phase") == "Succeeded",
        "the host pod to succeed",
        timeout=60,
    )
    assert tenancy.cluster.kubectl("logs", "host-path-reader").stdout == "from the host\n"


def test_the_data_directory_is_masked_where_a_bound_directory_holds_it() -> None:
    """A data directory inside a directory the sandbox shows (here ``/etc``) is covered by
    an empty tmpfs, after every bind."""
    data = Path("/etc/allot-data")
    sandbox = Sandbox("/usr/bin/bwrap", "/usr/bin/setpriv", [data], as_root=True)
    confinement = Confinement(hostname="p", directory=Path("/srv/pod"))
    argv = sandbox.command(["true"], confinement)
    separator = argv.index("--")
    mask = argv.index(str(data)) - 1
    assert argv[mask] == "--tmpfs"
    assert mask > max(i for i, a in enumerate(argv[:separator]) if a == "--ro-bind")
    assert argv[separator + 1 :] == [
        "/usr/bin/setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
        "true",
    ]
    assert TOOLS_DIR not in argv  # no shim without simulated devices
    private_tmp = argv.index("/tmp") - 1
    assert argv[private_tmp] == "--tmpfs"
    assert private_tmp < argv.index("--ro-bind")  # binds under /tmp stay visible


def test_tenant_pod_asking_for_the_host_is_refused_by_the_runtime_too() -> None:
    """The runtime's own check, for a pod that reached it without the policy (a policy
    deleted by the platform owner, say)."""
    pod = _pod("p", "true", {"hostNetwork": True, "securityContext": {"runAsUser": 0}})
    pod["metadata"]["uid"] = str(uuid.uuid4())
    with pytest.raises(Exception, match="cannot use hostNetwork, runAsUser 0"):
        Confinement.of(pod, pod["spec"]["containers"][0], Path("/srv"), tenant_pod=True)
    allowed = Confinement.of(pod, pod["spec"]["containers"][0], Path("/srv"), tenant_pod=False)
    assert allowed.host_network
    assert allowed.run_as_user == 0
