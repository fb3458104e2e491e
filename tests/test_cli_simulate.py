"""``allot simulate``, ``allot explain`` and ``allot lint`` on the seed 000 catalogue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.cli.main import main
from allot.driver.fleet import expand, parse_fleet
from allot.driver.slices import node_slices
from tests.conftest import EXAMPLES

AT_LEAST_80GI = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'
SCENARIO = EXAMPLES / "scenarios" / "seed-000.yaml"
FIXTURES = [
    str(EXAMPLES / "nvidia" / n)
    for n in (
        "a100-40gb-x1-whole-gpu.yaml",
        "a100-40gb-static-mig-7x1g5gb.yaml",
        "h100-80gb-dynamic-mig-partitionable.yaml",
    )
]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_simulate_json_shape_and_results(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", str(SCENARIO), "-o", "json")
    assert code == 1
    document = json.loads(out)
    assert document["summary"] == {"steps": 9, "succeeded": 8, "failed": 1}
    first = document["steps"][0]
    assert set(first) == {
        "index",
        "name",
        "claims",
        "success",
        "node",
        "nodesTried",
        "results",
        "error",
        "fatal",
        "nodeErrors",
    }
    assert first["node"] == "gpu-node-a100-01"
    assert first["results"] == [
        {
            "claim": "legal-ai/legal-whole-gpu",
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.nvidia.com",
                            "pool": "gpu-node-a100-01",
                            "device": "gpu-0",
                        }
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": ["gpu-node-a100-01"],
                                }
                            ]
                        }
                    ]
                },
            },
        }
    ]
    slices = [
        s["results"][0]["allocation"]["devices"]["results"][0]["device"]
        for s in document["steps"][1:8]
    ]
    assert slices == [f"gpu-0-mig-1g5gb-19-{i}" for i in range(7)]
    last = document["steps"][8]
    assert last["success"] is False
    assert last["error"] == "0/2 nodes are available: 2 cannot allocate all claims."
    assert last["nodeErrors"] == {
        "gpu-node-a100-01": "cannot allocate all claims",
        "gpu-node-a100-mig-01": "cannot allocate all claims",
    }


def test_explain_names_holders_and_selectors(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", str(SCENARIO))
    assert code == 1
    assert "step 8 (research-ai/research-slice-8)" in out
    assert "1 class selector false — class gpu-slice, selector #0" in out
    assert "7 already in use — held by research-ai/research-gpu-slice" in out


def test_explain_hints_at_the_80gb_trap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = {
        "objects": [
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "gpu"},
                "spec": {
                    "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]
                },
            },
            *_documents(EXAMPLES / "nvidia" / "h100-80gb-x8-whole-gpus.yaml"),
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "big", "namespace": "ml"},
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "gpu",
                                "exactly": {
                                    "deviceClassName": "gpu",
                                    "selectors": [{"cel": {"expression": AT_LEAST_80GI}}],
                                },
                            }
                        ]
                    }
                },
            },
        ]
    }
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    code, out, _ = run(capsys, "simulate", str(path), "--explain")
    assert code == 1
    assert "8 request selector false" in out
    assert "the largest memory offered is 81559Mi" in out
    assert "which is less than 80Gi" in out


def _documents(path: Path) -> list[dict[str, object]]:
    import yaml

    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("objects: 5\n", "'objects' must be a list of manifests"),
        ("objects: []\nsteps: [{claims: []}]\n", "steps[0]: needs 'claims'"),
        ("objects: []\nfeatures: {draNoSuchGate: true}\n", "unknown feature gate 'draNoSuchGate'"),
        (
            "objects: [{apiVersion: v1, kind: Pod, metadata: {name: p}}]\n",
            "objects[0]: kind Pod is not used by simulations",
        ),
        ("objectz: []\n", "unknown scenario key(s): objectz"),
    ],
)
def test_bad_scenarios_get_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    code, _, err = run(capsys, "simulate", str(path))
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_missing_claims_and_classes_leave_steps_pending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("""
objects:
- {apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: c},
   spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: nope}}]}}}
steps:
- {claims: [default/c]}
- {claims: [default/missing]}
""")
    code, out, _ = run(capsys, "simulate", str(path), "-o", "json")
    assert code == 1
    steps = json.loads(out)["steps"]
    assert steps[0]["error"] == "request gpu: device class nope does not exist"
    assert steps[1]["error"] == 'resourceclaim.resource.k8s.io "missing" not found'


def test_lint_finds_the_seed_mistakes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "lint",
        str(EXAMPLES / "seeds" / "000-gpu-deviceclasses.yaml"),
        *FIXTURES,
        "-o",
        "json",
    )
    assert code == 1
    findings = {(f["class"], f["code"]): f for f in json.loads(out)}
    assert set(findings) == {("gpu-slice", "no-match"), ("gpu-whole", "whole-matches-partitions")}
    no_match = findings[("gpu-slice", "no-match")]
    assert (
        "driver 'mig.nvidia.com' is never published (published: gpu.nvidia.com)"
        in no_match["details"]
    )
    assert no_match["suggestion"] == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
        "'mig' && device.attributes['gpu.nvidia.com'].profile == '1g.5gb'  # matches 7 device(s)"
    )
    assert findings[("gpu-whole", "whole-matches-partitions")]["suggestion"] == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
        "'gpu'  # matches 2 device(s)"
    )


def test_lint_of_a_class_without_selectors_suggests_the_type_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A class with no selector takes every device, whole GPUs and MIG partitions: the
    suggestion is the type clause alone (it once began with a dangling ``&&``, which did not
    compile, and the API server's class warnings answered 500 for such a class)."""
    classes = tmp_path / "classes.yaml"
    classes.write_text("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: all}\n")
    code, out, _ = run(capsys, "lint", str(classes), *FIXTURES, "-o", "json")
    assert code == 1
    findings = {(f["class"], f["code"]): f for f in json.loads(out)}
    assert findings[("all", "whole-matches-partitions")]["suggestion"] == (
        "device.attributes['gpu.nvidia.com'].type == 'gpu'  # matches 2 device(s)"
    )


