"""``-o json|yaml`` of the listing commands (``allot tenant list``, ``alerts``, ``audit``,
``usage``): a Kubernetes ``List`` shaped as ``kubectl get -o json`` prints one."""

from __future__ import annotations

import json

import pytest
import yaml

from allot.cli.output import Column, emit


def _alert() -> dict[str, object]:
    return {
        "apiVersion": "allot.dev/v1alpha1",
        "kind": "Alert",
        "metadata": {
            "name": "tenantquotahigh-0c2b9ca1e0",
            "managedFields": [{"manager": "allot-alerts", "operation": "Update"}],
        },
        "spec": {"rule": "TenantQuotaHigh"},
    }


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_objects_are_listed_without_managed_fields_as_kubectl_does(
    output: str, capsys: pytest.CaptureFixture[str]
) -> None:
    alert = _alert()
    emit(output, [alert], [Column("NAME", lambda a: a["metadata"]["name"])], "none")
    listed = yaml.safe_load(capsys.readouterr().out)  # JSON is YAML too
    assert (listed["apiVersion"], listed["kind"]) == ("v1", "List")
    assert listed["items"][0]["metadata"] == {"name": "tenantquotahigh-0c2b9ca1e0"}
    assert listed["metadata"] == {"resourceVersion": ""}
    assert "managedFields" in alert["metadata"]  # type: ignore[operator]  # the caller's copy


def test_plain_rows_are_listed_as_they_are(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"tenant": "legal-ai", "device_hours": 0.5, "gpu_memory_gib_hours": 20.0}]
    emit("json", rows, [Column("TENANT", lambda r: r["tenant"])], "none")
    assert json.loads(capsys.readouterr().out)["items"] == rows
