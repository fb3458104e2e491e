"""The steady load the platform is killed under, and the ledger of what it acknowledged.

One ``Worker`` thread per cluster (the host and each tenant, namespace ``default``) creates
units, a ResourceClaim (a whole GPU or a MIG slice) and a Pod using it, and deletes its
oldest unit (pod, then claim) once it holds ``liveUnits`` or at random; the host's worker
also deletes tenants' pod twins on the host, which the sync must follow. Every answer is
written to the ``Ledger``: a 2xx is acknowledged (the object must be there after any crash,
or gone for a delete), a 4xx is refused (quota), and a request that got no answer because
the platform died is unknown (either outcome is correct). A 5xx is a failure of its own.
Choices come from a ``random.Random`` seeded per round and worker; what is in flight when
the kill lands depends on timing. Used by ``test_crash_rounds``.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from allot.tenancy import names
from tests.faults.world import claim, pod

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"
PODS = "/api/v1/namespaces/{ns}/pods"
PATHS = {"ResourceClaim": CLAIMS, "Pod": PODS}
ObjectKey = tuple[str, str, str, str]  # cluster, kind, namespace, name


@dataclass
class Record:
    uid: str
    state: str  # present | deleted | unknown | followed (its host twin was deleted)


@dataclass
class Ledger:
    records: dict[ObjectKey, Record] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Twins deleted before their tenant object's create was noted (the host's worker can
    # see and delete a twin before the tenant's worker thread has read its 201): the
    # tenant object's uid -> the state its record takes when noted.
    early: dict[str, str] = field(default_factory=dict)

    def note(self, key: ObjectKey, uid: str, state: str) -> None:
        with self.lock:
            if state == "present" and uid in self.early:
                state = self.early.pop(uid)
            self.records[key] = Record(uid, state)
            self.counts[state] += 1

    def follow(self, key: ObjectKey, uid: str | None = None, state: str = "followed") -> None:
        """The object's host twin was deleted: the sync must delete it too. ``uid``: the
        tenant object the twin stood for (None: whichever is present). ``state`` is
        ``unknown`` when the twin's delete got no answer: it may have been done."""
        with self.lock:
            record = self.records.get(key)
            if record is not None and record.state == "present" and uid in (None, record.uid):
                record.state = state
                self.counts[state] += 1
            elif uid is not None and (record is None or record.uid != uid):
                self.early[uid] = state


class Worker(threading.Thread):
    """Claims and pods in one cluster until ``stop`` is set or the platform dies."""

    def __init__(
        self,
        cluster: str,
        client: httpx.Client,
        ledger: Ledger,
        rng: random.Random,
        settings: dict[str, Any],
        prefix: str,
        stop: threading.Event,
    ) -> None:
        super().__init__(name=f"load-{cluster}", daemon=True)
        self.cluster, self.client, self.ledger, self.rng = cluster, client, ledger, rng
        self.settings, self.prefix, self.stop = settings, prefix, stop
        self.tenants: list[str] = []
        self.live: list[str] = []
        self.made = 0
        self.dead = False  # the platform stopped answering

    def run(self) -> None:
        while not self.stop.is_set() and not self.dead:
            draw = self.rng.random()
            if self.tenants and draw < 0.1:
                self.delete_a_twin()
            elif self.live and (len(self.live) >= self.settings["liveUnits"] or draw < 0.35):
                self.delete_unit(self.live.pop(0))
            else:
                self.create_unit()

    def create_unit(self) -> None:
        name = f"{self.prefix}-{self.made}"
        self.made += 1
        whole = self.rng.random() < self.settings["wholeShare"]
        document = claim(name, "fault-whole" if whole else "fault-slice")
        if self.write("POST", "ResourceClaim", "default", name, document) != "present":
            return
        self.live.append(name)
        self.write("POST", "Pod", "default", name, pod(name, name))

    def delete_unit(self, name: str) -> None:
        for kind in ("Pod", "ResourceClaim"):
            if self.write("DELETE", kind, "default", name) == "unknown":
                return

    def delete_a_twin(self) -> None:
        """The host deletes a tenant's pod twin; the tenant's pod must follow."""
        tenant = self.rng.choice(self.tenants)
        namespace = f"tenant-{tenant}"
        try:
            listing = self.client.get(PODS.format(ns=namespace))
        except httpx.HTTPError:
            self.dead = True
            return
        twins = {p["metadata"]["name"]: p for p in listing.json().get("items") or []}
        if not twins:
            return
        twin = self.rng.choice(sorted(twins))
        origin = (twins[twin]["metadata"].get("annotations") or {}).get(names.UID_ANNOTATION)
        outcome = self.write("DELETE", "Pod", namespace, twin)
        if outcome in ("deleted", "unknown"):
            name, _, tenant_namespace = twin.rpartition(".")
            state = "followed" if outcome == "deleted" else "unknown"
            self.ledger.follow((tenant, "Pod", tenant_namespace, name), origin, state)

    def write(
        self, verb: str, kind: str, namespace: str, name: str, body: dict[str, Any] | None = None
    ) -> str:
        """One request, its outcome in the ledger: present, deleted, refused or unknown."""
        key = (self.cluster, kind, namespace, name)
        path = PATHS[kind].format(ns=namespace) + ("" if verb == "POST" else f"/{name}")
        try:
            response = self.client.request(verb, path, json=body)
        except httpx.HTTPError:
            self.dead = True
            if verb == "POST" or key in self.ledger.records:
                self.ledger.note(key, "", "unknown")
            return "unknown"
        if response.status_code >= 500:
            self.ledger.server_errors.append(f"{verb} {path}: {response.status_code}")
            self.ledger.note(key, "", "unknown")
            return "unknown"
        if verb == "POST" and response.is_success:
            self.ledger.note(key, response.json()["metadata"]["uid"], "present")
            return "present"
        if verb == "DELETE" and (response.is_success or response.status_code == 404):
            record = self.ledger.records.get(key)
            self.ledger.note(key, record.uid if record else "", "deleted")
            return "deleted"
        self.ledger.counts["refused"] += 1
        return "refused"
