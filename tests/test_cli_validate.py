"""``allot validate``: the seed manifests' verdicts and clear errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from allot.cli.main import main
from allot.manifests import documents
from tests.conftest import EXAMPLES

SEEDS = EXAMPLES / "seeds"
ACCEPTED = [
    "000-gpu-deviceclasses.yaml",
    "000-legal-whole-gpu-resourceclaim.yaml",
    "000-research-gpu-slice-resourceclaim.yaml",
    "003-single-gpu-template.yaml",
    "004-gpu-40g.yaml",
]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["validate", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", ACCEPTED)
def test_seed_manifests_are_accepted(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, err = run(capsys, str(SEEDS / name))
    assert code == 0, err
    assert err == ""
    assert all(line.endswith(" valid") for line in out.splitlines())


def test_seed_001_dra_manifests_are_all_rejected_with_hints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, str(SEEDS / "001-dra-manifests.yaml"), "-o", "json")
    assert code == 1
    records = json.loads(out)
    assert [r["outcome"] for r in records] == ["invalid"] * 4
    statuses = [r["status"] for r in records]
    assert statuses[0]["reason"] == "Invalid"
    assert (
        "found no matching overload for '_>=_' applied to '(kubernetes.Quantity, "
        "kubernetes.Quantity)'" in statuses[0]["message"]
    )
    assert statuses[1]["message"] == (
        'ResourceClaimTemplate in version "v1" cannot be handled as a ResourceClaimTemplate: '
        'strict decoding error: unknown field "spec.spec.devices.requests[0].deviceClassName", '
        'unknown field "spec.spec.devices.requests[0].selectors"'
    )
    assert statuses[2]["message"].endswith(
        'unknown field "spec.devices.requests[0].deviceClassName"'
    )
    for status in statuses:
        hints = [c["message"] for c in status["details"]["causes"] if c["reason"] == "Hint"]
        assert hints, status
    assert "compareTo(quantity('40Gi')) >= 0" in statuses[0]["details"]["causes"][-1]["message"]
    assert (
        "move deviceClassName, selectors under spec.spec.devices.requests[0].exactly"
        in statuses[1]["details"]["causes"][0]["message"]
    )


def test_text_output_reads_like_kubectl(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(SEEDS / "001-dra-manifests.yaml"))
    assert code == 1
    lines = err.splitlines()
    assert lines[0].startswith(
        'The DeviceClass "high-memory-gpu" is invalid: '
        "spec.selectors[0].cel.expression: Invalid value: "
    )
    assert any(
        line.startswith('Error from server (BadRequest): error when creating "')
        and "cannot be handled as a ResourceClaim:" in line
        for line in lines
    )
    assert sum(line.startswith("  hint: ") for line in lines) == 5


def test_workloads_and_pods_valid(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(SEEDS / "001-workloads.yaml"))
    assert code == 0
    assert out.splitlines()[0] == "job.batch/finetune-qwen valid"
    assert "pod/qwen-inference valid" in out
    assert "deployment.apps/mig-inference valid" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"kind: [unclosed\n", 'error parsing "{path}": error converting YAML to JSON: yaml: '),
        (b"\xff\xfe\x00garbage", 'error parsing "{path}": invalid UTF-8 at byte 0'),
        (b"- a\n- b\n", 'error parsing "{path}" (document 1): expected an object'),
        (b"apiVersion: v1\nkind: Namespace\nkind: Pod\n", 'duplicate field "kind"'),
        (b'{"apiVersion": "v1", "kind":', 'error parsing "{path}": invalid JSON at line 1'),
    ],
)
def test_bad_files_get_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    code, out, err = run(capsys, str(path))
    assert code == 2
    assert out == ""
    assert message.format(path=path) in err
    assert "Traceback" not in err


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "/nonexistent/x.yaml")
    assert (code, err) == (2, 'error: the path "/nonexistent/x.yaml" does not exist\n')


def test_json_list_and_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    document = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "gpu"},
            },
        ],
    }

    class Stdin:
        buffer = __import__("io").BytesIO(json.dumps(document).encode())

    monkeypatch.setattr(sys, "stdin", Stdin)
    code, out, _ = run(capsys, "-")
    assert code == 0
    assert out.splitlines() == ["namespace/ml valid", "deviceclass.resource.k8s.io/gpu valid"]


def test_admin_access_uses_namespace_from_the_same_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "admin.yaml"
    path.write_text("""
apiVersion: v1
kind: Namespace
metadata: {name: tenant}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: peek, namespace: tenant}
spec: {devices: {requests: [{name: a, exactly: {deviceClassName: x, adminAccess: true}}]}}
""")
    code, _, err = run(capsys, str(path))
    assert code == 1
    assert (
        "adminAccess: Forbidden: admin access to devices requires the "
        "`resource.kubernetes.io/admin-access: true` label" in err
    )


def test_empty_input_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("---\n# nothing\n")
    code, _, err = run(capsys, str(path))
    assert code == 2
    assert "no objects" in err


def test_oversized_files_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(documents, "MAX_FILE_BYTES", 1024)  # 1 GiB in earnest
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * 1030)
    code, _, err = run(capsys, str(path))
    assert code == 2
    assert f'error reading "{path}": larger than 1024 bytes (the most allot reads' in err
    assert "split the objects over several files" in err


def test_console_script_runs(tmp_path: Path) -> None:
    allot = Path(sys.executable).with_name("allot")
    result = subprocess.run(
        [str(allot), "validate", str(SEEDS / "003-single-gpu-template.yaml")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "resourceclaimtemplate.resource.k8s.io/single-gpu valid\n"


def test_oversized_objects_get_the_api_servers_413(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "huge.json"
    huge = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big"},
        "data": {"blob": "x" * (3 * 1024 * 1024 + 1)},
    }
    path.write_text(json.dumps(huge))
    code, _, err = run(capsys, str(path))
    assert code == 1
    assert err.startswith("Error from server (RequestEntityTooLarge): error when creating")
    assert "Request entity too large: limit is 3145728" in err
