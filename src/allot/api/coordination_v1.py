"""``coordination.k8s.io/v1`` Lease, with every field Kubernetes 1.36 defines.

Stored and served in every cluster so that operators' leader election (client-go's
``leaderelection`` with a Lease lock) works against allot; nothing in allot reads them.
Served by :mod:`allot.registry.kinds.leases`, validated by
:mod:`allot.validation.coordination`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from allot.api.base import ApiModel, MicroTime
from allot.api.meta import ObjectMeta

LEASE_STRATEGIES = ["OldestEmulationVersion"]


class LeaseSpec(ApiModel):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: MicroTime | None = None
    renew_time: MicroTime | None = None
    lease_transitions: int | None = None
    strategy: str | None = None
    preferred_holder: str | None = None


class Lease(ApiModel):
    api_version: Literal["coordination.k8s.io/v1"] = "coordination.k8s.io/v1"
    kind: Literal["Lease"] = "Lease"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: LeaseSpec = Field(default_factory=LeaseSpec)
