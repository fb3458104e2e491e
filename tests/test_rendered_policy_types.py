"""The entitlement policies ``allot render`` writes type-check on a real API server.

Kubernetes 1.36 type-checks a ValidatingAdmissionPolicy against the schema of every kind it
matches and reports what does not compile in ``status.typeChecking`` (see
``tests/typed_policy_cel.py``). The policies must come out clean: a warning there reads as
a broken policy to the platform engineer who applied it, and hides real mistakes.
"""

from __future__ import annotations

import pytest

from allot.tenancy import entitlement
from tests.typed_policy_cel import compiles, matched_kinds, type_check

POLICIES = {
    entitlement.CLAIMS_POLICY: entitlement.claims_policy,
    entitlement.PODS_POLICY: entitlement.pods_policy,
}


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_rendered_policy_has_no_type_checking_warnings(name: str) -> None:
    warnings = type_check(POLICIES[name]())
    assert warnings == [], "\n".join(f"{w.kind} {w.field}: {w.error}" for w in warnings)


def test_policies_are_checked_against_every_kind_they_match() -> None:
    assert matched_kinds(entitlement.claims_policy()) == ["ResourceClaim", "ResourceClaimTemplate"]
    assert matched_kinds(entitlement.pods_policy()) == ["Pod"]


@pytest.mark.parametrize(
    ("kind", "expression", "error"),
    [
        ("ResourceClaim", "object.spec.spec", "undefined field 'spec'"),
        ("ResourceClaimTemplate", "has(object.status)", "undefined field 'status'"),
        (
            "Pod",
            "object.spec.containers + object.spec.ephemeralContainers",
            "found no matching overload for '_+_'",
        ),
    ],
)
def test_the_checker_finds_what_upstream_finds(kind: str, expression: str, error: str) -> None:
    """The checker itself: the mistakes the policies once made are reported."""
    assert error in (compiles(kind, expression) or "")


@pytest.mark.parametrize(
    ("kind", "expression"),
    [
        ("ResourceClaim", "object.spec.devices.requests.all(r, has(r.exactly))"),
        ("ResourceClaimTemplate", "object.spec.spec.devices.requests.size() > 0"),
        ("Pod", "object.spec.containers.all(c, !has(c.securityContext))"),
    ],
)
def test_the_checker_accepts_upstream_fields(kind: str, expression: str) -> None:
    assert compiles(kind, expression) is None
