"""vCluster values files as tenant definitions: used keys, warnings, errors with paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.api.tenancy import Tenant, entitlement_selector, syncs
from allot.tenancy.values import (
    VCLUSTER_FROM_HOST,
    VCLUSTER_TO_HOST,
    ValuesError,
    merged,
    tenant_document,
)

SEEDS = Path(__file__).resolve().parents[1] / "examples" / "seeds"


def test_the_seed_config_works_as_is() -> None:
    values = yaml.safe_load((SEEDS / "000-legal-ai-vcluster-config.yaml").read_text())
    document, warnings = tenant_document("legal-ai", values)
    assert warnings == []
    tenant = Tenant.model_validate(document)
    selector = entitlement_selector(tenant.spec)
    assert selector is not None
    assert selector.match_labels == {"gpu.platform/tenant": "legal-ai"}
    assert syncs(tenant.spec, "resourceClaims")
    assert syncs(tenant.spec, "deviceClasses")


def test_resource_quota_policy_becomes_the_tenant_quota() -> None:
    values = {
        "policies": {
            "resourceQuota": {
                "enabled": True,
                "quota": {"gpu-whole.deviceclass.resource.k8s.io/devices": 2},
            }
        }
    }
    document, _ = tenant_document("t", values)
    assert document["spec"]["quota"]["hard"] == {
        "gpu-whole.deviceclass.resource.k8s.io/devices": "2"
    }


def test_known_but_unused_keys_warn() -> None:
    _, warnings = tenant_document(
        "t", {"controlPlane": {"distro": {}}, "sync": {"fromHost": {"events": {"enabled": True}}}}
    )
    assert warnings == [
        "controlPlane: vCluster setting not used by the embedded platform, ignored",
        "sync.fromHost.events: vCluster setting not used by the embedded platform, ignored",
    ]


def test_node_sync_settings_are_read() -> None:
    nodes = {"enabled": True, "syncBackChanges": False, "selector": {"all": True}}
    document, warnings = tenant_document("t", {"sync": {"fromHost": {"nodes": nodes}}})
    assert warnings == []
    assert document["spec"]["sync"]["fromHost"]["nodes"] == nodes


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"synk": {}}, 'synk: unknown key (not a vCluster values key; did you mean "sync"?)'),
        ({"sync": {"toGuest": {}}}, "sync.toGuest: unknown key (expected toHost or fromHost"),
        (
            {"sync": {"toHost": {"resourceClaimz": {}}}},
            'sync.toHost.resourceClaimz: unknown key (did you mean "resourceClaims"?)',
        ),
        (
            {"sync": {"toHost": {"resourceClaims": {"enabled": True, "selector": {}}}}},
            "sync.toHost.resourceClaims.selector: unknown key",
        ),
        (
            {"sync": {"fromHost": {"deviceClasses": {"enabled": "maybe"}}}},
            "sync.fromHost.deviceClasses.enabled: Input should be a valid boolean",
        ),
        ([1, 2], "the values file must be a YAML mapping"),
    ],
)
def test_bad_values_name_their_path(values: object, message: str) -> None:
    with pytest.raises(ValuesError) as caught:
        tenant_document("t", values)  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"sync": {"fromhost": {}}}, 'did you mean "fromHost"?'),
        ({"sync": {"fromHost": {"deviceClass": {}}}}, 'did you mean "deviceClasses"?'),
        ({"sync": {"fromHost": {"deviceClasses": {"selectr": {}}}}}, 'did you mean "selector"?'),
        (
            {"sync": {"fromHost": {"deviceClasses": {"selector": {"matchLabel": {}}}}}},
            'sync.fromHost.deviceClasses.selector.matchLabel: unknown key (did you mean '
            '"matchLabels"?)',
        ),
        (
            {"sync": {"fromHost": {"deviceClasses": {"selector": {"matchExpressions": [
                {"key": "a", "operator": "In", "value": ["x"]}]}}}}},
            'selector.matchExpressions[0].value: unknown key (did you mean "values"?)',
        ),
        ({"sync": {"fromHost": {"nodes": {"selector": {"al": True}}}}}, 'did you mean "all"?'),
        ({"policies": {"resourceQuota": {"quotas": {}}}}, 'did you mean "quota"?'),
        (
            {"policies": {"resourceQuta": {"quota": {"pods": 1}}}},
            'policies.resourceQuta: unknown key (did you mean "resourceQuota"?)',
        ),
        ({"controlPlan": {}}, 'did you mean "controlPlane"?'),
    ],
)  # fmt: skip
def test_unknown_keys_suggest_the_nearest_vcluster_key(values: object, message: str) -> None:
    """At every depth, and a policies entry vCluster does not know is an error, not a
    setting "not used by the embedded platform"."""
    with pytest.raises(ValuesError) as caught:
        tenant_document("t", values)  # type: ignore[arg-type]
    assert message in str(caught.value)


SCHEMA = json.loads(
    (Path(__file__).parent / "data" / "vcluster-values-schema-v0.36.1.json").read_text()
)


def _schema_keys(definition: dict[str, Any]) -> set[str]:
    if "$ref" in definition:
        definition = SCHEMA["$defs"][definition["$ref"].rsplit("/", 1)[1]]
    return set(definition.get("properties") or {})


def test_the_known_sync_keys_are_vclusters() -> None:
    """The keys allot knows under sync.toHost and sync.fromHost are the schema's."""
    sync = SCHEMA["$defs"]["Sync"]["properties"]
    assert _schema_keys(sync["toHost"]) == VCLUSTER_TO_HOST
    assert _schema_keys(sync["fromHost"]) == VCLUSTER_FROM_HOST


