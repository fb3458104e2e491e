"""Events as client-go's recorder writes them, over any :class:`~allot.client.protocol.Client`.

:func:`event_object` is a core/v1 Event about an object, as kube-scheduler and the kubelet
write them (reason, message, count, first and last timestamp, source and reporting
component; the part of the object and the node it is about, :class:`EventOrigin`).
:class:`EventRecorder` is client-go's correlator for identical events (its ``eventLogger``):
an Event equal to one recorded before in everything but its time (the same source,
involved object and part of it, type, reason and message) is not created again; its
``count`` goes up and its ``lastTimestamp`` moves, by a strategic merge patch, as client-go
patches it; if that Event is gone meanwhile a new one is created. A new Event is named
``<object>.<hex nanoseconds>`` as client-go names them, so the name order is the order they
happened in (``kubectl describe`` keeps it among the events of one second). The recorder
works alike on both implementations of the protocol: it only creates and patches. Used by
:class:`allot.controllers.context.ControllerContext` and every controller on the protocol.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from allot.client.errors import AlreadyExists, Forbidden, NotFound
from allot.types import Obj, rfc3339

if TYPE_CHECKING:
    from allot.client.protocol import Client

RECENT_EVENTS = 4096
"""Events remembered for counting repeats (client-go's correlator keeps as many)."""


@dataclass(frozen=True)
class EventOrigin:
    """Where an Event comes from beyond its component: the part of the object it is about
    (``involvedObject.fieldPath``, the kubelet's ``spec.containers{NAME}``) and the node
    that reports it (``source.host`` and ``reportingInstance``, the kubelet's node)."""

    field_path: str = ""
    host: str = ""


def event_object(
    involved: Obj,
    event_type: str,
    reason: str,
    message: str,
    component: str,
    now: str,
    where: EventOrigin | None = None,
) -> Obj:
    """A core/v1 Event about ``involved`` (its metadata is the caller's to name)."""
    metadata = involved["metadata"]
    event: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"namespace": metadata.get("namespace") or "default"},
        "involvedObject": {
            "kind": involved.get("kind"),
            "apiVersion": involved.get("apiVersion"),
            "namespace": metadata.get("namespace"),
            "name": metadata["name"],
            "uid": metadata.get("uid"),
            "resourceVersion": metadata.get("resourceVersion"),
        },
        "reason": reason,
        "message": message,
        "type": event_type,
        "source": {"component": component},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "reportingComponent": component,
    }
    if where is not None and where.field_path:
        event["involvedObject"]["fieldPath"] = where.field_path
    if where is not None and where.host:
        event["source"]["host"] = where.host
        event["reportingInstance"] = where.host
    return event


def correlation_key(
    involved: Obj, event_type: str, reason: str, message: str, component: str, where: EventOrigin
) -> str:
    """client-go's ``getEventKey``: what makes two events the same one."""
    metadata = involved["metadata"]
    parts = (
        component,
        where.host,
        str(involved.get("kind")),
        str(metadata.get("namespace") or ""),
        str(metadata.get("name")),
        where.field_path,
        str(metadata.get("uid")),
        str(involved.get("apiVersion")),
        event_type,
        reason,
        message,
    )
    return hashlib.sha1("\x00".join(parts).encode()).hexdigest()


class EventRecorder:
    """Records Events through ``client``, correlating identical ones (see the module)."""

    def __init__(self, client: Client, *, remember: int = RECENT_EVENTS) -> None:
        self.client = client
        self.remember = remember
        self._recent: dict[str, tuple[str, str, int]] = {}  # key -> namespace, name, count
        self._last_stamp = 0

    def record(
        self,
        involved: Obj,
        event_type: str,
        reason: str,
        message: str,
        component: str,
        *,
        origin: EventOrigin | None = None,
    ) -> None:
        """Record an Event, or count a repeat of one recorded before. A refusal (the
        namespace is being deleted, the recorder may not write Events) drops it, as
        client-go's recorder drops what its sink refuses."""
        where = origin or EventOrigin()
        key = correlation_key(involved, event_type, reason, message, component, where)
        moment = self.client.now()
        known = self._recent.get(key)
        if known is not None:
            namespace, name, count = known
            try:
                self.client.patch(
                    "Event",
                    namespace,
                    name,
                    {"count": count + 1, "lastTimestamp": rfc3339(moment)},
                    field_manager=component,
                    patch_type="strategic",
                )
                self._recent[key] = (namespace, name, count + 1)
                return
            except NotFound:
                del self._recent[key]  # gone (expired, deleted): a new one is made
            except Forbidden:
                return
        self._create(key, involved, event_type, reason, message, component, where, moment)

    def _create(
        self,
        key: str,
        involved: Obj,
        event_type: str,
        reason: str,
        message: str,
        component: str,
        where: EventOrigin,
        moment: dt.datetime,
    ) -> None:
        metadata = involved["metadata"]
        namespace = metadata.get("namespace") or "default"
        name = f"{metadata['name'][:236]}.{self._stamp(moment):x}"
        event = event_object(
            involved, event_type, reason, message, component, rfc3339(moment), where
        )
        event["metadata"] = {"name": name, "namespace": namespace}
        try:
            self.client.create(event, field_manager=component)
        except (AlreadyExists, Forbidden, NotFound):  # dropped, as a recorder drops it
            return
        self._recent[key] = (namespace, name, 1)
        if len(self._recent) > self.remember:
            del self._recent[next(iter(self._recent))]

    def _stamp(self, moment: dt.datetime) -> int:
        """Nanoseconds of ``moment``, made strictly increasing (a fixed clock in tests, or
        two events in one tick, still get distinct names in order)."""
        stamp = max(int(moment.timestamp() * 1_000_000) * 1000, self._last_stamp + 1)
        self._last_stamp = stamp
        return stamp
