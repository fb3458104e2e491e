"""``allot render``'s vCluster values, against vCluster's own values schema.

``tests/data/vcluster-values-schema-v0.36.1.json`` is the part of vCluster's
``chart/values.schema.json`` (v0.36.1) that the values use; ``vcluster create -f`` refuses
what it refuses. Beyond the schema, the values must mean what the Tenant means: vCluster
syncs every DeviceClass when the selector is missing or empty, and its sync switches are
off unless written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml

from allot.cluster.render import read_platform, render
from tests.conftest import EXAMPLES

SCHEMA = json.loads(
    (Path(__file__).parent / "data" / "vcluster-values-schema-v0.36.1.json").read_text()
)
VALIDATOR = jsonschema_rs.validator_for(SCHEMA)
CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu-whole", "labels": {"pool": "shared"}},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
}


def _values(*tenant_specs: dict[str, Any]) -> dict[str, Any]:
    tenants = [
        {"apiVersion": "allot.dev/v1alpha1", "kind": "Tenant", "metadata": {"name": f"t{i}"}}
        | {"spec": spec}
        for i, spec in enumerate(tenant_specs)
    ]
    files = render(read_platform([CLASS, *tenants]))
    return {f.path: f.objects[0] for f in files if f.path.startswith("vcluster/")}


def _errors(values: dict[str, Any]) -> list[str]:
    return [f"{list(e.instance_path)}: {e.message}" for e in VALIDATOR.iter_errors(values)]


@pytest.mark.parametrize("platform", ["seed-000.yaml", "fair-sharing.yaml"])
def test_example_values_pass_the_vcluster_schema(platform: str) -> None:
    documents = yaml.safe_load_all((EXAMPLES / "platform" / platform).read_text())
    rendered = [f for f in render(read_platform(documents)) if f.path.startswith("vcluster/")]
    assert rendered
    for file in rendered:
        assert _errors(file.objects[0]) == [], file.path


def test_the_schema_refuses_what_vcluster_refuses() -> None:
    """The stored schema is the real one: a wrong key or type is refused."""
    assert _errors({"sync": {"toHost": {"resourceClaim": {"enabled": True}}}})
    assert _errors({"sync": {"fromHost": {"deviceClasses": {"enabled": "yes"}}}})
    assert _errors({"sync": {"fromHost": {"deviceClasses": {"selector": {"labels": {}}}}}})
    assert _errors({"policies": {"resourceQuota": {"enabled": "auto"}}}) == []


def test_a_tenant_without_a_selector_syncs_no_class() -> None:
    """Entitled to nothing; vCluster would sync every class for an empty selector."""
    values = _values({"quota": {"hard": {"pods": "1"}}})["vcluster/t0.yaml"]
    assert values["sync"]["fromHost"]["deviceClasses"] == {"enabled": False}
    assert _errors(values) == []


def test_the_tenant_sync_switches_are_kept() -> None:
    spec = {
        "deviceClassSelector": {"matchLabels": {"pool": "shared"}},
        "sync": {
            "toHost": {"resourceClaimTemplates": {"enabled": False}},
            "fromHost": {"nodes": {"enabled": True, "selector": {"labels": {"gpu": "a100"}}}},
        },
    }
    values = _values(spec)["vcluster/t0.yaml"]
    assert values == {
        "sync": {
            "toHost": {
                "resourceClaims": {"enabled": True},
                "resourceClaimTemplates": {"enabled": False},
            },
            "fromHost": {
                "deviceClasses": {"enabled": True, "selector": {"matchLabels": {"pool": "shared"}}},
                "nodes": {"enabled": True, "selector": {"labels": {"gpu": "a100"}}},
            },
        }
    }
    assert _errors(values) == []


def test_class_sync_switched_off_stays_off() -> None:
    spec = {
        "deviceClassSelector": {"matchLabels": {"pool": "shared"}},
        "sync": {"fromHost": {"deviceClasses": {"enabled": False}}},
    }
    values = _values(spec)["vcluster/t0.yaml"]
    assert values["sync"]["fromHost"]["deviceClasses"] == {"enabled": False}
