"""The StatefulSet controller: pods with stable names, created and replaced in order.

Upstream's ``pkg/controller/statefulset`` and ``pkg/controller/history``: each pod template
is a ControllerRevision ``<set>-<hash>`` (its ``data`` the template as a patch, numbered
``revision``; returning to an earlier template renumbers that revision). Pods are
``<set>-<ordinal>`` with the labels ``statefulset.kubernetes.io/pod-name``,
``apps.kubernetes.io/pod-index`` and ``controller-revision-hash``, ``hostname`` and
``subdomain`` (``serviceName``). With ``OrderedReady`` one pod is created at a time, the
next only once the previous is Running and Ready, and surplus pods go from the highest
ordinal, one at a time; ``Parallel`` creates and deletes them all at once. A RollingUpdate
replaces pods not at the update revision from the highest ordinal down to ``partition``,
``maxUnavailable`` (default 1) at a time, each once fewer pods are unhealthy; OnDelete
waits for the user to delete them. ``volumeClaimTemplates`` become a claim per pod,
created before it and mounted by it, kept or deleted as
``persistentVolumeClaimRetentionPolicy`` says (:mod:`allot.controllers.setclaims`); a
pod template's ``resourceClaims`` pass through unchanged, so the resourceclaim controller
gives each pod its own claim. One instance serves the host and every tenant cluster.
Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Hashable

from allot.api.documents import clone_document
from allot.api.pods import is_pod_ready
from allot.controllers import rollout
from allot.controllers.adoption import (
    claim,
    in_namespace,
    is_pod_available,
    owner_keys,
    ready_since,
    typed,
)
from allot.controllers.context import ControllerContext
from allot.controllers.runtime import RetryLater
from allot.controllers.setclaims import SetClaims, add_volumes
from allot.controllers.workloads import (
    ClusterContexts,
    WorkloadKey,
    controller_of,
    controller_ref,
    event_key,
    pod_from_template,
)
from allot.statuses import to_status
from allot.store import WatchEvent
from allot.store.errors import AlreadyExists
from allot.types import Obj

MANAGER = "statefulset-controller"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
HASH_LABEL = "controller.kubernetes.io/hash"
ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


class StatefulSetController:
    name = "statefulset"
    watches = frozenset(
        {"statefulsets.apps", "pods", "controllerrevisions.apps"}
    )  # the resources keys_for answers for

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts
        self.failures: Counter[WorkloadKey] = Counter()

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        if event.resource == "statefulsets.apps":
            return [event_key(event)]
        if event.resource not in ("pods", "controllerrevisions.apps"):
            return []
        return owner_keys(self.contexts, event, "StatefulSet")

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("StatefulSet")

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, "StatefulSet")
        if found is None:
            self.failures.pop(key, None)
            return
        context, stored = found
        sync = SetSync(context, typed(stored, "apps/v1", "StatefulSet"))
        sync.sync()
        if sync.refused:  # a refused pod creation is tried again, backing off
            self.failures[key] += 1
            raise RetryLater(min(60.0, 0.5 * 2 ** self.failures[key]))
        self.failures.pop(key, None)
        if sync.available_in is not None:  # a ready pod becomes available later
            raise RetryLater(sync.available_in)


def ordinal_of(pod: Obj, set_name: str) -> int:
    """The pod's ordinal when its name is ``<set>-<n>``, else -1."""
    match = ORDINAL.match(pod["metadata"]["name"])
    if match is None or match.group(1) != set_name:
        return -1
    return int(match.group(2))


