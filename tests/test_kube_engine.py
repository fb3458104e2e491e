"""The real engine's refusals that need no real cluster, and ``make kube``'s one-line errors.

Binaries are stand-ins here (shell scripts that print a version), so these run everywhere:
binaries of another version are refused naming what was found; a port in use, a data
directory of the other engine, and a tenant the real engine cannot serve (allot's own
admission, an invalid Tenant) are refused before anything is written; a tenant's
kube-apiserver and kube-controller-manager get their own storage prefix, issuer,
certificates and vCluster's controller list; the build says in one line that Go is missing,
that the proxy does not serve a module, or that a build failed; Kueue and the
PrometheusRule CRD are optional (one line, never a failed build). The tools modules require
the versions the engine checks for. kube-scheduler and kube-controller-manager keep
client-go's request rates unless a benchmark lifts them.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
import yaml

from allot.cli.main import main
from allot.kubeengine import build, components, pki, tenants
from allot.kubeengine.binaries import (
    BIN_ENV,
    CACHE_ENV,
    ETCD_VERSION,
    KUBERNETES_VERSION,
    KUEUE_VERSION,
    KWOK_VERSION,
    PROGRAMS,
    PROMETHEUS_OPERATOR_VERSION,
    prometheus_rule_crd,
)
from allot.registry.clusters import STORE_FILE
from allot.registry.rbac.identity import cluster_admin

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "tools" / "kube"
PRINTED = {
    "etcd": "etcd Version: {}\nGit SHA: Not provided\n",
    "kwok": "kwok version {} go1.26.8 (linux/amd64)\n",
}


def stand_ins(directory: Path, versions: dict[str, str]) -> Path:
    """Scripts named like the real programs that print ``versions`` for ``--version``."""
    directory.mkdir(parents=True, exist_ok=True)
    for program in PROGRAMS:
        text = PRINTED.get(program.name, "Kubernetes {}\n").format(versions[program.name])
        script = directory / program.name
        script.write_text(f"#!/bin/sh\nprintf '%s' '{text}'\n")
        script.chmod(0o755)
    return directory


def right_versions() -> dict[str, str]:
    return {program.name: program.version for program in PROGRAMS}


def test_binaries_of_another_version_are_refused_naming_what_was_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    versions = {**right_versions(), "kube-apiserver": "v1.35.2", "etcd": "3.5.21"}
    monkeypatch.setenv(BIN_ENV, str(stand_ins(tmp_path / "bin", versions)))
    data = tmp_path / "data"
    assert main(["up", "--engine", "kubernetes", "--data-dir", str(data), "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: real Kubernetes binaries in ${BIN_ENV}={tmp_path / 'bin'}: ")
    assert "etcd is 3.5.21, not 3.6.8" in err
    assert f"kube-apiserver is v1.35.2, not {KUBERNETES_VERSION}" in err
    assert "kube-scheduler is" not in err  # only what is wrong is named
    assert f"point ${BIN_ENV} at binaries of Kubernetes {KUBERNETES_VERSION}" in err
    assert err.count("\n") == 1
    assert not data.exists()


def test_missing_binaries_say_to_run_make_kube(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(BIN_ENV, raising=False)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    data = tmp_path / "data"
    assert main(["up", "--engine", "kubernetes", "--data-dir", str(data)]) == 1
    err = capsys.readouterr().err
    assert "etcd missing; kube-apiserver missing" in err
    assert "run `make kube` to build Kubernetes v1.36.3, etcd 3.6.8, kwok v0.8.0" in err
    assert not data.exists()


def test_a_port_in_use_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(BIN_ENV, str(stand_ins(tmp_path / "bin", right_versions())))
    data = tmp_path / "data"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["up", "--engine", "kubernetes", "--data-dir", str(data), "--port", str(port)])
    assert code == 1
    assert capsys.readouterr().err == (
        f"error: cannot serve on 127.0.0.1:{port}: Address already in use (choose another "
        "with --port, or --port 0 for a free one)\n"
    )
    assert not data.exists()


def test_a_data_dir_of_the_embedded_engine_is_refused_by_the_real_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / STORE_FILE).write_bytes(b"")
    before = sorted(tmp_path.iterdir())
    assert main(["up", "--engine", "kubernetes", "--data-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"error: {tmp_path} holds a cluster of the embedded engine; the kubernetes engine "
        f"never uses it (start it with: allot up --data-dir {tmp_path}, or choose another "
        "--data-dir)\n"
    )
    assert sorted(tmp_path.iterdir()) == before


def test_a_data_dir_of_the_real_engine_is_refused_by_the_embedded_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "kube").mkdir()
    assert main(["up", "--data-dir", str(tmp_path), "--port", "0"]) == 1
    assert capsys.readouterr().err == (
        f"error: {tmp_path} holds a cluster of the kubernetes engine; the embedded engine "
        f"never uses it (start it with: allot up --engine kubernetes --data-dir {tmp_path}, "
        "or choose another --data-dir)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kube"]


def test_flags_of_the_embedded_engine_alone_are_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for flags, name in (
        (["--runtime", "process"], "--runtime"),
        (["--placement", "pack"], "--placement"),
    ):
        assert main(["up", "--engine", "kubernetes", "--data-dir", str(tmp_path), *flags]) == 2
        assert capsys.readouterr().err == (
            f"error: {name} applies to the embedded engine only (the kubernetes engine runs "
            "pods through kwok and places them with kube-scheduler)\n"
        )
    assert list(tmp_path.iterdir()) == []


def test_the_real_engine_takes_only_the_driver_gates_that_change_what_it_publishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PassthroughSupport, NVMLDeviceHealthCheck and ConsumableShares change the slices
    (twins, taints, shares), which kube-scheduler reads; the sharing gates act at prepare
    time, which kwok nodes skip. A fleet with consumable shares needs its gate here too."""
    gates = "MPSSupport=true,TimeSlicingSettings=true,ConsumableShares=true"
    command = ["up", "--engine", "kubernetes", "--data-dir", str(tmp_path)]
    assert main([*command, "--driver-feature-gates", gates]) == 2
    assert capsys.readouterr().err == (
        "error: --driver-feature-gates MPSSupport, TimeSlicingSettings: the kubernetes engine "
        "takes only ConsumableShares, NVMLDeviceHealthCheck and PassthroughSupport (its kwok "
        "nodes prepare no devices, so no driver config is applied there)\n"
    )
    fleet = tmp_path.parent / f"{tmp_path.name}-shares.yaml"
    fleet.write_text(
        "driver: {consumableShares: memory}\npools: [{name: h100, nodes: 1, gpu: H100-80GB-HBM3}]\n"
    )
    assert main([*command, "--fleet", str(fleet)]) == 2
    assert capsys.readouterr().err == (
        "error: --consumable-shares requires feature gate ConsumableShares to be enabled\n"
    )
    both = "PassthroughSupport=true,NVMLDeviceHealthCheck=true"
    assert main([*command, "--driver-feature-gates", both]) == 2
    assert capsys.readouterr().err == (
        "error: feature gate PassthroughSupport is currently mutually exclusive with "
        "NVMLDeviceHealthCheck\n"
    )
    assert list(tmp_path.iterdir()) == []


