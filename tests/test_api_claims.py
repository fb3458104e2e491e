"""The claim-reading rules of ``allot.api.claims`` (upstream ``resourceclaim.Name`` and the
allocation loops the scheduler, quota and audit share)."""

from __future__ import annotations

import pytest

from allot.api import claims
from allot.api.errors import ClaimNotCreatedError
from allot.types import Obj

POD: Obj = {
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {
        "resourceClaims": [
            {"name": "direct", "resourceClaimName": "shared"},
            {"name": "templated", "resourceClaimTemplateName": "t"},
            {"name": "skipped", "resourceClaimTemplateName": "t"},
        ]
    },
    "status": {
        "resourceClaimStatuses": [
            {"name": "templated", "resourceClaimName": "p-templated-x7k"},
            {"name": "skipped"},
        ],
        "extendedResourceClaimStatus": {"resourceClaimName": "p-extended"},
    },
}
CLAIM: Obj = {
    "spec": {
        "devices": {
            "requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu-whole"}},
                {
                    "name": "any",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": "gpu-h100"},
                        {"name": "small", "deviceClassName": "gpu-slice"},
                        {"name": "again", "deviceClassName": "gpu-whole"},
                    ],
                },
            ]
        }
    },
    "status": {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": "d", "pool": "n1", "device": "gpu-0"},
                    {"request": "any/small", "driver": "d", "pool": "n1", "device": "mig-1"},
                    {
                        "request": "gpu",
                        "driver": "d",
                        "pool": "n1",
                        "device": "gpu-1",
                        "adminAccess": True,
                    },
                ]
            }
        }
    },
}


def test_claim_name_follows_upstream() -> None:
    entries = POD["spec"]["resourceClaims"]
    assert claims.claim_name(POD, entries[0]) == "shared"
    assert claims.claim_name(POD, entries[1]) == "p-templated-x7k"
    assert claims.claim_name(POD, entries[2]) is None  # the controller recorded: no claim


def test_a_template_claim_not_recorded_yet_is_an_error() -> None:
    pod = {**POD, "status": {}}
    with pytest.raises(ClaimNotCreatedError, match='pod "ns/p": ResourceClaim not created yet'):
        claims.claim_name(pod, POD["spec"]["resourceClaims"][1])


def test_every_claim_a_pod_names() -> None:
    assert claims.pod_claim_names(POD) == {
        "direct": "shared",
        "templated": "p-templated-x7k",
        "": "p-extended",
    }
    assert claims.referenced_claims(POD) == {"shared", "p-templated-x7k", "p-extended"}


def test_classes_in_order_once_each() -> None:
    assert claims.claim_classes(CLAIM) == ["gpu-whole", "gpu-h100", "gpu-slice"]
    assert claims.request_class(CLAIM, "any/small") == "gpu-slice"
    assert claims.request_class(CLAIM, "gpu") == "gpu-whole"
    assert claims.request_class(CLAIM, "missing") == ""


def test_admin_access_devices_are_not_in_use() -> None:
    assert claims.allocated_devices(CLAIM) == {
        ("d", "n1", "gpu-0"): "gpu",
        ("d", "n1", "mig-1"): "any/small",
    }
    assert len(claims.allocated_devices(CLAIM, with_admin_access=True)) == 3
    assert claims.allocated_devices({"status": {}}) == {}