def test_lint_clean_catalogue_and_shared_tenants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "lint", str(EXAMPLES / "nvidia" / "deviceclasses.yaml"), *FIXTURES)
    assert code == 1  # the compute-domain classes match nothing without that driver
    assert "compute-domain-daemon.nvidia.com: [no-match]" in out
    assert "\ngpu.nvidia.com: [" not in out
    assert "no device publishes gpu.nvidia.com/type == 'vfio' (published: gpu, mig)" in out
    classes = tmp_path / "classes.yaml"
    classes.write_text("""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: a, labels: {gpu.platform/tenant: team-a}}
spec: {selectors: [{cel: {expression: "device.attributes['gpu.nvidia.com'].type == 'mig'"}}]}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: b, labels: {gpu.platform/tenant: team-b}}
spec: {selectors: [{cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"}}]}
""")
    code, out, _ = run(capsys, "lint", str(classes), *FIXTURES)
    assert code == 1
    assert "a: [shared-devices] shares 7 device(s) with class b of tenant team-b" in out
    assert "[selector-error]" in out  # 'profile' is missing on whole GPUs


def test_lint_without_slices_says_what_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "lint", str(EXAMPLES / "nvidia" / "deviceclasses.yaml"))
    assert (code, out) == (2, "")
    assert err.startswith("error: no ResourceSlice found in the input: lint judges classes")
    assert "`allot validate` checks classes alone" in err


def test_explain_given_a_claim_name_points_to_doctor(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "default/pending-claim")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        'error: the path "default/pending-claim" does not exist',
        "hint: SCENARIO is a file; for the claims of a running cluster, `allot doctor` explains "
        "every pending one",
    ]


def test_a_v1beta1_shaped_claim_in_a_scenario_gets_the_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "old.yaml"
    scenario.write_text(
        "objects:\n"
        "- apiVersion: resource.k8s.io/v1\n"
        "  kind: ResourceClaim\n"
        "  metadata: {name: c, namespace: default}\n"
        "  spec: {devices: {requests: [{name: g, deviceClassName: gpu}]}}\n"
    )
    code, out, err = run(capsys, "simulate", str(scenario))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f'error: {scenario}: objects[0]: ResourceClaim in version "v1" cannot be handled as '
        'a ResourceClaim: strict decoding error: unknown field "spec.devices.requests[0].'
        'deviceClassName"',
        "hint: spec.devices.requests[0] has the v1beta1 shape: in resource.k8s.io/v1, move "
        "deviceClassName under spec.devices.requests[0].exactly (or list alternatives under "
        "spec.devices.requests[0].firstAvailable)",
    ]


PREFILTER = yaml.safe_load((Path(__file__).parent / "scenarios" / "prefilter.yaml").read_text())


@pytest.mark.parametrize("case", PREFILTER["cases"], ids=[c["name"] for c in PREFILTER["cases"]])
def test_prefilter_case(
    case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": case["devices"]},
    }
    scenario = {"features": case.get("features", {}), "objects": [*PREFILTER["fleet"], claim]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    code, out, err = run(capsys, "simulate", str(path), "-o", "json")
    assert "internal error" not in err
    step = json.loads(out)["steps"][0]
    expect = case["expect"]
    if "results" in expect:
        assert code == 0
        assert step["results"][0]["allocation"]["devices"]["results"] == expect["results"]
        return
    assert code == 1
    assert (step["error"], step["fatal"]) == (expect["error"], expect["fatal"])


def test_list_type_attributes_is_a_clear_error_not_an_internal_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("features: {DRAListTypeAttributes: true}\nobjects: []\n")
    code, out, err = run(capsys, "simulate", str(path))
    assert (code, out) == (2, "")
    assert "internal error" not in err
    assert "features: DRAListTypeAttributes (alpha in 1.36) is not supported" in err
    assert "hint: leave the gate off" in err


def test_a_dynamic_mig_fleet_past_the_old_8_mib_limit_simulates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """26 nodes of 8 H100s with DynamicMIG: 8.8 MB of slices, refused before issue 28."""
    pool = {"name": "h100", "nodes": 26, "gpu": "H100-80GB-HBM3", "gpusPerNode": 8}
    fleet = parse_fleet({"pools": [{**pool, "mig": {"dynamic": True}}]})
    mig_3g = (
        "device.attributes['gpu.nvidia.com'].type == 'mig' && "
        "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"
    )
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "mig-3g"},
            "spec": {"selectors": [{"cel": {"expression": mig_3g}}]},
        }
    ]
    for index, node in enumerate(expand(fleet)):
        objects += node_slices(node.name, f"uid-{index}", node.gpus, dynamic_mig=True)
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.name}})
    request = {"name": "r", "exactly": {"deviceClassName": "mig-3g"}}
    objects.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c"},
            "spec": {"devices": {"requests": [request]}},
        }
    )
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.dump({"objects": objects}, Dumper=yaml.CSafeDumper))
    assert path.stat().st_size > 8 * 1024 * 1024
    code, out, err = run(capsys, "simulate", str(path), "-o", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["steps"][0]["node"] == "h100-0"
