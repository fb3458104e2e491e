"""Mistakes caught when they are made, against the embedded platform with seed 000's fleet:
kubectl's ``Warning:`` lines for DeviceClasses that match nothing or take MIG partitions as
whole GPUs (client-side and server-side apply, patch), ``allot tenant create``'s warnings
about the classes a tenant is entitled to, and ``allot doctor`` on an allocation a fixed
class no longer selects (tests/scenarios/stale-allocations.yaml, shared with the unit test).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.cli.main import main as allot
from tests.e2e.conftest import Cluster, running_platform

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
ORIGINAL = EXAMPLES / "seeds" / "000-gpu-deviceclasses.yaml"
CORRECTED = EXAMPLES / "tenancy" / "platform-classes.yaml"
STALE = yaml.safe_load((REPO / "tests" / "scenarios" / "stale-allocations.yaml").read_text())
SUGGESTED = re.compile(r"; suggested selector: (.+) \(matches (\d+) device\(s\)\)$")


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_platform(tmp_path_factory.mktemp("warnings")) as cluster:
        yield cluster


def _warnings(stderr: str) -> dict[str, str]:
    """kubectl's ``Warning: deviceclass NAME [CODE]: ...`` lines, by class name and code."""
    found = {}
    for line in stderr.splitlines():
        match = re.match(r"Warning: deviceclass (\S+) \[([\w-]+)\]: ", line)
        assert match, f"unexpected stderr line: {line}"
        found[f"{match.group(1)} {match.group(2)}"] = line
    return found


def test_seed_000_classes_warn_with_selectors_that_fix_them(platform: Cluster) -> None:
    applied = platform.kubectl("apply", "-f", str(ORIGINAL))
    warnings = _warnings(applied.stderr)
    assert sorted(warnings) == ["gpu-slice no-match", "gpu-whole whole-matches-partitions"]
    assert "driver 'mig.nvidia.com' is never published" in warnings["gpu-slice no-match"]
    fixed = []
    for key, line in warnings.items():
        match = SUGGESTED.search(line)
        assert match is not None, line
        assert int(match.group(2)) > 0, line
        name = key.split()[0]
        fixed.append(_device_class(name, match.group(1)))
    # the suggested selectors, applied as they are, draw no warning
    assert platform.kubectl("apply", "-f", "-", stdin=_yaml(fixed)).stderr == ""
    assert platform.kubectl("apply", "-f", str(CORRECTED)).stderr == ""


def test_server_side_apply_and_patch_warn_too(platform: Cluster) -> None:
    platform.kubectl("apply", "-f", str(CORRECTED))
    applied = platform.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ORIGINAL))
    assert sorted(_warnings(applied.stderr)) == [
        "gpu-slice no-match",
        "gpu-whole whole-matches-partitions",
    ]
    broad = {"spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}
    patched = platform.kubectl(
        "patch", "deviceclass", "gpu-slice", "--type", "merge", "-p", json.dumps(broad)
    )
    assert sorted(_warnings(patched.stderr)) == ["gpu-slice whole-matches-partitions"]
    # the patch made kubectl-patch the owner of gpu-slice's selectors: forced, as upstream
    corrected = platform.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", str(CORRECTED)
    )
    assert corrected.stderr == ""


def test_tenant_create_warns_about_its_entitled_classes(
    platform: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    platform.kubectl("apply", "-f", str(ORIGINAL))
    data_dir = str(platform.server.api.registry.data_dir)
    values = str(EXAMPLES / "seeds" / "000-legal-ai-vcluster-config.yaml")
    assert allot(["tenant", "create", "legal-ai", "-f", values, "--data-dir", data_dir]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "deviceclass" in line]
    assert len(lines) == 1, err
    assert lines[0].startswith(
        "Warning: tenant legal-ai is entitled to deviceclass gpu-whole [whole-matches-partitions]"
    )
    assert "suggested selector: " in lines[0]
    platform.kubectl("apply", "-f", str(CORRECTED))
    values = str(EXAMPLES / "seeds" / "000-research-ai-vcluster-config.yaml")
    assert allot(["tenant", "create", "research-ai", "-f", values, "--data-dir", data_dir]) == 0
    assert "deviceclass" not in capsys.readouterr().err


def test_doctor_reports_an_allocation_the_fixed_class_no_longer_selects(
    platform: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    platform.kubectl("apply", "-f", str(EXAMPLES / STALE["classesBefore"]))
    platform.kubectl("apply", "-f", "-", stdin=_yaml(STALE["objects"]))
    for claim in (o for o in STALE["objects"] if o["kind"] == "ResourceClaim"):
        _wait_allocated(platform, claim["metadata"]["namespace"], claim["metadata"]["name"])
    platform.kubectl("apply", "-f", str(EXAMPLES / STALE["classesAfter"]))
    kubeconfig = str(platform.kubeconfig)
    assert allot(["doctor", "--kubeconfig", kubeconfig, "-o", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert len(report["staleAllocations"]) == len(STALE["stale"])
    for found, expected in zip(report["staleAllocations"], STALE["stale"], strict=True):
        assert re.fullmatch(expected["device"], found.pop("device")), found
        assert found == {k: v for k, v in expected.items() if k != "device"}
    assert allot(["doctor", "--kubeconfig", kubeconfig]) == 1
    text = capsys.readouterr().out
    assert "== Allocations their classes no longer select (1)" in text
    assert "default/legal-cheap-gpu request gpu: device gpu.nvidia.com/" in text


def _device_class(name: str, expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _yaml(documents: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(documents)


def _wait_allocated(platform: Cluster, namespace: str, name: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        claim = platform.get_json("resourceclaim", name, "-n", namespace)
        if (claim.get("status") or {}).get("allocation"):
            return
        time.sleep(0.2)
    raise AssertionError(f"claim {namespace}/{name} was not allocated")