SHARING_TENANT = """apiVersion: allot.dev/v1alpha1
kind: Tenant
metadata:
  name: team-a
spec:
  sharing:
    cohort: lab
"""


@pytest.mark.parametrize(
    ("flags", "values", "refusal"),
    [
        (
            ["--gpu-memory", "80Gi"],
            None,
            'Tenant.allot.dev "team-a" is invalid: spec.quota.gpuMemory: Forbidden: a '
            "GPU-memory quota is not available on the kubernetes engine (allot up --engine "
            "kubernetes): Kubernetes 1.36's ResourceQuota counts devices per class",
        ),
        (
            [],
            SHARING_TENANT,
            'Tenant.allot.dev "team-a" is invalid: spec.sharing: Forbidden: fair sharing is '
            "not available on the kubernetes engine",
        ),
        (
            ["--quota", "gpu-whole.deviceclass.resource.k8s.io/devices=-1"],
            None,
            'Tenant.allot.dev "team-a" is invalid: spec.quota.hard[gpu-whole.deviceclass.'
            'resource.k8s.io/devices]: Invalid value: "-1": must be greater than or equal to 0',
        ),
    ],
)
def test_tenant_create_on_the_real_engine_refuses_what_it_cannot_do_before_writing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    values: str | None,
    refusal: str,
) -> None:
    (tmp_path / "kube").mkdir()
    if values is not None:
        (tmp_path / "tenant.yaml").write_text(values)
        flags = [*flags, "-f", str(tmp_path / "tenant.yaml")]
    assert main(["tenant", "create", "team-a", *flags, "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {refusal}")
    assert "Traceback" not in err
    assert sorted(p.name for p in (tmp_path / "kube").iterdir()) == []


def test_tenant_verbs_on_a_real_engine_directory_not_served_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "kube").mkdir()
    for command in (["create", "team-a"], ["list"], ["delete", "team-a"]):
        assert main(["tenant", *command, "--data-dir", str(tmp_path)]) == 1
        err = capsys.readouterr().err
        assert err == (
            f"error: the platform in {tmp_path} is not running (start it with: allot up "
            f"--engine kubernetes --data-dir {tmp_path})\n"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kube"]


def test_a_tenant_kube_apiserver_has_its_own_storage_issuer_and_rbac_alone(tmp_path: Path) -> None:
    layout = tenants.TenantLayout(tmp_path, "team-a")
    keys = pki.Pki(layout.pki_dir)
    host = pki.Pki(tmp_path / "pki")
    storage = components.Storage(
        "https://127.0.0.1:2379", host.etcd_ca.cert, host.apiserver_etcd_client, "/tenants/team-a"
    )
    role = components.Role(issuer=tenants.issuer("team-a"), tenant=True)
    command = components.apiserver(layout, keys, 7443, storage, role)
    assert "--etcd-prefix=/tenants/team-a" in command
    assert "--service-account-issuer=https://team-a.tenant-team-a.svc" in command
    assert "--authorization-mode=RBAC" in command
    assert not any(flag.startswith("--enable-admission-plugins") for flag in command)
    assert f"--client-ca-file={layout.pki_dir / 'ca.crt'}" in command
    assert f"--etcd-certfile={host.apiserver_etcd_client.cert}" in command
    manager = components.controller_manager(
        layout, keys, 7444, components.Options(), components.TENANT_CONTROLLERS
    )
    assert (
        "--controllers=*,-nodeipam,-nodelifecycle,-persistentvolume-binder,-attachdetach,"
        "-persistentvolume-expander,-cloud-node-lifecycle,-ttl" in manager
    )


def test_a_tenant_has_certificates_of_its_own_and_no_etcd_ca(tmp_path: Path) -> None:
    keys = pki.ensure_tenant(tmp_path / "a")
    other = pki.ensure_tenant(tmp_path / "b")
    assert keys.ca.cert.read_bytes() != other.ca.cert.read_bytes()
    assert keys.service_account_key.read_bytes() != other.service_account_key.read_bytes()
    assert keys.client("kube-controller-manager").cert.exists()
    assert not keys.etcd_ca.cert.exists()
    assert not keys.client("kube-scheduler").cert.exists()
    before = keys.ca.cert.read_bytes()
    assert pki.ensure_tenant(tmp_path / "a").ca.cert.read_bytes() == before  # kept


def _required(module: str) -> dict[str, str]:
    text = (TOOLS / module / "go.mod").read_text()
    return dict(re.findall(r"^\s+(\S+) (v\S+)(?: // indirect)?$", text, re.MULTILINE))


def test_the_tools_modules_require_the_versions_the_engine_checks() -> None:
    assert _required("kubernetes")["k8s.io/kubernetes"] == KUBERNETES_VERSION
    assert _required("etcd")["go.etcd.io/etcd/server/v3"] == f"v{ETCD_VERSION}"
    assert _required("kwok")["sigs.k8s.io/kwok"] == KWOK_VERSION
    assert _required("kueue")["sigs.k8s.io/kueue"] == KUEUE_VERSION
    operator = "github.com/prometheus-operator/prometheus-operator"
    crd_module = (TOOLS / "prometheus-operator" / "go.mod").read_text()
    required = re.findall(r"^require (\S+) (v\S+)$", crd_module, re.MULTILINE)
    assert required == [(operator, PROMETHEUS_OPERATOR_VERSION)]
    replaced = re.findall(
        r"^\s+(k8s\.io/\S+) => (k8s\.io/\S+) (v\S+)$",
        (TOOLS / "kubernetes" / "go.mod").read_text(),
        re.MULTILINE,
    )
    staging = f"v0.{KUBERNETES_VERSION.removeprefix('v1.')}"
    assert len(replaced) >= 33  # every staging module of 1.36
    assert all(old == new and version == staging for old, new, version in replaced)
    for module in ("kubernetes", "etcd", "kwok", "kueue", "prometheus-operator"):
        assert (TOOLS / module / "go.sum").stat().st_size > 0


def test_the_build_without_go_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert build.main([str(TOOLS)]) == 1
    err = capsys.readouterr().err
    assert err == (
        "make kube: Go is not installed: install Go >= 1.26 (https://go.dev/dl/), or set "
        "$ALLOT_KUBE_BIN to a directory of Kubernetes 1.36 binaries you have\n"
    )


needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="no Go on PATH")