def revision_template(revision: Obj) -> Obj:
    """The pod template a ControllerRevision records."""
    template = dict(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def is_running_and_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and is_pod_ready(pod)


class SetSync:
    """One sync of one StatefulSet (upstream's ``UpdateStatefulSet``)."""

    def __init__(self, context: ControllerContext, statefulset: Obj) -> None:
        self.context = context
        self.set = statefulset
        self.name: str = statefulset["metadata"]["name"]
        self.namespace: str = statefulset["metadata"].get("namespace") or ""
        self.spec: Obj = statefulset.get("spec") or {}
        self.monotonic = self.spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        self.collisions = int((statefulset.get("status") or {}).get("collisionCount") or 0)
        self.refused = False
        self.available_in: float | None = None  # seconds until a ready pod is available
        self.claims = SetClaims(context, statefulset)

    def sync(self) -> None:
        pods = claim(
            self.context,
            self.set,
            "Pod",
            in_namespace(self.context, "Pod", self.namespace),
            MANAGER,
        )
        revisions = claim(
            self.context,
            self.set,
            "ControllerRevision",
            in_namespace(self.context, "ControllerRevision", self.namespace),
            MANAGER,
        )
        revisions.sort(key=lambda r: (int(r.get("revision") or 0), r["metadata"]["name"]))
        update = self._update_revision(revisions)
        current = next(
            (
                r
                for r in revisions
                if r["metadata"]["name"] == (self.set.get("status") or {}).get("currentRevision")
            ),
            update,
        )
        if not self.set["metadata"].get("deletionTimestamp"):
            self._converge(pods, current, update)
        pods = [p for p in in_namespace(self.context, "Pod", self.namespace) if _owned(p, self.set)]
        self._write_status(pods, current, update)
        self._truncate_history(pods, revisions, current, update)

    # ------------------------------------------------------------ revisions
    def _revision_for(self, number: int) -> Obj:
        template = clone_document(self.spec.get("template") or {})
        data = {"spec": {"template": {**template, "$patch": "replace"}}}
        digest = rollout.template_hash(data, self.collisions or None)
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        labels[HASH_LABEL] = digest
        metadata: Obj = {
            "name": f"{self.name[:223]}-{digest}",
            "namespace": self.namespace,
            "labels": labels,
            "ownerReferences": [controller_ref(self.set)],
        }
        annotations = self.set["metadata"].get("annotations")
        if annotations:  # the set's, as newRevision copies them (kubectl's CHANGE-CAUSE)
            metadata["annotations"] = dict(annotations)
        return {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": metadata,
            "data": data,
            "revision": number,
        }

    def _update_revision(self, revisions: list[Obj]) -> Obj:
        """The revision of the current template: the newest if equal, an earlier equal one
        renumbered (a rollback), else a new one (``getStatefulSetRevisions``)."""
        number = max((int(r.get("revision") or 0) for r in revisions), default=0) + 1
        wanted = self._revision_for(number)
        wanted_data = rollout.semantic(wanted["data"])
        equal = [r for r in revisions if rollout.semantic(r.get("data")) == wanted_data]
        if equal and revisions and equal[-1] is revisions[-1]:
            return revisions[-1]
        if equal:
            renumbered = clone_document(equal[-1])
            renumbered["revision"] = number
            return self.context.update("ControllerRevision", renumbered, MANAGER)
        while True:
            try:
                return self.context.create("ControllerRevision", wanted, MANAGER)
            except AlreadyExists:
                found = self.context.get(
                    "ControllerRevision", self.namespace, wanted["metadata"]["name"]
                )
                if found is not None and rollout.semantic(found.get("data")) == wanted_data:
                    return found
                self.collisions += 1
                wanted = self._revision_for(number)

    def _truncate_history(
        self, pods: list[Obj], revisions: list[Obj], current: Obj, update: Obj
    ) -> None:
        live = {p["metadata"].get("labels", {}).get(REVISION_LABEL) for p in pods}
        live |= {current["metadata"]["name"], update["metadata"]["name"]}
        history = [r for r in revisions if r["metadata"]["name"] not in live]
        limit = self.spec.get("revisionHistoryLimit")
        limit = rollout.DEFAULT_HISTORY_LIMIT if limit is None else int(limit)
        for revision in history[: max(0, len(history) - limit)]:
            self.context.delete("ControllerRevision", self.namespace, revision["metadata"]["name"])

    # ----------------------------------------------------------------- pods
    def _start(self) -> int:
        return int((self.spec.get("ordinals") or {}).get("start") or 0)

    def _wanted(self) -> int:
        replicas = self.spec.get("replicas")
        return 1 if replicas is None else int(replicas)

    def _new_pod(self, ordinal: int, current: Obj, update: Obj) -> Obj:
        strategy = self.spec.get("updateStrategy") or {}
        partition = (strategy.get("rollingUpdate") or {}).get("partition")
        current_replicas = int((self.set.get("status") or {}).get("currentReplicas") or 0)
        rolling = strategy.get("type", "RollingUpdate") == "RollingUpdate"
        use_current = (
            rolling and strategy.get("rollingUpdate") is None and ordinal < current_replicas
        ) or (
            strategy.get("rollingUpdate") is not None
            and partition is not None
            and ordinal < int(partition)
        )
        revision = current if use_current else update
        name = f"{self.name}-{ordinal}"
        pod = pod_from_template(
            self.set,
            revision_template(revision),
            name=name,
            labels={
                POD_NAME_LABEL: name,
                POD_INDEX_LABEL: str(ordinal),
                REVISION_LABEL: revision["metadata"]["name"],
            },
        )
        pod["spec"]["hostname"] = name
        add_volumes(self.set, pod, ordinal)
        if self.spec.get("serviceName"):
            pod["spec"]["subdomain"] = self.spec["serviceName"]
        return pod

    def _healthy(self, pod: Obj) -> bool:
        min_ready = int(self.spec.get("minReadySeconds") or 0)
        return (
            is_running_and_ready(pod)
            and is_pod_available(pod, min_ready, self.context.clock())
            and not pod["metadata"].get("deletionTimestamp")
        )

    def _converge(self, pods: list[Obj], current: Obj, update: Obj) -> None:
        start, wanted = self._start(), self._wanted()
        replicas: dict[int, Obj | None] = dict.fromkeys(range(start, start + wanted))
        condemned: list[Obj] = []
        for pod in pods:
            ordinal = ordinal_of(pod, self.name)
            if ordinal in replicas:
                replicas[ordinal] = pod
            elif ordinal >= 0:
                condemned.append(pod)
        condemned.sort(key=lambda p: -ordinal_of(p, self.name))
        if not self._process_replicas(replicas, current, update):
            return
        if not self._process_condemned(condemned):
            return
        self._rolling_update(replicas, update)

    def _process_replicas(self, replicas: dict[int, Obj | None], current: Obj, update: Obj) -> bool:
        """Create missing pods and replace finished ones; False when an ordered set must
        wait."""
        for ordinal in sorted(replicas):
            pod = replicas[ordinal]
            if pod is not None and (pod.get("status") or {}).get("phase") in (
                "Failed",
                "Succeeded",
            ):
                if not pod["metadata"].get("deletionTimestamp"):
                    self._delete_pod(pod)
                return False
            if pod is None:
                if not self.claims.ensure(ordinal, f"{self.name}-{ordinal}"):
                    self.refused = True  # tried again, backing off
                    return False
                created = self._create_pod(self._new_pod(ordinal, current, update))
                if self.monotonic or not created:
                    return False
                continue
            if self.claims.templates:
                self.claims.retain(pod, ordinal, scaled_down=False)
            if self.monotonic and not self._healthy(pod):
                return False
            self._repair_identity(pod, ordinal)
        return True

    def _repair_identity(self, pod: Obj, ordinal: int) -> None:
        """Put back the identity labels of a pod that lost them (``updateIdentity``)."""
        name = pod["metadata"]["name"]
        wanted = {POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)}
        labels = pod["metadata"].get("labels") or {}
        if all(labels.get(k) == v for k, v in wanted.items()):
            return
        latest = self.context.get("Pod", self.namespace, name)
        if latest is None:
            return
        latest["metadata"]["labels"] = {**(latest["metadata"].get("labels") or {}), **wanted}
        self.context.update("Pod", latest, MANAGER)

    def _process_condemned(self, condemned: list[Obj]) -> bool:
        unhealthy = next((p for p in condemned if not self._healthy(p)), None)
        for pod in condemned:
            if pod["metadata"].get("deletionTimestamp"):
                if self.monotonic:
                    return False
                continue
            if self.monotonic and not self._healthy(pod) and pod is not unhealthy:
                return False
            if self.claims.templates:
                self.claims.retain(pod, ordinal_of(pod, self.name), scaled_down=True)
            self._delete_pod(pod)
            if self.monotonic:
                return False
        return True

    def _rolling_update(self, replicas: dict[int, Obj | None], update: Obj) -> None:
        """Replace pods not at the update revision from the highest ordinal down to the
        partition, while fewer than ``maxUnavailable`` (default 1; gate
        MaxUnavailableStatefulSet, beta, on) pods are unhealthy."""
        strategy = self.spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") == "OnDelete":
            return
        rolling = strategy.get("rollingUpdate") or {}
        partition = int(rolling.get("partition") or 0)
        allowed = rollout.scaled_value(rolling.get("maxUnavailable", 1), len(replicas), False)
        unavailable = sum(1 for pod in replicas.values() if pod is None or not self._healthy(pod))
        budget = max(1, allowed) - unavailable
        start = self._start()
        for ordinal in sorted(replicas, reverse=True):
            if budget <= 0 or ordinal - start < partition:
                return
            pod = replicas[ordinal]
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                continue
            if (pod["metadata"].get("labels") or {}).get(REVISION_LABEL) != update["metadata"][
                "name"
            ]:
                self._delete_pod(pod)
                budget -= 1

    def _create_pod(self, pod: Obj) -> bool:
        name = pod["metadata"]["name"]
        try:
            self.context.create("Pod", pod, MANAGER)
        except Exception as err:  # refused: reported as upstream's pod control does
            message = to_status(err).message or str(err)
            self.refused = True
            self.context.event(
                self.set,
                "Warning",
                "FailedCreate",
                f"create Pod {name} in StatefulSet {self.name} failed error: {message}",
                MANAGER,
            )
            return False
        self.context.event(
            self.set,
            "Normal",
            "SuccessfulCreate",
            f"create Pod {name} in StatefulSet {self.name} successful",
            MANAGER,
        )
        return True

    def _delete_pod(self, pod: Obj) -> None:
        name = pod["metadata"]["name"]
        self.context.delete("Pod", self.namespace, name)
        self.context.event(
            self.set,
            "Normal",
            "SuccessfulDelete",
            f"delete Pod {name} in StatefulSet {self.name} successful",
            MANAGER,
        )

    # --------------------------------------------------------------- status
    def _wait_for_availability(self, pod: Obj, min_ready: int) -> None:
        since = ready_since(pod)
        if since is None:
            return
        wait = (since + dt.timedelta(seconds=min_ready) - self.context.clock()).total_seconds()
        wait = max(0.05, wait + 0.01)
        self.available_in = wait if self.available_in is None else min(self.available_in, wait)

    def _write_status(self, pods: list[Obj], current: Obj, update: Obj) -> None:
        min_ready = int(self.spec.get("minReadySeconds") or 0)
        now = self.context.clock()
        counts = {
            "replicas": 0,
            "readyReplicas": 0,
            "availableReplicas": 0,
            "currentReplicas": 0,
            "updatedReplicas": 0,
        }
        for pod in pods:
            created = bool((pod.get("status") or {}).get("phase"))
            counts["replicas"] += created
            if is_running_and_ready(pod):
                counts["readyReplicas"] += 1
                available = is_pod_available(pod, min_ready, now)
                counts["availableReplicas"] += available
                if not available:
                    self._wait_for_availability(pod, min_ready)
            if created and not pod["metadata"].get("deletionTimestamp"):
                revision = (pod["metadata"].get("labels") or {}).get(REVISION_LABEL)
                counts["currentReplicas"] += revision == current["metadata"]["name"]
                counts["updatedReplicas"] += revision == update["metadata"]["name"]
        status: Obj = {
            "observedGeneration": self.set["metadata"].get("generation"),
            **counts,
            "currentRevision": current["metadata"]["name"],
            "updateRevision": update["metadata"]["name"],
            "collisionCount": self.collisions,
        }
        strategy = (self.spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
        if (
            strategy == "RollingUpdate"
            and counts["updatedReplicas"] == counts["replicas"]
            and counts["readyReplicas"] == counts["replicas"]
        ):
            status["currentReplicas"] = counts["updatedReplicas"]
            status["currentRevision"] = status["updateRevision"]
        old = self.set.get("status") or {}
        status = _wire(status, old)
        if status == _wire(old, old):
            return
        latest = self.context.get("StatefulSet", self.namespace, self.name)
        if latest is None:
            return
        latest["status"] = status
        self.context.update_status("StatefulSet", latest, MANAGER)


def _wire(status: Obj, old: Obj) -> Obj:
    """A status as the wire has it (``replicas``, ``availableReplicas`` and
    ``collisionCount`` always; other counts omitted when zero), keeping conditions."""
    always = ("replicas", "availableReplicas", "collisionCount")
    wire = {k: v for k, v in status.items() if k in always or v not in (0, None, "")}
    for key in always:
        wire[key] = int(status.get(key) or 0)
    if old.get("conditions"):
        wire["conditions"] = old["conditions"]
    return wire


def _owned(pod: Obj, owner: Obj) -> bool:
    ref = controller_of(pod)
    return ref is not None and ref.get("uid") == owner["metadata"].get("uid")
