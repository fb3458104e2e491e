"""Leader election through a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection.

Replicas of one controller share a Lease; the one whose identity it holds leads, the others
wait. The rules are client-go's:

- A candidate reads the Lease every ``retry_period`` (2 s). It takes it when there is none
  (it creates it), when it holds it already, or when the record has not changed for
  ``lease_duration`` (15 s) *as the candidate observed it*: expiry is judged by the
  candidate's own monotonic clock since it last saw the record change, never by comparing
  the holder's ``renewTime`` with its own wall clock, so clock skew between machines does
  not matter.
- Taking it writes ``holderIdentity``, ``leaseDurationSeconds``, ``acquireTime`` and
  ``renewTime`` and, when the holder changes, ``leaseTransitions`` + 1; the update carries
  the resourceVersion read, so of two candidates only one wins (the other gets a
  Conflict and tries again later).
- The leader renews every ``retry_period``; when it could not renew for ``renew_deadline``
  (10 s, less than the lease duration) it stops leading before anyone else may take
  over, and its work is cancelled.
- On a graceful stop the leader gives the Lease up (empty holder, duration 1 s), so the
  next replica takes over at once instead of after the lease duration.

A killed leader (kill -9) simply stops renewing: a waiting replica takes over within
``lease_duration`` + ``retry_period`` of its last renewal. Runs over any
:class:`~allot.client.protocol.Client` (its blocking calls in a worker thread). Used by
``allot controller``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from allot.client.errors import AlreadyExists, ClientError, Conflict, Forbidden
from allot.client.protocol import Client
from allot.types import Obj

LOG = logging.getLogger("allot.leaderelection")
MANAGER = "allot-leader-election"
JITTER = 1.2  # client-go's JitterFactor: waits are retry_period * (1 .. 2.2)


@dataclass(frozen=True)
class LeaseSettings:
    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def check(self) -> None:
        """client-go's rules for the three durations (its error texts)."""
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if self.renew_deadline <= JITTER * self.retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if not self.identity:
            raise ValueError("Lock identity is empty")


class LeaderElector:
    def __init__(
        self,
        client: Client,
        settings: LeaseSettings,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        settings.check()
        self.client = client
        self.settings = settings
        self.monotonic = monotonic
        self.leading = False
        self.transitions_seen = 0
        self._observed: Obj | None = None  # the record's spec as last read
        self._observed_at = 0.0

    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Wait to lead, then run ``lead`` while renewing; return when leadership is lost
        (``lead`` cancelled) or ``lead`` returns (the Lease given up)."""
        await self._acquire()
        LOG.info("%s: leading (lease %s/%s)", *self._who())
        work = asyncio.create_task(lead(), name="leader-work")
        renewing = asyncio.create_task(self._renew_until_lost(), name="lease-renewal")
        try:
            done, _ = await asyncio.wait({work, renewing}, return_when=asyncio.FIRST_COMPLETED)
            if renewing in done:
                LOG.error("%s: lost the lease %s/%s; stopping", *self._who())
        finally:
            for task in (work, renewing):
                task.cancel()
            await asyncio.gather(work, renewing, return_exceptions=True)
            if self.leading and self.settings.release_on_cancel:
                await asyncio.to_thread(self._release)
            self.leading = False
        failure = work.exception() if work.done() and not work.cancelled() else None
        if failure is not None:
            raise failure

    def _who(self) -> tuple[str, str, str]:
        return self.settings.identity, self.settings.namespace, self.settings.name

    async def _acquire(self) -> None:
        while True:
            if await asyncio.to_thread(self.try_acquire_or_renew):
                self.leading = True
                return
            await asyncio.sleep(self._jittered())

    async def _renew_until_lost(self) -> None:
        """Renew every retry period; return once a renewal has failed for the whole
        renew deadline."""
        while True:
            await asyncio.sleep(self.settings.retry_period)
            deadline = self.monotonic() + self.settings.renew_deadline
            while not await asyncio.to_thread(self.try_acquire_or_renew):
                if self.monotonic() >= deadline:
                    return
                await asyncio.sleep(self.settings.retry_period)

    def _jittered(self) -> float:
        return self.settings.retry_period * (1 + JITTER * random.random())

    # ------------------------------------------------------------------ one try
    def try_acquire_or_renew(self) -> bool:
        """One attempt (blocking): True when this identity holds the Lease afterwards."""
        settings = self.settings
        now = self.client.now()
        try:
            lease = self.client.get("Lease", settings.namespace, settings.name)
        except ClientError as err:
            self._failed("reading", err)
            return False
        if lease is None:
            return self._create(now)
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observed, self._observed_at = dict(spec), self.monotonic()
        holder = spec.get("holderIdentity") or ""
        held_by_other = holder and holder != settings.identity
        duration = float(spec.get("leaseDurationSeconds") or settings.lease_duration)
        if held_by_other and self._observed_at + duration > self.monotonic():
            return False  # held, and not expired as this candidate sees it
        if holder == settings.identity:
            acquired = spec.get("acquireTime") or _micro(now)
            transitions = int(spec.get("leaseTransitions") or 0)
        else:
            acquired, transitions = _micro(now), int(spec.get("leaseTransitions") or 0) + 1
        lease["spec"] = {
            **spec,
            "holderIdentity": settings.identity,
            "leaseDurationSeconds": int(settings.lease_duration),
            "acquireTime": acquired,
            "renewTime": _micro(now),
            "leaseTransitions": transitions,
        }
        try:
            updated = self.client.update(lease, field_manager=MANAGER)
        except Conflict:
            return False  # another candidate wrote first
        except ClientError as err:
            self._failed("updating", err)
            return False
        self._observed, self._observed_at = dict(updated.get("spec") or {}), self.monotonic()
        self.transitions_seen = transitions
        return True

    def _create(self, now: dt.datetime) -> bool:
        settings = self.settings
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": settings.name, "namespace": settings.namespace},
            "spec": {
                "holderIdentity": settings.identity,
                "leaseDurationSeconds": int(settings.lease_duration),
                "acquireTime": _micro(now),
                "renewTime": _micro(now),
                "leaseTransitions": 0,
            },
        }
        try:
            created = self.client.create(lease, field_manager=MANAGER)
        except AlreadyExists:
            return False
        except ClientError as err:
            self._failed("creating", err)
            return False
        self._observed, self._observed_at = dict(created.get("spec") or {}), self.monotonic()
        return True

    def _release(self) -> None:
        """Give the Lease up (client-go's ReleaseOnCancel)."""
        settings = self.settings
        try:
            lease = self.client.get("Lease", settings.namespace, settings.name)
            if (
                lease is None
                or (lease.get("spec") or {}).get("holderIdentity") != settings.identity
            ):
                return
            lease["spec"] = {
                **lease["spec"],
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": _micro(self.client.now()),
            }
            self.client.update(lease, field_manager=MANAGER)
        except ClientError as err:
            self._failed("releasing", err)

    def _failed(self, doing: str, err: ClientError) -> None:
        rule = err.missing_rule() if isinstance(err, Forbidden) else ""
        LOG.warning(
            "%s: %s the lease %s/%s failed: %s%s",
            self.settings.identity,
            doing,
            self.settings.namespace,
            self.settings.name,
            err.message,
            f" ({rule})" if rule else "",
        )


def _micro(moment: dt.datetime) -> str:
    """A MicroTime as the API writes it."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