def test_values_files_merge_as_helm_merges_them() -> None:
    base = {
        "sync": {
            "fromHost": {
                "deviceClasses": {"enabled": True, "selector": {"matchLabels": {"a": "1"}}}
            }
        },
        "policies": {"resourceQuota": {"enabled": True}},
    }
    override = {
        "sync": {"fromHost": {"deviceClasses": {"selector": {"matchLabels": {"b": "2"}}}}},
        "policies": {"resourceQuota": {"quota": {"pods": 3}}},
    }
    assert merged([base, override]) == {
        "sync": {"fromHost": {"deviceClasses": {"enabled": True, "selector": {
            "matchLabels": {"a": "1", "b": "2"}}}}},
        "policies": {"resourceQuota": {"enabled": True, "quota": {"pods": 3}}},
    }  # fmt: skip
    assert merged([{"a": [1, 2]}, {"a": [3]}]) == {"a": [3]}  # lists are replaced


def test_a_tenant_document_is_taken_as_is() -> None:
    document = {
        "apiVersion": "allot.dev/v1alpha1",
        "kind": "Tenant",
        "metadata": {"name": "other"},
        "spec": {"deviceClassSelector": {"matchLabels": {"tier": "gold"}}},
    }
    tenant, warnings = tenant_document("gold", document)
    assert tenant["metadata"]["name"] == "gold"
    assert warnings == []


@pytest.mark.parametrize(
    ("policies", "made"),
    [
        ({"resourceQuota": {"enabled": True}}, True),
        ({"resourceQuota": {"enabled": "true"}}, True),
        ({"resourceQuota": {"enabled": "auto"}}, False),
        ({"resourceQuota": {}}, False),
        ({"resourceQuota": {"enabled": "auto"}, "limitRange": {"enabled": True}}, True),
        ({"resourceQuota": {}, "limitRange": {"enabled": "true"}}, True),
        ({"resourceQuota": {"enabled": False}, "limitRange": {"enabled": True}}, False),
    ],
)
def test_the_quota_is_made_when_vcluster_makes_it(policies: dict[str, Any], made: bool) -> None:
    """vCluster's chart (templates/resourcequota.yaml) compares the switches as text; its
    default for both is ``auto``, which makes no quota unless the other switch is true."""
    policies["resourceQuota"]["quota"] = {"pods": 5}
    document, warnings = tenant_document("t", {"policies": policies})
    if made:
        assert document["spec"]["quota"]["hard"] == {"pods": "5"}
    else:
        assert "quota" not in document["spec"]
        assert warnings[-1].startswith("policies.resourceQuota.quota: ignored, as vCluster")


@pytest.mark.parametrize(
    "values",
    [
        {"sleep": {"auto": {"afterInactivity": "1h"}}},
        {"deletion": {}},
        {"snapshots": {}},
        {"serviceCIDR": "10.96.0.0/12"},
        {"sync": {"toHost": {"endpointSlices": {"enabled": True}}}},
        {"sync": {"toHost": {"gatewayApi": {"enabled": True}}}},
        {"sync": {"fromHost": {"gateways": {"enabled": True}}}},
        {"sync": {"fromHost": {"gatewayClasses": {"enabled": True}}}},
    ],
)
def test_keys_of_current_vcluster_releases_are_known(values: dict[str, Any]) -> None:
    """Keys of vCluster v0.32 to v0.37's values schema warn, never fail as unknown."""
    _, warnings = tenant_document("t", values)
    assert len(warnings) == 1
    assert warnings[0].endswith("vCluster setting not used by the embedded platform, ignored")