@needs_go
def test_a_module_the_proxy_does_not_serve_is_named_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "modules"))  # nothing downloaded yet
    monkeypatch.setenv("GOPROXY", "off")
    assert build.main([str(TOOLS)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "make kube: the Go module proxy (off) did not serve k8s.io/kubernetes "
        f"{KUBERNETES_VERSION} ("
    )
    assert err.endswith(
        "check the network and $GOPROXY, or set $ALLOT_KUBE_BIN to binaries you have\n"
    )
    assert err.count("\n") == 1
    _clean_module_cache(tmp_path / "modules")


def _clean_module_cache(path: Path) -> None:
    """Go writes its module cache read-only; make it removable for tmp_path's clean-up."""
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            (Path(root) / name).chmod(0o755)


def _broken_target(tools: Path, name: str, version: str) -> build.Target:
    """A tools module ``name`` whose one package does not compile, as a build target."""
    module = tools / name
    module.mkdir(parents=True)
    (module / "go.mod").write_text(f"module example.com/{name}\n\ngo 1.26.0\n")
    (module / "main.go").write_text("package main\n\nfunc main() { undefined() }\n")
    return build.Target(name, f"example.com/{name}", version, (f"example.com/{name}",), ())


@needs_go
def test_a_failed_build_is_one_line_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _broken_target(tmp_path / "tools", "broken", "v0.0.0")
    monkeypatch.setattr(build, "TARGETS", (target,))
    monkeypatch.setattr(build, "BINARY_NAMES", {"example.com/broken": "etcd"})
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert build.main([str(tmp_path / "tools")]) == 1
    out, err = capsys.readouterr()
    log = tmp_path / "cache" / KUBERNETES_VERSION / "build.log"
    assert "make kube: building etcd (example.com/broken v0.0.0, " in out
    assert err.startswith(f"make kube: building etcd failed (exit 1); the log is {log}: ")
    assert "undefined: undefined" in err
    assert err.endswith("fix the cause and rerun `make kube`\n")
    assert err.count("\n") == 1
    assert not (tmp_path / "cache" / KUBERNETES_VERSION / "bin" / "etcd").exists()


def test_binaries_in_the_cache_at_the_right_version_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    bin_dir = stand_ins(tmp_path / "cache" / KUBERNETES_VERSION / "bin", right_versions())
    crd = prometheus_rule_crd(bin_dir)
    crd.parent.mkdir()
    crd.write_text("kind: CustomResourceDefinition\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty") + os.pathsep + "/bin:/usr/bin")
    before = {p.name: p.stat().st_mtime_ns for p in bin_dir.iterdir()}
    assert build.main([str(TOOLS)]) == 0  # no Go needed: nothing to build but Kueue
    assert capsys.readouterr().out == (
        f"make kube: binaries of Kubernetes {KUBERNETES_VERSION} are in {bin_dir}\n"
        f"make kube: Kueue {KUEUE_VERSION} was not built (Go is not installed: install Go "
        ">= 1.26 (https://go.dev/dl/), or set $ALLOT_KUBE_BIN to a directory of Kubernetes "
        "1.36 binaries you have); the Kueue tests will skip\n"
        "make kube: the PrometheusRule CRD of the Prometheus Operator "
        f"{PROMETHEUS_OPERATOR_VERSION} is in {crd.parent}\n"
    )
    assert {p.name: p.stat().st_mtime_ns for p in bin_dir.iterdir()} == before
    assert subprocess.run([str(bin_dir / "kwok"), "--version"], capture_output=True).returncode == 0


