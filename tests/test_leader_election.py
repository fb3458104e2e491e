"""Leader election's rules, client-go's, on the in-process client with a hand-moved
monotonic clock: the first candidate takes the Lease; another waits the lease duration
from when it last saw the record change (never by comparing wall clocks), then takes it
with one more transition; the holder renews; given up, it is free at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from allot.client.leaderelection import LeaderElector, LeaseSettings
from allot.registry.clusters import Registry
from allot.registry.inprocess import InProcessClient


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _elector(client: InProcessClient, identity: str, clock: Clock) -> LeaderElector:
    settings = LeaseSettings("allot-controller", "allot-system", identity)
    return LeaderElector(client, settings, monotonic=clock)


def test_the_lease_passes_only_after_the_holder_stops_renewing(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "data")
    client = InProcessClient("host", registry.store, registry.handlers, registry.clock)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "allot-system"}}
    client.create(namespace, field_manager="test")
    clock_a, clock_b = Clock(), Clock()
    a, b = _elector(client, "a", clock_a), _elector(client, "b", clock_b)
    try:
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()  # held; b starts counting from now
        clock_b.now += 14.0
        assert not b.try_acquire_or_renew()  # 14 s < 15 s since b saw it change
        clock_a.now += 10.0
        assert a.try_acquire_or_renew()  # a renews: the record changes
        clock_b.now += 5.0  # 19 s since b first saw it, 5 s since the renewal
        assert not b.try_acquire_or_renew()
        clock_b.now += 15.1  # a stopped renewing (killed)
        assert b.try_acquire_or_renew()
        lease = client.get("Lease", "allot-system", "allot-controller")
        assert lease is not None
        spec = lease["spec"]
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("b", 1)
        assert spec["leaseDurationSeconds"] == 15
        assert not a.try_acquire_or_renew()  # a, back, sees b hold it (its record changed)
        b._release()
        assert a.try_acquire_or_renew()  # given up: free at once
    finally:
        registry.close()


def test_durations_follow_client_gos_rules() -> None:
    with pytest.raises(ValueError, match="leaseDuration must be greater than renewDeadline"):
        LeaseSettings("l", "ns", "me", lease_duration=10, renew_deadline=10).check()
    with pytest.raises(ValueError, match="renewDeadline must be greater than retryPeriod"):
        LeaseSettings("l", "ns", "me", renew_deadline=2, retry_period=2).check()
    with pytest.raises(ValueError, match="Lock identity is empty"):
        LeaseSettings("l", "ns", "").check()
