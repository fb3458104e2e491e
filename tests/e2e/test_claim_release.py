"""A claim generated for a pod that has finished is deleted at once, as upstream's
resourceclaim controller does (``syncClaim``: an unreserved claim whose owning pod is done
is not going to be used again), though the pod itself stays until it is deleted."""

from __future__ import annotations

from pathlib import Path

import pytest

from allot.driver.fleet import SEED_000_FLEET
from tests.e2e.conftest import Cluster, running_platform
from tests.e2e.test_control_plane import WHOLE, _pod, _wait

pytestmark = pytest.mark.slow


def test_a_finished_pods_generated_claim_is_deleted_and_its_device_freed(
    tmp_path: Path,
) -> None:
    with running_platform(tmp_path, SEED_000_FLEET) as platform:
        _finish_one(platform)


def _finish_one(platform: Cluster) -> None:
    platform.apply(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu-whole"},
            "spec": {"selectors": [{"cel": {"expression": WHOLE}}]},
        }
    )
    platform.apply(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "whole"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu-whole"}}]
                    }
                }
            },
        }
    )
    pod = _pod(
        "finishes", [{"name": "gpu", "resourceClaimTemplateName": "whole"}], restartPolicy="Never"
    )
    pod["metadata"] = {
        "name": "finishes",
        "annotations": {"allot.dev/simulated-runtime-seconds": "0.3"},
    }
    platform.apply(pod)
    _wait(platform, "jsonpath={.status.phase}=Succeeded", "pod/finishes")
    claim = platform.get_json("pod", "finishes")["status"]["resourceClaimStatuses"][0]
    name = claim["resourceClaimName"]
    # upstream's syncClaim: an unreserved claim generated for a pod that is done goes,
    # though the pod itself stays
    _wait(platform, "delete", f"resourceclaim/{name}")  # prints nothing when gone already
    gone = platform.kubectl("get", "resourceclaim", name, check=False)
    assert f'resourceclaims.resource.k8s.io "{name}" not found' in gone.stderr
    assert platform.get_json("pod", "finishes")["status"]["phase"] == "Succeeded"
    platform.kubectl("delete", "pod", "finishes")