def test_tenant_requests_are_recorded_once_and_read_back_as_tenants(tmp_path: Path) -> None:
    tenant = {"apiVersion": "allot.dev/v1alpha1", "kind": "Tenant", "metadata": {"name": "a"}}
    tenants.request_create(tmp_path, {**tenant, "spec": {}})
    with pytest.raises(
        tenants.TenantRecordError, match=re.escape('tenants.allot.dev "a" already exists')
    ):
        tenants.request_create(tmp_path, {**tenant, "spec": {}})
    assert tenants.tenant_names(tmp_path) == ["a"]
    listed = tenants.recorded(tmp_path, "a")
    assert listed is not None
    assert listed["status"] == {"phase": "Pending"}
    assert listed["metadata"]["creationTimestamp"].endswith("Z")
    tenants.request_delete(tmp_path, "a")
    assert (tenants.recorded(tmp_path, "a") or {})["status"]["phase"] == "Terminating"
    with pytest.raises(
        tenants.TenantRecordError, match=re.escape('tenants.allot.dev "a" is being deleted')
    ):
        tenants.request_create(tmp_path, {**tenant, "spec": {}})
    with pytest.raises(
        tenants.TenantRecordError, match=re.escape('tenants.allot.dev "b" not found')
    ):
        tenants.request_delete(tmp_path, "b")


