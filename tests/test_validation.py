"""API validation, table-driven from ``tests/scenarios/validation.yaml`` with pinned texts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from allot.api import kinds
from allot.api import resource_v1 as resourceapi
from allot.cel import SelectorCompiler
from allot.registry.kinds import rules_for
from allot.statuses import InvalidObjectError, hints, to_status
from allot.validation.objects import (
    apply_defaults,
    validate_create,
    validate_status_update,
    validate_update,
)
from allot.validation.resource import ResourceContext
from tests.conftest import load_scenarios

SCENARIOS = load_scenarios("validation.yaml")


def _expand(document: dict[str, Any]) -> dict[str, Any]:
    document = copy.deepcopy(document)
    devices = document.get("spec", {}).get("devices", {})
    if isinstance(devices, dict) and devices.get("requests") == "MANY_REQUESTS_33":
        devices["requests"] = [
            {"name": f"r{i}", "exactly": {"deviceClassName": "x"}} for i in range(33)
        ]
    return document


def _context(compiler: SelectorCompiler, labels: dict[str, str] | None) -> ResourceContext:
    lookup = None if labels is None else (lambda namespace: labels)
    return ResourceContext(compiler=compiler, namespace_labels=lookup)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_validation_scenario(scenario: dict[str, Any], compiler: SelectorCompiler) -> None:
    obj = kinds.decode(_expand(scenario["object"]))
    apply_defaults(obj, rules_for(obj))
    context = _context(compiler, scenario.get("namespaceLabels"))
    if "old" in scenario:  # an update of that stored object
        old = kinds.decode(_expand(scenario["old"]))
        apply_defaults(old, rules_for(old))
        errors = validate_update(obj, old, context, rules_for(obj))
    else:
        errors = validate_create(obj, context, rules_for(obj))
    assert [str(e) for e in errors] == scenario["errors"]


def _claim(spec: dict[str, Any]) -> resourceapi.ResourceClaim:
    return resourceapi.ResourceClaim.model_validate(
        {"metadata": {"name": "c", "namespace": "default"}, "spec": spec}
    )


GPU_SPEC = {
    "devices": {
        "requests": [
            {
                "name": "gpu",
                "exactly": {
                    "deviceClassName": "gpu.nvidia.com",
                    "allocationMode": "ExactCount",
                    "count": 1,
                },
            }
        ]
    }
}


def test_claim_spec_is_immutable(compiler: SelectorCompiler) -> None:
    old, new = _claim(GPU_SPEC), _claim(GPU_SPEC)
    assert validate_update(new, old, _context(compiler, None), rules_for(new)) == []
    assert new.spec.devices
    assert new.spec.devices.requests
    new.spec.devices.requests[0].name = "other"
    errors = validate_update(new, old, _context(compiler, None), rules_for(new))
    assert next(e.body() for e in errors).endswith(": field is immutable")
    assert str(errors[0].path) == "spec"


def test_unchanged_class_selectors_are_not_recompiled(compiler: SelectorCompiler) -> None:
    long_expression = " && ".join(["true"] * 2100)
    document = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "c"},
        "spec": {"selectors": [{"cel": {"expression": long_expression}}]},
    }
    old = kinds.decode(document)
    assert [str(e) for e in validate_create(old, _context(compiler, None), rules_for(old))] == [
        "spec.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"
    ]
    relabelled = kinds.decode({**document, "metadata": {"name": "c", "labels": {"a": "b"}}})
    assert validate_update(relabelled, old, _context(compiler, None), rules_for(relabelled)) == []


def test_slice_identity_is_immutable(compiler: SelectorCompiler) -> None:
    document: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "n",
            "pool": {"name": "p", "resourceSliceCount": 1},
        },
    }
    old = kinds.decode(document)
    moved = kinds.decode(
        {**document, "spec": {**document["spec"], "nodeName": "m", "driver": "other.example.com"}}
    )
    assert [
        str(e) for e in validate_update(moved, old, _context(compiler, None), rules_for(moved))
    ] == [
        'spec.driver: Invalid value: "other.example.com": field is immutable',
        'spec.nodeName: Invalid value: "m": field is immutable',
    ]


def _allocated(
    results: list[dict[str, Any]], reserved: list[dict[str, Any]] | None = None
) -> resourceapi.ResourceClaim:
    claim = _claim(GPU_SPEC)
    claim.status = resourceapi.ResourceClaimStatus.model_validate(
        {"allocation": {"devices": {"results": results}}, "reservedFor": reserved}
    )
    return claim


RESULT = {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-0"}


def test_status_allocation_rules(compiler: SelectorCompiler) -> None:
    context = _context(compiler, None)
    unallocated = _claim(GPU_SPEC)
    assert (
        validate_status_update(_allocated([RESULT]), unallocated, context, rules_for(unallocated))
        == []
    )
    wrong = _allocated([{**RESULT, "request": "nope", "shareID": "ABC"}])
    assert [
        str(e) for e in validate_status_update(wrong, unallocated, context, rules_for(wrong))
    ] == [
        'status.allocation.devices.results[0].request: Invalid value: "nope": must be the '
        "name of a request in the claim or the name of a request and a subrequest separated "
        "by '/'",
        'status.allocation.devices.results[0].shareID: Invalid value: "ABC": uid must be in '
        "RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase "
        "hexadecimal characters",
    ]
    changed = _allocated([{**RESULT, "device": "gpu-1"}])
    errors = validate_status_update(changed, _allocated([RESULT]), context, rules_for(changed))
    assert [e.body() for e in errors] == ['Invalid value: "<allocation>": field is immutable']


def test_reserved_for_requires_allocation(compiler: SelectorCompiler) -> None:
    claim = _claim(GPU_SPEC)
    claim.status = resourceapi.ResourceClaimStatus.model_validate(
        {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]}
    )
    errors = validate_status_update(
        claim, _claim(GPU_SPEC), _context(compiler, None), rules_for(claim)
    )
    assert [str(e) for e in errors] == [
        "status.reservedFor: Forbidden: may not be specified when `allocated` is not set"
    ]


def test_invalid_status_matches_the_api_server(compiler: SelectorCompiler) -> None:
    obj = kinds.decode(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "bad-claim", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {}}, {"name": "x"}]}},
        }
    )
    apply_defaults(obj, rules_for(obj))
    errors = validate_create(obj, _context(compiler, None), rules_for(obj))
    status = to_status(InvalidObjectError(kinds.kind_info(obj), "bad-claim", errors)).to_wire()
    assert status == {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": 'ResourceClaim.resource.k8s.io "bad-claim" is invalid: '
        "[spec.devices.requests[0].exactly.deviceClassName: Required value, "
        "spec.devices.requests[1]: Required value: exactly one of `exactly` or "
        "`firstAvailable` is required]",
        "reason": "Invalid",
        "details": {
            "name": "bad-claim",
            "group": "resource.k8s.io",
            "kind": "ResourceClaim",
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": "spec.devices.requests[0].exactly.deviceClassName",
                },
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: exactly one of `exactly` or "
                    "`firstAvailable` is required",
                    "field": "spec.devices.requests[1]",
                },
            ],
        },
        "code": 422,
    }


def test_quantity_operator_error_carries_a_hint(compiler: SelectorCompiler) -> None:
    obj = kinds.decode(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "c"},
            "spec": {
                "selectors": [
                    {"cel": {"expression": 'device.capacity["x"].memory < quantity("1")'}}
                ]
            },
        }
    )
    errors = validate_create(obj, _context(compiler, None), rules_for(obj))
    status = to_status(InvalidObjectError(kinds.kind_info(obj), "c", errors))
    assert hints(status) == [
        "spec.selectors[0].cel.expression: Quantities cannot be compared with '<' in CEL; "
        "write a.isLessThan(b), e.g. device.capacity['gpu.nvidia.com'].memory.compareTo("
        "quantity('40Gi')) >= 0"
    ]
    assert "Hint" not in (status.message or "")
