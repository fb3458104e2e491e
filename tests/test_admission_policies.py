"""ValidatingAdmissionPolicy evaluation and validation (scenarios/admission-policies.yaml).

Each case runs against a real API server object (store, handlers, admission chain) on a
temporary SQLite file, without HTTP: the policy, binding, params and namespace are created
through the handlers (so they are validated), then the claim."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.registry.admission import AdmissionDenied
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.statuses import InvalidObjectError, to_status

TABLE = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "admission-policies.yaml").read_text()
)
OPTIONS = WriteOptions(
    field_manager="test", field_validation="Strict", dry_run=False, user="system:allot:host"
)


def _merge(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        merged = copy.deepcopy(base)
        for key, value in override.items():
            merged[key] = _merge(merged.get(key), value)
        return merged
    return copy.deepcopy(override)


def _create(api: Registry, obj: dict[str, Any], options: WriteOptions = OPTIONS) -> Any:
    resource = by_kind(obj["kind"])
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    return api.handlers.create("host", Target(resource, namespace, None, ""), obj, options)


def _namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"] for c in TABLE["cases"]])
def test_policy_case(case: dict[str, Any], tmp_path: Path) -> None:
    spec = {
        **TABLE["defaults"],
        **{k: v for k, v in case.items() if k in ("namespaceLabels", "namespace", "params")},
    }
    api = Registry(tmp_path)
    _create(api, _namespace(spec["namespace"], spec["namespaceLabels"]))
    _create(api, _namespace("platform", {}))
    for params in spec["params"]:
        _create(api, params)
    _create(api, _merge(TABLE["defaults"]["policy"], case.get("policy", {})))
    _create(api, _merge(TABLE["defaults"]["binding"], case.get("binding", {})))
    for obj in case.get("objects", []):
        _create(api, obj)
    claim = _merge(TABLE["defaults"]["claim"], case.get("claim", {}))
    claim["metadata"]["namespace"] = spec["namespace"]
    user = case.get("user")
    options = replace(OPTIONS, user=user["name"], groups=tuple(user["groups"])) if user else OPTIONS
    if case["expect"] == "deny":
        with pytest.raises(AdmissionDenied) as caught:
            _create(api, claim, options)
        status = to_status(caught.value)
        assert status.code == case["code"]
        assert case.get("message", "denied request") in (status.message or "")
        return
    result = _create(api, claim, options)
    if case["expect"] == "warn":
        assert result.warnings == [case["message"]]
    elif case["expect"] == "audit":
        records = api.admission_audit.path("host").read_text().splitlines()
        assert json.loads(records[-1])["message"] == case["message"]
        assert result.warnings == []
    else:
        assert result.warnings == []
    api.store.close()


@pytest.mark.parametrize("case", TABLE["invalid"], ids=[c["name"] for c in TABLE["invalid"]])
def test_invalid_policy_objects(case: dict[str, Any], tmp_path: Path) -> None:
    api = Registry(tmp_path)
    with pytest.raises(InvalidObjectError) as caught:
        _create(api, case["object"])
    assert case["message"] in str(caught.value)
    api.store.close()


def test_policies_and_bindings_are_stored_with_the_api_servers_defaults(tmp_path: Path) -> None:
    """As ``SetObjectDefaults_ValidatingAdmissionPolicy``/``...Binding`` store them (a real
    1.36 API server returns the same: tests/e2e/test_real_production.py): without these,
    ``allot apply`` saw every rendered policy as changed on a real cluster."""
    api = Registry(tmp_path)
    policy = copy.deepcopy(TABLE["defaults"]["policy"])
    policy["spec"].pop("failurePolicy", None)
    policy["spec"]["matchConstraints"]["excludeResourceRules"] = [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["pods"]}
    ]
    binding = copy.deepcopy(TABLE["defaults"]["binding"])
    binding["spec"]["matchResources"] = {"namespaceSelector": {"matchLabels": {"a": "b"}}}
    stored_policy = _create(api, policy).object["spec"]
    stored_binding = _create(api, binding).object["spec"]
    api.store.close()
    assert stored_policy["failurePolicy"] == "Fail"
    match = stored_policy["matchConstraints"]
    assert (match["matchPolicy"], match["namespaceSelector"], match["objectSelector"]) == (
        "Equivalent",
        {},
        {},
    )
    rules = match["resourceRules"] + match["excludeResourceRules"]
    assert [rule["scope"] for rule in rules] == ["*"] * len(rules)
    assert stored_binding["matchResources"] == {
        "matchPolicy": "Equivalent",
        "namespaceSelector": {"matchLabels": {"a": "b"}},
        "objectSelector": {},
    }
