"""The production path (README's "Production") on real Kubernetes 1.36, with the real kubectl.

One real control plane for the module (the ``real_kube`` fixture: kube-apiserver,
kube-controller-manager, kube-scheduler, kwok, seed 000's fleet published) and, for the
texts, the embedded platform beside it given the same platform file and the same requests:
what the two API servers answer must be the same, word for word.

Seed 000's DeviceClasses are accepted, and ``allot lint`` says of them what kube-scheduler
then does (the slice class allocates nothing, the "whole GPU" class hands out a MIG
partition). ``allot render`` and ``allot apply`` of ``examples/platform/seed-000.yaml``:
every object accepted without a warning (type-checked CEL included: the policies'
``status.typeChecking`` is empty), a second apply changes nothing. In legal-ai's namespace
a ``gpu-whole`` claim is allocated by kube-scheduler; ``gpu-slice``, also hidden in
``firstAvailable``, is refused by the real ValidatingAdmissionPolicy; the first claim over
the per-class ResourceQuota is refused by the real quota admission; vCluster's chart-default
control plane gets its pod from kube-controller-manager while tenant workloads running as
root are refused (tests/data/vcluster-v0.36.1, tests/scenarios/vcluster-host-pods.yaml:
the data tests/test_vcluster_pod_policy.py gives the embedded engine); a class revoked in
the platform file makes the policy on ``resourceclaims/status`` refuse kube-scheduler's
allocation. ``allot doctor`` and ``allot explain`` read the real cluster and agree with
what kube-scheduler did. Once the Prometheus Operator's PrometheusRule CRD is served (``make
kube`` fetches it; without it that test skips), ``allot apply`` creates the rendered
PrometheusRule without a warning, as rendered. The tests run in file order, each leaving
the state the next starts from. Without ``make kube``'s binaries the module skips.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.kubeengine.binaries import bin_dir, prometheus_rule_crd
from allot.tenancy import entitlement, translate
from tests.e2e.conftest import Cluster, KubectlUser, running_platform
from tests.realkube import (
    RealKube,
    allot,
    claim_pod,
    needs_real_kube,
    requests,
    resource_claim,
    wait_for,
)

pytestmark = [pytest.mark.slow, needs_real_kube]
REPO = Path(__file__).resolve().parents[2]
PLATFORM = REPO / "examples" / "platform" / "seed-000.yaml"
SEEDS = REPO / "examples" / "seeds"
STATEFULSET = REPO / "tests" / "data" / "vcluster-v0.36.1" / "control-plane-statefulset.yaml"
HOST_PODS = yaml.safe_load((REPO / "tests" / "scenarios" / "vcluster-host-pods.yaml").read_text())
LEGAL = "tenant-legal-ai"
UNENFORCED = (
    "Warning: the GPU-memory quota (spec.quota.gpuMemory) of tenant legal-ai is enforced on a "
    "real cluster only by allot controller --webhook-port. Nothing rendered counts GPU memory "
    "(ResourceQuota and Kueue count devices); the embedded platform enforces it itself\n"
)
PROMETHEUS_RULE_CRD = prometheus_rule_crd(bin_dir())
DENIED = (
    "ValidatingAdmissionPolicy 'allot-tenant-claims' with binding "
    "'allot-tenant-claims.legal-ai' denied request: "
)


def claim(name: str, spec_requests: list[Any], namespace: str = LEGAL) -> dict[str, Any]:
    return resource_claim(name, namespace, spec_requests)


def pod(
    name: str, claim_name: str, namespace: str = LEGAL, node: str | None = None
) -> dict[str, Any]:
    made = claim_pod(name, namespace, {"resourceClaimName": claim_name})
    if node:
        made["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return made


def create(kube: KubectlUser, obj: Any, *flags: str) -> subprocess.CompletedProcess[str]:
    return kube.kubectl("create", *flags, "-f", "-", stdin=json.dumps(obj), check=False)


def on_both(
    real: RealKube, embedded: Cluster, obj: Any, *flags: str
) -> subprocess.CompletedProcess[str]:
    """``kubectl create`` of ``obj`` on both engines: they must answer the same (exit
    status, output and error text); the real one's answer."""
    answers = [create(kube, obj, *flags) for kube in (real, embedded)]
    first, second = ((a.returncode, a.stdout, _known(obj, a.stderr)) for a in answers)
    assert first == second, f"real: {first}\nembedded: {second}"
    return answers[0]


