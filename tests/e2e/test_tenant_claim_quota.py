"""A tenant's Deployment whose pods' claims, generated from a template, exceed the tenant's
device quota (the report of legal-ai's `wide` Deployment), with the real kubectl: the
pods are created and wait, `kubectl describe pod` shows upstream's
`FailedResourceClaimCreation` Warning with the quota's refusal, `allot explain` quotes
it, the platform logs one line per retry (no traceback), and once the claim holding the
quota is deleted the retry creates one pod's claim and that pod runs."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import redirect_stdout
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from allot.cli.main import main as allot
from tests.e2e.tenancy import Tenancy, seed_platform

pytestmark = pytest.mark.slow

HELD = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "held"},
    "spec": {
        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu-whole"}}]}
    },
}
TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "whole-t"},
    "spec": {"spec": HELD["spec"]},
}
WIDE = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "wide"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "wide"}},
        "template": {
            "metadata": {"labels": {"app": "wide"}},
            "spec": {
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "whole-t"}],
                "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"],
                                "resources": {"claims": [{"name": "gpu"}]}}],
            },
        },
    },
}  # fmt: skip
DEVICES = "gpu-whole.deviceclass.resource.k8s.io/devices"


def refusal(pod: str, used: int = 1) -> str:
    """The Event message for tenant pod ``pod`` (host names mapped to the tenant's)."""
    return (
        f'PodResourceClaim gpu: create ResourceClaim : resourceclaims.resource.k8s.io "{pod}-gpu-" '
        f"is forbidden: exceeded quota: tenant-quota, requested: {DEVICES}=1, used: "
        f"{DEVICES}={used}, limited: {DEVICES}=1"
    )


@pytest.fixture
def tenancy(tmp_path: Path) -> Iterator[Tenancy]:
    with seed_platform(tmp_path) as running:
        yield running


def _pods(tenancy: Tenancy) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = tenancy.tenant_json("legal-ai", "pods", "-l", "app=wide")["items"]
    return pods


def _failures(tenancy: Tenancy, pod: str) -> list[dict[str, Any]]:
    events = tenancy.tenant_json(
        "legal-ai", "events", "--field-selector", f"involvedObject.name={pod}"
    )["items"]
    return [e for e in events if e["reason"] == "FailedResourceClaimCreation"]


def _explain(tenancy: Tenancy, pod: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = allot(["explain", f"pod/{pod}", "--tenant", "legal-ai",
                      "--data-dir", str(tenancy.data_dir)])  # fmt: skip
    return code, out.getvalue()


def test_a_claim_the_quota_refuses_is_shown_and_created_once_the_quota_frees(
    tenancy: Tenancy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="allot.controllers")
    tenancy.as_tenant("legal-ai", "create", "-f", "-", stdin=json.dumps(HELD))
    documents = "\n---\n".join(json.dumps(d) for d in (TEMPLATE, WIDE))
    tenancy.as_tenant("legal-ai", "apply", "-f", "-", stdin=documents)
    pods = tenancy.wait(lambda: len(_pods(tenancy)) == 2 and _pods(tenancy), "both pods")
    names = sorted(p["metadata"]["name"] for p in pods)
    for name in names:
        [event] = tenancy.wait(partial(_failures, tenancy, name), f"{name}'s Event")
        assert (event["type"], event["message"]) == ("Warning", refusal(name))
        described = tenancy.as_tenant("legal-ai", "describe", "pod", name).stdout
        assert "Events:  <none>" not in described
        assert "FailedResourceClaimCreation" in described
        assert refusal(name) in " ".join(described.split()), described
        code, explained = _explain(tenancy, name)
        assert code == 1
        assert explained.splitlines() == [
            f"pod default/{name} of tenant legal-ai waits for its ResourceClaims to be created:",
            f"  FailedResourceClaimCreation: {refusal(name)}",
        ]
    # retried with back-off: the repeats are counted on the one Event
    tenancy.wait(lambda: _failures(tenancy, names[0])[0].get("count", 1) > 1, "a counted retry")
    assert len(_failures(tenancy, names[0])) == 1

    tenancy.as_tenant("legal-ai", "delete", "resourceclaim", "held")

    def one_running() -> list[str]:
        phases = {p["metadata"]["name"]: p["status"].get("phase") for p in _pods(tenancy)}
        return [n for n, phase in phases.items() if phase == "Running"]

    [running] = tenancy.wait(one_running, "one pod running once the quota freed", timeout=40)
    [waiting] = [n for n in names if n != running]
    assert _pods(tenancy)[names.index(waiting)]["status"].get("phase") == "Pending"
    code, explained = _explain(tenancy, running)
    assert code == 0
    code, explained = _explain(tenancy, waiting)
    assert (code, explained.splitlines()[1]) == (
        1,
        f"  FailedResourceClaimCreation: {refusal(waiting)}",
    )
    records = [r for r in caplog.records if r.name == "allot.controllers"]
    assert any("exceeded quota: tenant-quota" in r.getMessage() for r in records)
    assert all(r.exc_info is None for r in records), "a controller logged a traceback"
