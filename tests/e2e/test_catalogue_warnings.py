"""Catalogue mistakes caught when they are made: kubectl warnings, tenant create, doctor.

Against the embedded platform with seed 000's fleet and the real kubectl: applying the
seed's original classes succeeds (as on Kubernetes) with a ``Warning:`` per finding and the
corrected selector; the corrected catalogue applies silently; ``allot tenant create``
warns about a broken entitled class; after a class is fixed, ``allot doctor`` reports the
allocation it no longer selects (``tests/scenarios/stale-allocation.yaml``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from allot.cli.main import main as allot
from allot.driver.fleet import SEED_000_FLEET
from tests.conftest import EXAMPLES
from tests.e2e.conftest import Cluster, running_platform

pytestmark = pytest.mark.slow
STALE = yaml.safe_load(
    (Path(__file__).parents[1] / "scenarios" / "stale-allocation.yaml").read_text()
)
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_platform(tmp_path_factory.mktemp("warnings"), SEED_000_FLEET) as cluster:
        yield cluster


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Warning: ")]


def test_seed_000s_classes_apply_with_warnings_and_the_fix_applies_silently(
    platform: Cluster,
) -> None:
    original = platform.kubectl("apply", "-f", str(EXAMPLES / "seeds/000-gpu-deviceclasses.yaml"))
    assert "deviceclass.resource.k8s.io/gpu-slice created" in original.stdout
    warnings = _warnings(original.stderr)
    assert len(warnings) == 2
    slice_warning = next(w for w in warnings if "DeviceClass gpu-slice:" in w)
    assert "matches no published device" in slice_warning
    assert "driver 'mig.nvidia.com' is never published" in slice_warning
    assert (
        "suggested selector: device.driver == 'gpu.nvidia.com' && "
        "device.attributes['gpu.nvidia.com'].type == 'mig'" in slice_warning
    )
    whole_warning = next(w for w in warnings if "DeviceClass gpu-whole:" in w)
    assert "also MIG partitions (7)" in whole_warning
    assert "device.attributes['gpu.nvidia.com'].type == 'gpu'  # matches 1 device(s)" in (
        whole_warning
    )
    fixed = platform.kubectl("apply", "-f", str(EXAMPLES / "tenancy/platform-classes.yaml"))
    assert "configured" in fixed.stdout
    assert _warnings(fixed.stderr) == []


def test_tenant_create_warns_about_a_broken_entitled_class(
    platform: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = {**STALE["brokenClass"]}
    broken["metadata"] = {"name": "gpu-whole", "labels": {"gpu.platform/tenant": "legal-ai"}}
    platform.apply(broken)
    data = str(platform.kubeconfig.parents[1])
    values = str(EXAMPLES / "seeds/000-legal-ai-vcluster-config.yaml")
    assert allot(["tenant", "create", "legal-ai", "-f", values, "--data-dir", data]) == 0
    err = capsys.readouterr().err
    assert "Warning: DeviceClass gpu-whole: the class takes whole GPUs (1) and also MIG" in err
    assert allot(["tenant", "delete", "legal-ai", "--data-dir", data]) == 0


def test_doctor_reports_an_allocation_the_fixed_class_no_longer_selects(
    platform: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    platform.apply(STALE["brokenClass"], STALE["claim"])
    platform.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "holder"},
            "spec": {
                "tolerations": TOLERATE,
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "whole-or-not"}],
                "containers": [
                    {"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}
                ],
            },
        }
    )
    platform.kubectl("wait", "--for=condition=Ready", "pod/holder", "--timeout=20s")
    claim = platform.get_json("resourceclaim", "whole-or-not")
    device = claim["status"]["allocation"]["devices"]["results"][0]["device"]
    assert "-mig-" in device  # first-fit: the MIG node's name sorts first
    platform.apply(STALE["fixedClass"])
    kubeconfig = str(platform.kubeconfig)
    assert allot(["doctor", "--kubeconfig", kubeconfig, "-o", "json"]) == 1
    stale = json.loads(capsys.readouterr().out)["staleAllocations"]
    assert [(s["claim"], s["deviceClass"], s["reason"]) for s in stale] == [
        ("default/whole-or-not", "gpu-whole", STALE["expect"]["reason"])
    ]
    assert stale[0]["device"].endswith(f"/{device}")
