"""``kubectl apply`` of fair-sharing Tenants against the embedded platform with seed 000's
fleet: bad shares are refused with their field paths (validation, and the catalogue check
of the admission chain), guarantees past the published devices are accepted with a
``Warning`` line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Cluster, running_platform

pytestmark = pytest.mark.slow
CLASSES = Path(__file__).resolve().parents[2] / "examples" / "tenancy" / "platform-classes.yaml"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_platform(tmp_path_factory.mktemp("sharing")) as cluster:
        cluster.kubectl("apply", "-f", str(CLASSES))
        yield cluster


def _tenant(sharing: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "allot.dev/v1alpha1",
            "kind": "Tenant",
            "metadata": {"name": "research-ai"},
            "spec": {
                "deviceClassSelector": {"matchLabels": {"gpu.platform/tenant": "research-ai"}},
                "sharing": sharing,
            },
        }
    )


def test_an_unknown_class_is_refused_with_its_field_path(platform: Cluster) -> None:
    shares = [{"name": "gpu-slice", "guaranteed": "1"}, {"name": "h100", "guaranteed": "1"}]
    result = platform.kubectl(
        "apply", "-f", "-", stdin=_tenant({"cohort": "pool", "deviceClasses": shares}), check=False
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'The Tenant "research-ai" is invalid: spec.sharing.deviceClasses[1].name: Not found: '
        '"h100": no DeviceClass of this name'
    )


def test_a_class_of_another_tenant_is_refused(platform: Cluster) -> None:
    shares = [{"name": "gpu-whole", "guaranteed": "1"}]
    result = platform.kubectl(
        "apply", "-f", "-", stdin=_tenant({"cohort": "pool", "deviceClasses": shares}), check=False
    )
    assert result.returncode == 1
    assert 'spec.sharing.deviceClasses[0].name: Invalid value: "gpu-whole"' in result.stderr


def test_invalid_amounts_are_refused_with_kueues_texts(platform: Cluster) -> None:
    shares = [{"name": "gpu-slice", "guaranteed": "-1", "lendingLimit": "2"}]
    result = platform.kubectl(
        "apply", "-f", "-", stdin=_tenant({"deviceClasses": shares}), check=False
    )
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    path = "* spec.sharing.deviceClasses[0]"
    assert f'{path}.guaranteed: Invalid value: "-1": must be greater than or equal to 0' in lines
    assert f'{path}.lendingLimit: Invalid value: "2": must be nil when cohort is empty' in lines


def test_a_hard_gpu_quota_patched_onto_a_sharing_tenant_is_refused(platform: Cluster) -> None:
    shares = [{"name": "gpu-slice", "guaranteed": "1"}]
    platform.kubectl("apply", "-f", "-", stdin=_tenant({"cohort": "pool", "deviceClasses": shares}))
    patch = '{"spec":{"quota":{"hard":{"requests.nvidia.com/gpu":"1"}}}}'
    result = platform.kubectl(
        "patch", "tenant", "research-ai", "--type", "merge", "-p", patch, check=False
    )
    platform.kubectl("delete", "tenant", "research-ai")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'The Tenant "research-ai" is invalid: spec.sharing: Forbidden: may not be set together '
        "with device quotas (spec.quota.hard[requests.nvidia.com/gpu]): a tenant uses one "
        "mode, fair sharing or hard quotas"
    )


def test_guarantees_past_the_devices_are_accepted_with_a_warning(platform: Cluster) -> None:
    shares = [{"name": "gpu-slice", "guaranteed": "1000"}]
    result = platform.kubectl(
        "apply", "--dry-run=server", "-f", "-",
        stdin=_tenant({"cohort": "pool", "deviceClasses": shares}),
    )  # fmt: skip
    assert "tenant.allot.dev/research-ai created (server dry run)" in result.stdout
    assert result.stderr.startswith(
        "Warning: tenant research-ai: cohort pool: guarantees of gpu-slice sum to 1000 "
        "(research-ai 1000) but the published devices hold "
    )


def test_apply_without_kueue_skips_its_queues_and_says_why(
    platform: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    from allot.cli.main import main as allot

    sharing = CLASSES.parents[1] / "platform" / "fair-sharing.yaml"
    code = allot(["apply", "-f", str(sharing), "--kubeconfig", str(platform.kubeconfig)])
    out = capsys.readouterr().out
    assert code == 0
    assert "tenant/research-ai created" in out
    assert (
        "clusterqueue/research-ai skip (Kueue is not installed: the cluster does not serve "
        "kueue.x-k8s.io/v1beta2; install Kueue 0.15 or later and apply again for fair sharing)"
    ) in out.splitlines()
    skipped = [line for line in out.splitlines() if " skip (Kueue is not installed" in line]
    assert len(skipped) == 8  # Cohort, ResourceFlavor, 2 priorities, 2 queues, 2 local queues