@pytest.mark.parametrize("lifted", [False, True])
def test_client_rate_limits_are_kubernetes_defaults_unless_a_benchmark_lifts_them(
    tmp_path: Path, lifted: bool
) -> None:
    layout = components.Layout(tmp_path)
    keys = pki.ensure(layout.pki_dir)
    ports = components.Ports(6443, 2379, 2380, 10257, 10259, 10247)
    options = components.Options(unlimited_client_qps=lifted)
    components.write_configs(layout, keys, ports, cluster_admin("host"), "token", options)
    config = yaml.safe_load((layout.config / "kube-scheduler.yaml").read_text())
    manager = components.controller_manager(layout, keys, ports.controller_manager, options)
    limits = {"qps": 5000, "burst": 10000} if lifted else {}
    assert {k: v for k, v in config["clientConnection"].items() if k != "kubeconfig"} == limits
    flags = ["--kube-api-qps=5000", "--kube-api-burst=10000"] if lifted else []
    assert [f for f in manager if f.startswith("--kube-api-")] == flags


@needs_go
def test_kueue_that_does_not_build_leaves_make_kube_successful(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        build, "KUEUE_TARGET", _broken_target(tmp_path / "tools", "kueue", KUEUE_VERSION)
    )
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    stand_ins(tmp_path / "cache" / KUBERNETES_VERSION / "bin", right_versions())
    assert build.main([str(tmp_path / "tools")]) == 0
    out = capsys.readouterr().out
    log = tmp_path / "cache" / KUBERNETES_VERSION / "build-kueue.log"
    assert f"make kube: Kueue {KUEUE_VERSION} was not built (building kueue failed (exit 1)" in out
    assert f"the log is {log}: " in out
    assert "; the Kueue tests will skip\n" in out
    assert not (tmp_path / "cache" / KUBERNETES_VERSION / "bin" / "kueue").exists()


@needs_go
def test_a_prometheus_rule_crd_the_proxy_does_not_serve_leaves_make_kube_successful(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "modules"))  # nothing downloaded yet
    monkeypatch.setenv("GOPROXY", "off")
    bin_dir = tmp_path / "cache" / "bin"
    assert build.fetch_prometheus_rule_crd(TOOLS, bin_dir) is False
    out = capsys.readouterr().out
    assert out.startswith(
        f"make kube: the PrometheusRule CRD of the Prometheus Operator "
        f"{PROMETHEUS_OPERATOR_VERSION} was not fetched (the Go module proxy (off) did not "
        f"serve github.com/prometheus-operator/prometheus-operator {PROMETHEUS_OPERATOR_VERSION} ("
    )
    assert out.endswith("); its test will skip\n")
    assert out.count("\n") == 1
    assert not prometheus_rule_crd(bin_dir).exists()
    _clean_module_cache(tmp_path / "modules")