HOSTNAME_WARNING = (
    "Warning: metadata.name: this is used in the Pod's hostname, which can result in "
    "surprising behavior; a DNS label is recommended: [must not contain dots]\n"
)


def _known(obj: Any, stderr: str) -> str:
    """``stderr`` without what docs/conformance.md says the embedded server does not send:
    the pod strategy's warning for a name that is not a DNS label (a real server sends it,
    a refused request too)."""
    if obj["kind"] == "Pod" and "." in obj["metadata"]["name"]:
        return stderr.replace(HOSTNAME_WARNING, "", 1)
    return stderr


def allocation(kube: KubectlUser, name: str, namespace: str = LEGAL) -> Any:
    found = kube.get_json("resourceclaim", name, "-n", namespace, "--show-managed-fields")
    return (found.get("status") or {}).get("allocation"), found


def scheduled(kube: KubectlUser, name: str, namespace: str = LEGAL) -> dict[str, Any]:
    found = kube.get_json("pod", name, "-n", namespace)
    conditions = (found.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), {})


def running(kube: KubectlUser, name: str, namespace: str = LEGAL) -> bool:
    found = kube.get_json("pod", name, "-n", namespace)
    return bool((found.get("status") or {}).get("phase") == "Running")


def type_checked(kube: RealKube, name: str) -> Any:
    """The policy once the API server's type checker has looked at its generation."""
    policy = kube.get_json("validatingadmissionpolicy", name)
    checked = (policy.get("status") or {}).get("observedGeneration")
    return policy if checked == policy["metadata"]["generation"] else None


def doctor(kube: RealKube) -> tuple[int, Any]:
    done = allot("doctor", "-o", "json", kubeconfig=kube.kubeconfig)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def platform_with(tmp_path: Path, revoked: bool) -> Path:
    """The platform file, with gpu-whole's tenant label taken off when ``revoked``."""
    text = PLATFORM.read_text()
    if revoked:
        text = text.replace("    gpu.platform/tenant: legal-ai\n", "", 1)
    path = tmp_path / "platform.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The embedded platform with the same platform file applied, for the texts."""
    with running_platform(tmp_path_factory.mktemp("embedded")) as cluster:
        done = allot("apply", "-f", str(PLATFORM), kubeconfig=cluster.kubeconfig)
        assert done.returncode == 0, done.stderr
        yield cluster


def test_seed_000s_classes_are_accepted_and_lint_says_what_kube_scheduler_then_does(
    real_kube: RealKube, tmp_path: Path
) -> None:
    classes = SEEDS / "000-gpu-deviceclasses.yaml"
    created = real_kube.kubectl("create", "-f", str(classes))
    assert created.stderr == ""  # no warning
    slices = tmp_path / "slices.yaml"
    slices.write_text(real_kube.kubectl("get", "resourceslices", "-o", "yaml").stdout)
    linted = allot("lint", "-o", "json", str(classes), str(slices))
    assert linted.returncode == 1
    findings = {f["class"]: f["code"] for f in json.loads(linted.stdout)}
    assert findings == {"gpu-slice": "no-match", "gpu-whole": "whole-matches-partitions"}
    mig_node = "a100-mig-1g5gb-pool-0"
    real_kube.apply(
        claim("seed-slice", requests("gpu-slice"), "default"),
        pod("seed-slice", "seed-slice", "default"),
        claim("seed-whole", requests("gpu-whole"), "default"),
        pod("seed-whole", "seed-whole", "default", node=mig_node),
    )
    wait_for(lambda: running(real_kube, "seed-whole", "default"), "the seed-whole pod to run")
    taken, _ = allocation(real_kube, "seed-whole", "default")
    [result] = taken["devices"]["results"]
    assert (result["pool"], result["device"].split("-mig-")[1][:5]) == (mig_node, "1g5gb")
    refused = wait_for(
        lambda: scheduled(real_kube, "seed-slice", "default").get("message"),
        "kube-scheduler to give up on seed-slice",
    )
    assert "cannot allocate all claims" in refused
    assert allocation(real_kube, "seed-slice", "default")[0] is None
    code, report = doctor(real_kube)
    assert code == 1
    [pending] = report["pendingClaims"]
    assert (pending["claim"], pending["fits"]) == ("default/seed-slice", False)
    assert {f["class"]: f["code"] for f in report["lint"]} == findings
    explained = allot(
        "explain", "pod/seed-slice", "-n", "default", "--data-dir", str(real_kube.cluster.data_dir)
    )
    assert explained.returncode == 1
    assert "pod default/seed-slice on the host waits for capacity" in explained.stdout
    assert "class gpu-slice, selector #0: device.driver == 'mig.nvidia.com'" in explained.stdout
    real_kube.kubectl("delete", "pod", "seed-slice", "seed-whole", "-n", "default")
    real_kube.kubectl("delete", "resourceclaim", "seed-slice", "seed-whole", "-n", "default")
    real_kube.kubectl("delete", "-f", str(classes))


