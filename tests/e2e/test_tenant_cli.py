"""``allot tenant`` verbs against a running platform, and their errors (no traceback)."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from allot.cli.main import main as allot
from tests.e2e.tenancy import REPO, Tenancy, seed_platform, write_values

pytestmark = pytest.mark.slow
KUBECTL = str(Path(sys.executable).with_name("kubectl"))


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    with seed_platform(tmp_path_factory.mktemp("cli")) as running:
        yield running


def test_list_as_json(tenancy: Tenancy, capsys: pytest.CaptureFixture[str]) -> None:
    assert allot(["tenant", "list", "-o", "json", "--data-dir", str(tenancy.data_dir)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (listed["apiVersion"], listed["kind"]) == ("v1", "List")
    tenants = listed["items"]
    assert [t["metadata"]["name"] for t in tenants] == ["legal-ai", "research-ai"]
    assert tenants[0]["status"]["entitledDeviceClasses"] == ["gpu-whole"]
    assert all("managedFields" not in t["metadata"] for t in tenants)  # as kubectl get -o json


def test_list_as_yaml_table_and_wide(tenancy: Tenancy, capsys: pytest.CaptureFixture[str]) -> None:
    data = ["--data-dir", str(tenancy.data_dir)]
    assert allot(["tenant", "list", "-o", "yaml", *data]) == 0
    listed = yaml.safe_load(capsys.readouterr().out)
    assert listed["kind"] == "List"
    assert [t["metadata"]["name"] for t in listed["items"]] == ["legal-ai", "research-ai"]
    assert allot(["tenant", "list", *data]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["NAME", "PHASE", "NAMESPACE", "CLASSES", "SERVER"]
    assert table[1].split()[:4] == ["legal-ai", "Ready", "tenant-legal-ai", "gpu-whole"]
    assert allot(["tenant", "list", "-o", "wide", *data]) == 0
    wide = capsys.readouterr().out.splitlines()
    assert wide[0].split() == ["NAME", "PHASE", "NAMESPACE", "CLASSES", "SERVER", "QUOTA",
                               "GPU-MEMORY"]  # fmt: skip
    assert "gpu-whole.deviceclass.resource.k8s.io/devices=1" in wide[1]


def test_connect_runs_a_command_with_the_tenant_kubeconfig(tenancy: Tenancy) -> None:
    connect = ["tenant", "connect", "research-ai", "--data-dir", str(tenancy.data_dir)]
    command = [KUBECTL, "get", "deviceclasses", "-o", "name"]
    result = subprocess.run(
        [sys.executable, "-m", "allot.cli.main", *connect, "--", *command],
        capture_output=True,
        text=True,
        check=False,
        env={"HOME": str(tenancy.data_dir)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["deviceclass.resource.k8s.io/gpu-slice"]


def test_connect_prints_the_kubeconfig_with_print(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tenancy.data_dir)
    assert allot(["tenant", "connect", "legal-ai", "--print", "--data-dir", data]) == 0
    assert "/clusters/legal-ai" in capsys.readouterr().out


def test_connect_and_disconnect_switch_the_users_kubectl_context(
    tenancy: Tenancy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As with vcluster connect: plain kubectl then talks to the tenant, in the namespace
    --context-namespace gives (``-n`` is the host namespace, as for vcluster)."""
    home = tmp_path / "home"
    user_config = home / ".kube" / "config"
    user_config.parent.mkdir(parents=True)
    user_config.write_text(tenancy.kubeconfig("host").read_text())  # the host as "before"
    before = yaml.safe_load(user_config.read_text())
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)

    def kubectl(*args: str) -> str:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        result = subprocess.run(
            [KUBECTL, *args], capture_output=True, text=True, env=env, check=True, timeout=60
        )
        return result.stdout

    data = ["--data-dir", str(tenancy.data_dir)]
    argv = ["tenant", "connect", "research-ai", "-n", "tenant-research-ai"]
    assert allot([*argv, "--context-namespace", "team", *data]) == 0
    context = kubectl("config", "current-context").strip()
    assert context == f"allot_research-ai_{tenancy.data_dir.name}"
    assert kubectl("get", "deviceclasses", "-o", "name").split() == [
        "deviceclass.resource.k8s.io/gpu-slice"
    ]
    assert kubectl("config", "view", "--minify", "-o", "jsonpath={..namespace}") == "team"
    assert allot(["tenant", "connect", "legal-ai", *data]) == 0  # hop to another tenant
    assert kubectl("get", "deviceclasses", "-o", "name").split() == [
        "deviceclass.resource.k8s.io/gpu-whole"
    ]
    assert allot(["tenant", "disconnect", *data]) == 0
    after = yaml.safe_load(user_config.read_text())
    assert after["current-context"] == before["current-context"]  # back where it started
    names = {e["name"] for e in after["contexts"]}
    assert names == {e["name"] for e in before["contexts"]} | {context}  # kept, as vcluster
    assert after["clusters"][0] == before["clusters"][0]  # other entries untouched
    assert allot(["tenant", "disconnect", *data]) == 1  # not in an allot context now
    assert oct(user_config.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["tenant", "connect", "nobody"], 1, "error: no tenant 'nobody'"),
        (["tenant", "connect", "host"], 1, "error: no tenant 'host'"),
        (
            ["tenant", "connect", "legal-ai", "--namespace", "legal-ai"],
            1,
            "error: couldn't find vcluster legal-ai in namespace legal-ai: -n is the host "
            "namespace the tenant lives in, as for vcluster connect, and tenant legal-ai lives "
            "in tenant-legal-ai",
        ),
        (
            [
                "tenant",
                "create",
                "x",
                "-f",
                str(REPO / "examples/seeds/000-legal-ai-vcluster-config.yaml"),
                "--project",
                "default",
            ],
            2,
            "won't have any effect when using driver type helm: --project",
        ),
        (["tenant", "create", "legal-ai"], 1, 'tenants.allot.dev "legal-ai" already exists'),
        (["tenant", "create", "host"], 1, 'metadata.name: Invalid value: "host": is reserved'),
        (["tenant", "create", "x", "--quota", "pods"], 2, "--quota pods: expected KEY=VALUE"),
        (["tenant", "create", "x", "--gpu-memory", "lots"], 2, "--gpu-memory: "),
        (["tenant", "create", "x", "-f", "missing.yaml"], 2, 'path "missing.yaml" does not exist'),
        (["tenant", "delete", "nobody"], 1, 'tenants.allot.dev "nobody" not found'),
        (["audit", "--since", "yesterday"], 2, "error: "),
        (["usage", "--since", "yesterday"], 2, "error: "),
    ],
)
def test_errors_are_one_clear_line(
    tenancy: Tenancy,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    code: int,
    message: str,
) -> None:
    """Exit 2 for bad usage or unreadable input, 1 for a refused or failed operation."""
    assert allot([*argv, "--data-dir", str(tenancy.data_dir)]) == code
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_create_takes_the_seeds_vcluster_flags(
    tenancy: Tenancy,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Seed 000's ``vcluster create`` line as ``allot tenant create``: one line names what
    is ignored; ``--connect`` (vcluster's default, allot's when asked) switches kubectl to
    the new tenant, ``--connect=false`` leaves the kubeconfig alone."""
    values = tmp_path / "values.yaml"
    write_values(values, "legal-ai")
    user_config = tmp_path / "config"
    monkeypatch.setenv("KUBECONFIG", str(user_config))
    data = ["--data-dir", str(tenancy.data_dir)]
    seed = ["--driver", "platform", "--project", "default", "--cluster", "loft-cluster"]
    argv = ["tenant", "create", "seeded", *seed, "--values", str(values), "--connect=false"]
    assert allot([*argv, *data]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "note: ignored --driver platform --project default --cluster loft-cluster: allot "
        "serves every tenant itself (it is the one driver), on one host cluster without "
        "vCluster Platform projects"
    ]
    assert "tenant.allot.dev/seeded created" in out
    assert not user_config.exists()  # --connect=false: nothing connected
    status = tenancy.host_json("tenant", "seeded")["status"]
    assert status["entitledDeviceClasses"] == ["gpu-whole"]
    argv = ["tenant", "create", "connected", "-n", "tenant-connected", "-f", str(values)]
    assert allot([*argv, "--connect", *data]) == 0
    assert capsys.readouterr().out.splitlines()[-2] == (
        f'Switched to context "allot_connected_{tenancy.data_dir.name}" in {user_config}.'
    )
    result = subprocess.run(
        [KUBECTL, "get", "deviceclasses", "-o", "name"],
        capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, "KUBECONFIG": str(user_config), "HOME": str(tmp_path)},
    )  # fmt: skip
    assert result.stdout.split() == ["deviceclass.resource.k8s.io/gpu-whole"]
    for name in ("seeded", "connected"):
        assert allot(["tenant", "delete", name, *data]) == 0


def test_a_quota_of_a_class_that_does_not_exist_suggests_the_nearest(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kubernetes takes any quota key; one naming no DeviceClass limits nothing, so the
    server warns, with the class the key was probably meant for."""
    data = ["--data-dir", str(tenancy.data_dir)]
    quota = "gpu-wholle.deviceclass.resource.k8s.io/devices=1"
    assert allot(["tenant", "create", "typo", "--quota", quota, *data]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "typo" in line]
    assert warnings == [
        "Warning: tenant typo: spec.quota.hard[gpu-wholle.deviceclass.resource.k8s.io/devices]: "
        "no DeviceClass 'gpu-wholle' (did you mean \"gpu-whole\"?): the quota limits nothing "
        "until a class of that name exists"
    ]
    assert allot(["tenant", "delete", "typo", *data]) == 0


def test_no_platform(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert allot(["tenant", "list", "--data-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"error: the platform in {tmp_path} is not running "
        f"(start it with: allot up --data-dir {tmp_path})\n"
    )


def test_the_demo_runs_the_walkthrough() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "allot.demo"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "tenant-legal-ai      legal-whole-gpu.default      legal-ai" in out
    assert "gpu-0-mig-1g5gb-19-0" in out
    assert "MIG 1g.5gb      Device  0:" in out
    assert "device class gpu-slice is not in the entitlement of tenant legal-ai" in out
    assert "exceeded quota: tenant-quota" in out
    assert "job.batch/sweep condition met" in out  # the tenant's Indexed Job completed
    assert all(f"trial {index}" in out for index in range(3))
    assert 'deployment "contract-search" successfully rolled out' in out
    sharing = out[out.index("=== Fair sharing") : out.index("=== Alerts raised")]
    assert "pod/contract-summarizer condition met" in sharing  # legal-ai reclaimed its A100
    assert "Preempted by allot: tenant legal-ai reclaims its guaranteed share" in sharing
    assert "waiting for quota: needs 1 gpu-whole; research-ai has 0 of 0" in sharing
    rows = [line.replace("│", " ").split() for line in sharing.splitlines()]
    assert ["gpu-whole", "0", "1", "1", "0"] in rows  # research-ai borrows the A100 ...
    lender = ["legal-ai", "gpu-pool", "gpu-whole", "1", "0", "0", "1"]
    assert lender in [row[:7] for row in rows]  # ... that legal-ai lends, its only row:
    assert ["legal-ai", "gpu-pool", "gpu-slice"] not in [row[:3] for row in rows]  # issue 28
    assert "(platform stopped; nothing left running)" in out
    sections = [line for line in out.splitlines() if line.startswith("=== ")]
    order = [
        "=== The seed's original classes on the host: accepted, but with warnings",
        "=== The platform team switches to the corrected catalogue "
        "(examples/tenancy/platform-classes.yaml)",
        "=== Alerts raised while the walkthrough ran (the platform's log)",
        "=== Alerts (the pending-claim threshold is 3 seconds in the demo)",
    ]
    assert [s for s in sections if s in order] == order
    original = out.index(order[0])
    assert (
        "Warning: deviceclass gpu-slice [no-match]: the class matches no published device"
        in out[original : out.index(order[1])]
    )
    raised = out[out.index(order[2]) : out.index(order[3])]
    assert "  alert ClaimPendingTooLong: claim research-gpu-slice-2" in raised
    lines = [line for line in raised.splitlines() if line.startswith("  alert ")]
    assert sorted(set(lines)) == sorted(lines)  # each raised once (issue 28)
    assert not [s for s in sections if "(issue " in s]  # headings for users, not the tracker
    before = out[: out.index(order[2])]
    assert "alert ClaimPendingTooLong" not in before  # not between kubectl's lines
    assert "alert " not in result.stderr
    assert "/ui" not in out  # no URL of a dashboard that has stopped


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_the_demo_keeps_the_platform_and_dashboard_running_with_keep() -> None:
    """Ctrl-C stops it, even started as a background job of a script or a CI step, which
    inherits SIGINT ignored (and Python then installs no KeyboardInterrupt of its own)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "allot.demo", "--keep"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_ignore_interrupts,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        lines: list[str] = []
        while not lines or lines[-1] != "Ctrl-C stops it.":
            line = process.stdout.readline()
            assert line, f"the demo ended early: {process.communicate()}"
            lines.append(line.rstrip("\n"))
        url = next(line for line in lines if "dashboard at " in line).split("dashboard at ")[1]
        ca = next(line for line in lines if "cluster host:" in line).split("KUBECONFIG=")[1]
        kubeconfig = yaml.safe_load(Path(ca).read_text())
        context = ssl.create_default_context(
            cafile=kubeconfig["clusters"][0]["cluster"]["certificate-authority"]
        )
        with urllib.request.urlopen(url, context=context, timeout=10) as page:
            assert "Sign in with the host cluster's token" in page.read().decode()
    finally:
        process.send_signal(signal.SIGINT)
        try:
            out, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()  # leave nothing running behind a failure
            process.communicate()
            raise
    assert process.returncode == 0
    assert "(platform stopped; nothing left running)" in out


@pytest.mark.parametrize(
    ("cluster", "question", "answer"),
    [
        ("legal-ai", ("create", "pods"), "yes"),
        ("legal-ai", ("create", "resourceclaims.resource.k8s.io"), "yes"),
        (
            "legal-ai",
            ("create", "deviceclasses.resource.k8s.io"),
            "no - deviceclasses are the platform's and read-only in a tenant cluster; tenant "
            "legal-ai can use the device classes: gpu-whole",
        ),
        ("legal-ai", ("get", "deviceclasses.resource.k8s.io"), "yes"),
        (
            "legal-ai",
            ("update", "pods", "--subresource=status"),
            "no - the status of pods in a tenant cluster is the host's: the platform copies it "
            "from the host twin (allocation, reservedFor, node, phase), so a tenant may not "
            "write it",
        ),
        ("legal-ai", ("delete", "nodes"), "no - nodes are the host's and read-only in a "
         "tenant cluster: a host node is shown here while pods of the tenant are bound to "
         "it (sync.fromHost.nodes)"),
        ("host", ("create", "deviceclasses.resource.k8s.io"), "yes"),
    ],
)  # fmt: skip
def test_auth_can_i_answers_what_the_tenant_guard_refuses(
    tenancy: Tenancy, cluster: str, question: tuple[str, ...], answer: str
) -> None:
    """``kubectl auth can-i`` in a tenant says "no" (exit 1), with the guard's reason, to
    the writes the guard refuses whatever the object, as RBAC would in a vCluster."""
    if cluster == "host":
        done = tenancy.cluster.kubectl("auth", "can-i", *question, check=False)
    else:
        done = tenancy.as_tenant(cluster, "auth", "can-i", *question, check=False)
    assert done.stdout.strip() == answer
    assert done.returncode == (0 if answer == "yes" else 1)


def test_deleting_a_connected_tenant_removes_its_context(
    tenancy: Tenancy,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As ``vcluster delete``: the deleted tenant's context leaves the user's kubeconfig and
    the context before it is current again (kubectl would answer Unauthorized otherwise)."""
    user_config = tmp_path / "config"
    user_config.write_text(tenancy.kubeconfig("host").read_text())
    before = yaml.safe_load(user_config.read_text())["current-context"]
    monkeypatch.setenv("KUBECONFIG", str(user_config))
    data = ["--data-dir", str(tenancy.data_dir)]
    tenancy.create_tenant("short-lived")
    assert allot(["tenant", "connect", "short-lived", *data]) == 0
    name = f"allot_short-lived_{tenancy.data_dir.name}"
    assert yaml.safe_load(user_config.read_text())["current-context"] == name
    capsys.readouterr()
    assert allot(["tenant", "delete", "short-lived", *data]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f'Removed context "{name}" from {user_config}; switched to context "{before}".'
    )
    after = yaml.safe_load(user_config.read_text())
    assert after["current-context"] == before
    for section in ("clusters", "users", "contexts"):
        assert name not in {e["name"] for e in after[section]}
