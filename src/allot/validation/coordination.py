"""coordination.k8s.io/v1 Lease validation, as upstream's ``ValidateLeaseSpec``
(pkg/apis/coordination/validation): a positive duration, non-negative transitions, a known
or domain-qualified strategy, and a preferred holder only with a strategy, with upstream's
texts. Called through :mod:`allot.registry.kinds.leases`."""

from __future__ import annotations

from allot.api import coordination_v1 as coordination
from allot.validation import names
from allot.validation.field import ErrorList, Path, forbidden, invalid, not_supported

SPEC = Path("spec")


def validate_lease(obj: coordination.Lease) -> ErrorList:
    spec = obj.spec
    errors: ErrorList = []
    duration = spec.lease_duration_seconds
    if duration is not None and duration <= 0:
        errors.append(
            invalid(SPEC.child("leaseDurationSeconds"), duration, "must be greater than 0")
        )
    transitions = spec.lease_transitions
    if transitions is not None and transitions < 0:
        errors.append(
            invalid(
                SPEC.child("leaseTransitions"), transitions, "must be greater than or equal to 0"
            )
        )
    if spec.strategy is not None:
        errors += _validate_strategy(spec.strategy, SPEC.child("strategy"))
    if spec.preferred_holder and not spec.strategy:
        errors.append(
            forbidden(
                SPEC.child("preferredHolder"), "may only be specified if `strategy` is defined"
            )
        )
    return errors


def _validate_strategy(strategy: str, path: Path) -> ErrorList:
    """``ValidateCoordinatedLeaseStrategy``: a Kubernetes strategy, or a qualified name
    with a domain prefix (upstream reports both under ``strategy.strategy``)."""
    at = path.child("strategy")
    if "/" not in strategy:
        if strategy in coordination.LEASE_STRATEGIES:
            return []
        return [not_supported(at, strategy, coordination.LEASE_STRATEGIES)]
    return [invalid(at, strategy, message) for message in names.is_qualified_name(strategy)]