@pytest.fixture(scope="module")
def applied(real_kube: RealKube, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``allot render`` then ``allot apply`` of the platform file, checked; the rendered
    directory."""
    out = tmp_path_factory.mktemp("rendered")
    rendered = allot("render", "-f", str(PLATFORM), "--out", str(out))
    assert rendered.returncode == 0, rendered.stderr
    assert rendered.stderr == UNENFORCED
    done = allot("apply", "-f", str(PLATFORM), kubeconfig=real_kube.kubeconfig)
    assert done.returncode == 0, done.stderr
    assert done.stderr == UNENFORCED  # and not a single Warning of the API server's
    lines = done.stdout.splitlines()
    assert lines[-1].startswith("prometheusrule/allot-system/allot skip")
    assert [line.rsplit(" ", 1)[1] for line in lines[:-1]] == ["created"] * (len(lines) - 1)
    return out


def test_every_rendered_object_is_accepted_without_warnings_and_a_second_apply_changes_nothing(
    real_kube: RealKube, applied: Path
) -> None:
    files = sorted(applied.glob("[01]*.yaml"))
    assert [f.name[:3] for f in files] == ["00-", "01-", "02-", "03-", "10-", "10-"]
    for path in files:  # what kubectl says of each, as the server would store it now
        checked = real_kube.kubectl(
            "apply", "--server-side", "--field-manager=allot", "--dry-run=server", "-f", str(path)
        )
        assert checked.stderr == "", (path.name, checked.stderr)
        assert checked.stdout.count("serverside-applied (server dry run)") == len(
            [d for d in yaml.safe_load_all(path.read_text()) if d]
        )
    for name in (entitlement.CLAIMS_POLICY, entitlement.PODS_POLICY):
        policy = wait_for(partial(type_checked, real_kube, name), f"the type check of {name}")
        assert policy["status"]["typeChecking"] == {}, policy["status"]  # no expressionWarnings
    stored = {
        (d["kind"], d["metadata"]["name"]): d["spec"]
        for path in files
        for d in yaml.safe_load_all(path.read_text())
        if d and d["kind"].startswith("ValidatingAdmissionPolicy")
    }
    for (kind, name), spec in stored.items():  # the server's defaults are all written out
        assert real_kube.get_json(kind.lower(), name)["spec"] == spec, name
    again = allot("apply", "-f", str(PLATFORM), kubeconfig=real_kube.kubeconfig)
    assert again.returncode == 0
    verbs = {line.rsplit(" ", 1)[1] for line in again.stdout.splitlines()[:-1]}
    assert verbs == {"unchanged"}, again.stdout


def test_a_gpu_whole_claim_of_legal_ai_is_allocated_by_kube_scheduler(
    real_kube: RealKube, applied: Path
) -> None:
    seed_claim = SEEDS / "000-legal-whole-gpu-resourceclaim.yaml"
    real_kube.kubectl("create", "-n", LEGAL, "-f", str(seed_claim))
    create(real_kube, pod("trainer", "legal-whole-gpu"))
    wait_for(lambda: running(real_kube, "trainer"), "the trainer pod to run")
    taken, found = allocation(real_kube, "legal-whole-gpu")
    [result] = taken["devices"]["results"]
    assert (result["pool"], result["device"]) == ("a100-whole-pool-0", "gpu-0")
    writers = {(f["manager"], f.get("subresource")) for f in found["metadata"]["managedFields"]}
    assert ("kube-scheduler", "status") in writers
    code, report = doctor(real_kube)  # what kube-scheduler did, as doctor sees it
    assert code == 0, report
    assert report["pendingClaims"] == report["staleAllocations"] == []
    assert report["entitlementViolations"] == []
    per_class = {c["class"]: c for c in report["capacity"]["classes"]}
    assert (per_class["gpu-whole"]["allocated"], per_class["gpu-whole"]["free"]) == (1, 0)
    explained = allot(
        "explain", "pod/trainer", "-n", LEGAL, "--data-dir", str(real_kube.cluster.data_dir)
    )
    assert explained.returncode == 0
    assert "bound to node a100-whole-pool-0 (Running)" in explained.stdout


def test_gpu_slice_and_gpu_slice_hidden_in_first_available_are_refused_with_the_real_message(
    real_kube: RealKube, embedded: Cluster, applied: Path
) -> None:
    research = yaml.safe_load((SEEDS / "000-research-gpu-slice-resourceclaim.yaml").read_text())
    research["metadata"]["namespace"] = LEGAL
    hidden = claim(
        "hidden",
        [{"name": "gpu", "firstAvailable": [
            {"name": "whole", "deviceClassName": "gpu-whole"},
            {"name": "slice", "deviceClassName": "gpu-slice"},
        ]}],
    )  # fmt: skip
    for refused in (research, hidden):
        answer = on_both(real_kube, embedded, refused)
        assert answer.returncode == 1
        name = refused["metadata"]["name"]
        assert answer.stderr == (
            f'Error from server (Forbidden): error when creating "STDIN": '
            f'resourceclaims.resource.k8s.io "{name}" is forbidden: {DENIED}'
            f"{entitlement.not_entitled(['gpu-slice'], 'legal-ai', ['gpu-whole'])}\n"
        )


def test_the_first_claim_over_the_class_quota_is_refused_by_the_real_quota_admission(
    real_kube: RealKube, embedded: Cluster, applied: Path
) -> None:
    """Both engines start from their own usage (the real one holds legal-whole-gpu) and are
    filled to the quota's 2 devices: the first claim over it gets the same refusal."""
    made: dict[str, list[str]] = {"real": [], "embedded": []}
    answers = {}
    for engine, kube in (("real", real_kube), ("embedded", embedded)):
        for number in range(1, 4):
            answer = create(kube, claim(f"filler-{number}", requests("gpu-whole")))
            if answer.returncode:
                answers[engine] = answer.stderr.replace(f"filler-{number}", "filler-N")
                break
            made[engine].append(f"filler-{number}")
    assert (
        answers["real"]
        == answers["embedded"]
        == (
            'Error from server (Forbidden): error when creating "STDIN": '
            'resourceclaims.resource.k8s.io "filler-N" is forbidden: exceeded quota: tenant-quota, '
            "requested: gpu-whole.deviceclass.resource.k8s.io/devices=1, "
            "used: gpu-whole.deviceclass.resource.k8s.io/devices=2, "
            "limited: gpu-whole.deviceclass.resource.k8s.io/devices=2\n"
        )
    )
    assert (len(made["real"]), len(made["embedded"])) == (1, 2)
    two = on_both(
        real_kube, embedded, claim("two-at-once", requests("gpu-whole", 2)), "--dry-run=server"
    )
    assert (
        "exceeded quota: tenant-quota, requested: gpu-whole.deviceclass.resource.k8s.io/devices=2"
        in two.stderr
    )
    for engine, kube in (("real", real_kube), ("embedded", embedded)):
        kube.kubectl("delete", "resourceclaim", "-n", LEGAL, *made[engine])


def test_vclusters_control_plane_is_admitted_and_tenant_workloads_as_root_are_refused(
    real_kube: RealKube, embedded: Cluster, applied: Path
) -> None:
    for kube in (real_kube, embedded):  # the charts' accounts (the embedded server does
        # not refuse a pod naming a missing one: docs/conformance.md, ServiceAccounts)
        for account in ("vc-legal-ai", "vc-workload-legal-ai", "vc-other"):
            kube.kubectl("create", "serviceaccount", account, "-n", LEGAL)
    real_kube.kubectl("create", "-f", str(STATEFULSET))
    made = wait_for(
        lambda: real_kube.get_json("pods", "-n", LEGAL, "-l", "app=vcluster")["items"],
        "kube-controller-manager to create legal-ai-0",
    )
    assert [p["metadata"]["name"] for p in made] == ["legal-ai-0"]
    assert made[0]["spec"]["containers"][0]["securityContext"]["runAsUser"] == 0
    events = real_kube.get_json("events", "-n", LEGAL, "--field-selector", "reason=FailedCreate")
    assert events["items"] == []
    for scenario in HOST_PODS:
        host_pod = scenario["pod"]
        if scenario.get("synced_by") == "allot":
            host_pod = translate.to_host("Pod", host_pod, "legal-ai")
        answer = on_both(real_kube, embedded, host_pod, "--dry-run=server")
        if scenario.get("admitted"):
            assert answer.returncode == 0, (scenario["name"], answer.stderr)
            continue
        prefix = (
            f'Error from server (Forbidden): error when creating "STDIN": pods '
            f'"{host_pod["metadata"]["name"]}" is forbidden: ValidatingAdmissionPolicy '
            "'allot-tenant-pods' with binding 'allot-tenant-pods.legal-ai' denied request: "
        )
        refused = _known(host_pod, answer.stderr)
        assert refused.startswith(prefix), (scenario["name"], refused)
        message = refused[len(prefix) :].rstrip("\n")
        assert re.fullmatch(scenario["refused"], message), (scenario["name"], message)
    real_kube.kubectl("delete", "statefulset", "legal-ai", "-n", LEGAL)


def test_a_class_revoked_in_the_platform_file_refuses_kube_schedulers_allocation(
    real_kube: RealKube, applied: Path, tmp_path: Path
) -> None:
    real_kube.kubectl("delete", "pod", "trainer", "-n", LEGAL)  # the fleet's one whole GPU
    wait_for(lambda: allocation(real_kube, "legal-whole-gpu")[0] is None, "the GPU released")
    create(real_kube, claim("kept", requests("gpu-whole")))  # made while entitled
    revoked = allot("apply", "-f", str(platform_with(tmp_path, revoked=True)),
                    kubeconfig=real_kube.kubeconfig)  # fmt: skip
    assert "deviceclass/gpu-whole configured" in revoked.stdout
    assert "configmap/allot-system/entitlement-legal-ai configured" in revoked.stdout
    create(real_kube, pod("late", "kept"))
    refusal = wait_for(
        lambda: (c := scheduled(real_kube, "late")).get("reason") == "SchedulerError" and c,
        "kube-scheduler's refused allocation",
    )
    assert refusal["message"] == (
        'running PreBind plugin "DynamicResources": add allocation and reservation to claim '
        f'{LEGAL}/kept: resourceclaims.resource.k8s.io "kept" is forbidden: {DENIED}'
        f"{entitlement.not_entitled(['gpu-whole'], 'legal-ai', [])}"
    )
    assert allocation(real_kube, "kept")[0] is None
    _, report = doctor(real_kube)
    violations = {(v["object"], v["allocated"]) for v in report["entitlementViolations"]}
    assert (f"{LEGAL}/kept", False) in violations
    restored = allot("apply", "-f", str(PLATFORM), kubeconfig=real_kube.kubeconfig)
    assert "deviceclass/gpu-whole configured" in restored.stdout
    wait_for(lambda: running(real_kube, "late"), "the pod scheduled once entitled again")
    allot(
        "apply", "-f", str(platform_with(tmp_path, revoked=True)), kubeconfig=real_kube.kubeconfig
    )
    code, report = doctor(real_kube)  # allocated before the revocation: doctor says so
    assert code == 1
    assert {
        "tenant": "legal-ai",
        "kind": "ResourceClaim",
        "object": f"{LEGAL}/kept",
        "deviceClass": "gpu-whole",
        "entitled": [],
        "allocated": True,
    } in report["entitlementViolations"]
    allot("apply", "-f", str(PLATFORM), kubeconfig=real_kube.kubeconfig)


@pytest.mark.skipif(
    not PROMETHEUS_RULE_CRD.is_file(), reason=f"no {PROMETHEUS_RULE_CRD} (run `make kube`)"
)
def test_the_rendered_prometheus_rule_is_accepted_without_warnings_once_its_crd_is_served(
    real_kube: RealKube, applied: Path
) -> None:
    real_kube.kubectl("apply", "--server-side", "-f", str(PROMETHEUS_RULE_CRD))
    real_kube.kubectl(
        "wait", "--for=condition=Established", "crd/prometheusrules.monitoring.coreos.com"
    )
    done = allot("apply", "-f", str(PLATFORM), kubeconfig=real_kube.kubeconfig)
    assert done.returncode == 0, done.stderr
    assert done.stderr == UNENFORCED  # not a Warning of the API server's
    *others, last = done.stdout.splitlines()
    assert last == "prometheusrule/allot-system/allot created"
    assert {line.rsplit(" ", 1)[1] for line in others} == {"unchanged"}, done.stdout
    rendered = yaml.safe_load((applied / "20-prometheusrule.yaml").read_text())
    stored = real_kube.get_json("prometheusrule", "allot", "-n", "allot-system")
    assert stored["spec"] == rendered["spec"]  # nothing pruned or defaulted by its schema
    again = allot("apply", "-f", str(PLATFORM), kubeconfig=real_kube.kubeconfig)
    assert again.stdout.splitlines()[-1] == "prometheusrule/allot-system/allot unchanged"
