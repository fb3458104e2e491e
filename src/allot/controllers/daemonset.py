"""The daemon set controller: one pod of a DaemonSet on every node that should run it.

Upstream's ``pkg/controller/daemon``. Whether a node should run the daemon pod is
``NodeShouldRunDaemonPod``: the template's ``nodeName`` (if any), ``nodeSelector`` and
required node affinity, and its taints against the pod's tolerations, which include the
tolerations every daemon pod gets (not-ready and unreachable ``NoExecute``; disk, memory
and PID pressure and unschedulable ``NoSchedule``; network-unavailable for host-network
pods). A node with an untolerated ``NoSchedule`` taint gets no new pod but keeps one it
has; an untolerated ``NoExecute`` taint, or a node that no longer matches, has its pod
deleted. Each pod is pinned to its node by required node affinity on
``metadata.name`` (``ReplaceDaemonSetPodNodeNameNodeAffinity``) and placed by the
scheduler, so it lands there like any pod (in a tenant, its host twin does). Failed pods are
deleted (Warning ``FailedDaemonPod``) with a back-off per node, succeeded ones deleted, and
a node with two pods keeps the oldest (with ``maxSurge``, an old ready pod stays until the
new one is available).

Each template is a ControllerRevision ``<ds>-<hash>`` (``data`` the template as a patch,
``revision`` numbered, the hash label ``controller-revision-hash``); pods carry that hash
and the ``pod-template-generation`` label. ``RollingUpdate`` replaces old pods: without
surge it deletes old pods while fewer than ``maxUnavailable`` (default 1) of the desired
nodes are unavailable (an unavailable old pod goes at once); with ``maxSurge`` it creates
new pods beside old ones on up to ``maxSurge`` nodes and deletes each old pod once its new
one is available. ``OnDelete`` waits for the user to delete them. Old revisions beyond
``revisionHistoryLimit`` that no pod uses are deleted. The status counts desired,
current, misscheduled, ready, available and updated pods per node, as upstream's
``updateDaemonSetStatus``. One instance serves the host and every tenant cluster, whose
nodes are the host nodes the tenant sees (:mod:`allot.tenancy.nodes`). Built by
:mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Hashable

from allot.api import core_v1 as corev1
from allot.api.documents import clone_document
from allot.api.pods import is_pod_ready
from allot.controllers import rollout
from allot.controllers.adoption import claim, is_pod_available, owner_keys, typed
from allot.controllers.context import ControllerContext
from allot.controllers.nodefit import NodeFilter
from allot.controllers.podcontrol import create_pod, delete_pod, slow_start
from allot.controllers.runtime import RetryLater
from allot.controllers.workloads import (
    ClusterContexts,
    WorkloadKey,
    controller_ref,
    event_key,
    pod_from_template,
)
from allot.store import WatchEvent
from allot.store.errors import AlreadyExists
from allot.types import Obj

MANAGER = "daemon-set-controller"
HASH_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
BURST_REPLICAS = 250
FAILED_BACKOFF = (1.0, 900.0)  # upstream's failedPodsBackoff: 1 s doubling up to 15 min
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")


class DaemonSetController:
    name = "daemonset"
    watches = frozenset({"daemonsets.apps", "pods", "nodes", "controllerrevisions.apps"})

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts
        self.failures: Counter[WorkloadKey] = Counter()
        # (set, node) -> (when the next failed pod there may be deleted, the delay after)
        self.backoff: dict[tuple[WorkloadKey, str], tuple[dt.datetime, float]] = {}

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        if event.resource == "daemonsets.apps":
            return [event_key(event)]
        if event.resource == "nodes":
            if not _node_changed(event):
                return []
            return [
                WorkloadKey(
                    event.cluster, ds["metadata"].get("namespace") or "", ds["metadata"]["name"]
                )
                for ds in self.contexts(event.cluster).scan("DaemonSet")
            ]
        return owner_keys(self.contexts, event, "DaemonSet")

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("DaemonSet")

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, "DaemonSet")
        if found is None:
            self.failures.pop(key, None)
            self.backoff = {k: v for k, v in self.backoff.items() if k[0] != key}
            return
        context, stored = found
        sync = DaemonSync(context, typed(stored, "apps/v1", "DaemonSet"), key, self.backoff)
        sync.sync()
        if sync.refused:  # a refused write is tried again, backing off
            self.failures[key] += 1
            raise RetryLater(min(60.0, 0.5 * 2 ** self.failures[key]))
        self.failures.pop(key, None)
        if sync.look_again_in is not None:
            raise RetryLater(sync.look_again_in)


def _node_changed(event: WatchEvent) -> bool:
    """Whether a node event can change where daemon pods run: a node added or removed, or
    its labels or spec (taints, unschedulable) changed (``shouldIgnoreNodeUpdate``: status
    heartbeats are not)."""
    previous = event.previous
    if event.type != "MODIFIED" or previous is None:
        return True
    before, after = previous.get("metadata") or {}, event.object.get("metadata") or {}
    return bool(
        before.get("labels") != after.get("labels")
        or previous.get("spec") != event.object.get("spec")
    )


def template_generation(ds: Obj) -> str | None:
    value = (ds["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION)
    return None if value is None else str(value)


def daemon_template(ds: Obj, hash_: str) -> Obj:
    """``CreatePodTemplate``: the template with every daemon pod's tolerations and the
    revision hash and template generation labels."""
    template = clone_document((ds.get("spec") or {}).get("template") or {})
    spec = template.setdefault("spec", {})
    defaults = list(DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        defaults.append(HOST_NETWORK_TOLERATION)
    tolerations = list(spec.get("tolerations") or [])
    for key, effect in defaults:
        wanted = {"key": key, "operator": "Exists", "effect": effect}
        same = [i for i, t in enumerate(tolerations) if _same_toleration(t, wanted)]
        if same:
            tolerations[same[0]] = wanted
        else:
            tolerations.append(wanted)
    spec["tolerations"] = tolerations
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    generation = template_generation(ds)
    if generation is not None:
        labels[GENERATION_LABEL] = generation
    labels[HASH_LABEL] = hash_
    return template


def _same_toleration(toleration: Obj, wanted: Obj) -> bool:
    """``MatchToleration``: same key, operator, value and effect."""
    return all(toleration.get(k) == wanted.get(k) for k in ("key", "operator", "value", "effect"))


def pin_to_node(template: Obj, node: str) -> Obj:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: the required node affinity becomes the
    one term ``metadata.name In [node]`` (preferred terms are kept)."""
    pinned = clone_document(template)
    affinity = pinned["spec"].setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        ]
    }
    return pinned


def target_node(pod: Obj) -> str | None:
    """``GetTargetNodeName``: the pod's node, or the one its affinity pins it to."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            values = field.get("values") or []
            pinned = field.get("key") == "metadata.name" and field.get("operator") == "In"
            if pinned and len(values) == 1:
                return str(values[0])
    return None


def _creation_order(pod: Obj) -> tuple[str, int, str]:
    """``podByCreationTimestampAndPhase``: older first, running before pending."""
    phase = (pod.get("status") or {}).get("phase")
    return (
        str(pod["metadata"].get("creationTimestamp") or ""),
        0 if phase == "Running" else 1,
        pod["metadata"]["name"],
    )


class DaemonSync:
    """One sync of one DaemonSet (upstream's ``syncDaemonSet``)."""

    def __init__(
        self,
        context: ControllerContext,
        ds: Obj,
        key: WorkloadKey,
        backoff: dict[tuple[WorkloadKey, str], tuple[dt.datetime, float]],
    ) -> None:
        self.context = context
        self.ds = ds
        self.key = key
        self.backoff = backoff
        self.name: str = ds["metadata"]["name"]
        self.namespace: str = ds["metadata"].get("namespace") or ""
        self.spec: Obj = ds.get("spec") or {}
        self.min_ready = int(self.spec.get("minReadySeconds") or 0)
        self.collisions = int((ds.get("status") or {}).get("collisionCount") or 0)
        self.fit = NodeFilter({"spec": daemon_template(ds, "").get("spec") or {}})
        self.refused = False
        self.look_again_in: float | None = None
        self.typed_nodes: dict[str, corev1.Node] = {}

    def sync(self) -> None:
        if self.ds["metadata"].get("deletionTimestamp"):
            return
        for node in self.context.scan("Node"):
            self.typed_nodes[node["metadata"]["name"]] = corev1.Node.model_validate(node)
        current, old = self._history()
        hash_ = current["metadata"]["labels"][HASH_LABEL]
        self._manage(hash_)
        strategy = self.spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            self._rolling_update(hash_)
        self._cleanup_history(old)
        self._write_status(hash_)

    def _later(self, seconds: float) -> None:
        seconds = max(0.05, seconds)
        self.look_again_in = min(self.look_again_in or seconds, seconds)

    # ------------------------------------------------------------- nodes
    def should_run(self, node: str) -> tuple[bool, bool]:
        """``NodeShouldRunDaemonPod``: (should run, should continue running)."""
        wanted = ((self.spec.get("template") or {}).get("spec") or {}).get("nodeName")
        typed_node = self.typed_nodes[node]
        if (wanted and wanted != node) or not self.fit.matches_affinity(typed_node):
            return False, False
        if self.fit.untolerated(typed_node, ("NoSchedule", "NoExecute")) is not None:
            return False, self.fit.untolerated(typed_node, ("NoExecute",)) is None
        return True, True

    def _candidates(self, kind: str) -> list[Obj]:
        """What the set may claim: what it controls and the namespace's orphans."""
        owned = self.context.owned_by(kind, self.ds)
        return owned + self.context.orphans(kind, self.namespace)

    def pods_by_node(self) -> dict[str, list[Obj]]:
        """The set's pods by the node they run on or are pinned to, after adoption and
        release (``getNodesToDaemonPods``; finished pods being deleted left out)."""
        pods = claim(self.context, self.ds, "Pod", self._candidates("Pod"), MANAGER)
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            phase = (pod.get("status") or {}).get("phase")
            if pod["metadata"].get("deletionTimestamp") and phase in ("Succeeded", "Failed"):
                continue
            node = target_node(pod)
            if node is not None:
                by_node.setdefault(node, []).append(pod)
        for pods_on_node in by_node.values():
            pods_on_node.sort(key=_creation_order)
        return by_node

    # ------------------------------------------------------------ manage
    def _manage(self, hash_: str) -> None:
        """Create a pod on each node that should run one and has none; delete pods where
        they should not be, failed and succeeded pods, and duplicates."""
        by_node = self.pods_by_node()
        creating: list[str] = []
        deleting: list[Obj] = []
        for node in sorted(self.typed_nodes):
            should_run, should_continue = self.should_run(node)
            pods = by_node.get(node, [])
            if should_run and not pods:
                creating.append(node)
            elif should_continue:
                deleting += self._pods_to_replace(node, pods, hash_)
            else:
                deleting += [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        for node, pods in by_node.items():  # pods waiting for a node that is gone
            if node not in self.typed_nodes:
                deleting += [p for p in pods if not (p.get("spec") or {}).get("nodeName")]
        self._sync_nodes(deleting, creating, hash_)

    def _pods_to_replace(self, node: str, pods: list[Obj], hash_: str) -> list[Obj]:
        running: list[Obj] = []
        deleting: list[Obj] = []
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed":
                if self._failed_pod_may_go(node, pod):
                    deleting.append(pod)
            elif phase == "Succeeded":
                deleting.append(pod)
            else:
                running.append(pod)
        if not self._surge():
            return deleting + running[1:]  # the oldest stays
        return deleting + self._surge_duplicates(running, hash_)

    def _failed_pod_may_go(self, node: str, pod: Obj) -> bool:
        """A failed pod is deleted (and reported) unless its node is backing off."""
        now = self.context.clock()
        until, delay = self.backoff.get((self.key, node), (now, 0.0))
        if now < until:
            self._later((until - now).total_seconds())
            return False
        delay = min(FAILED_BACKOFF[1], delay * 2 if delay else FAILED_BACKOFF[0])
        self.backoff[(self.key, node)] = (now + dt.timedelta(seconds=delay), delay)
        self.context.event(
            self.ds,
            "Warning",
            "FailedDaemonPod",
            f"Found failed daemon pod {self.namespace}/{pod['metadata']['name']} on node "
            f"{node}, will try to kill it",
            MANAGER,
        )
        return True

    def _surge_duplicates(self, running: list[Obj], hash_: str) -> list[Obj]:
        """With surge, a node keeps its oldest new pod and, while that is not available
        and the old one is ready, its oldest old pod; every other pod goes."""
        oldest_new = oldest_old = None
        extra: list[Obj] = []
        for pod in running:
            is_new = (pod["metadata"].get("labels") or {}).get(HASH_LABEL) == hash_
            if is_new and oldest_new is None:
                oldest_new = pod
            elif not is_new and oldest_old is None:
                oldest_old = pod
            else:
                extra.append(pod)
        if (
            oldest_new is not None
            and oldest_old is not None
            and (not is_pod_ready(oldest_old) or self._available(oldest_new))
        ):
            extra.append(oldest_old)
        return extra

    def _sync_nodes(self, deleting: list[Obj], creating: list[str], hash_: str) -> None:
        """``syncNodes``: at most ``burstReplicas`` creations (slow start) and deletions."""
        template = daemon_template(self.ds, hash_)
        creating = creating[:BURST_REPLICAS]
        error = slow_start(
            len(creating),
            lambda i: create_pod(
                self.context,
                self.ds,
                pod_from_template(self.ds, pin_to_node(template, creating[i])),
                MANAGER,
            ),
        )
        for pod in deleting[:BURST_REPLICAS]:
            error = delete_pod(self.context, self.ds, pod, MANAGER) or error
        self.refused = self.refused or error is not None

    # ----------------------------------------------------------- updates
    def _surge(self) -> bool:
        rolling = (self.spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
        return rollout.scaled_value(rolling.get("maxSurge") or 0, 100, True) > 0

    def _available(self, pod: Obj) -> bool:
        return is_pod_available(pod, self.min_ready, self.context.clock())

    def _updated(self, pod: Obj, hash_: str) -> bool:
        """``IsPodUpdated``: the pod has the revision's hash or the template generation."""
        labels = pod["metadata"].get("labels") or {}
        generation = template_generation(self.ds)
        return labels.get(HASH_LABEL) == hash_ or (
            generation is not None and labels.get(GENERATION_LABEL) == generation
        )

    def _new_and_old(self, pods: list[Obj], hash_: str) -> tuple[Obj | None, Obj | None, bool]:
        """``findUpdatedPodsOnNode``: the node's new and old pod (not being deleted); False
        when it has two of either."""
        new = old = None
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if self._updated(pod, hash_):
                if new is not None:
                    return None, None, False
                new = pod
            else:
                if old is not None:
                    return None, None, False
                old = pod
        return new, old, True

    def _rolling_update(self, hash_: str) -> None:
        by_node = self.pods_by_node()
        desired = [n for n in sorted(self.typed_nodes) if self.should_run(n)[0]]
        for node in desired:
            by_node.setdefault(node, [])
        rolling = (self.spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
        surge = rollout.scaled_value(rolling.get("maxSurge") or 0, len(desired), True)
        unavailable = rollout.scaled_value(rolling.get("maxUnavailable") or 0, len(desired), True)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        if surge == 0:
            self._replace_old_pods(by_node, hash_, unavailable)
        else:
            self._surge_new_pods(by_node, hash_, surge)

    def _replace_old_pods(self, by_node: dict[str, list[Obj]], hash_: str, budget: int) -> None:
        """Without surge: delete old pods while fewer than ``budget`` nodes are
        unavailable; an unavailable old pod is replaced regardless."""
        unavailable = 0
        replace: list[Obj] = []
        candidates: list[Obj] = []
        for node in sorted(by_node):
            new, old, single = self._new_and_old(by_node[node], hash_)
            if not single or (new is None) == (old is None):
                unavailable += 1  # the manage step creates or deletes here
            elif new is not None:
                unavailable += not self._available(new)
            elif old is not None and not self._available(old):
                replace.append(old)
            elif old is not None and unavailable < budget:
                candidates.append(old)
        remaining = max(0, min(budget - unavailable, len(candidates)))
        self._sync_nodes(replace + candidates[:remaining], [], hash_)

    def _surge_new_pods(self, by_node: dict[str, list[Obj]], hash_: str, budget: int) -> None:
        """With surge: a new pod beside the old one on up to ``budget`` nodes at a time (at
        once where the old one is unavailable); an old pod goes once its new one is
        available."""
        surging = 0
        allowed: list[str] = []
        candidates: list[str] = []
        old_to_delete: list[Obj] = []
        for node in sorted(by_node):
            new, old, single = self._new_and_old(by_node[node], hash_)
            if not single:
                surging += 1
            elif old is None:
                continue
            elif new is None:
                if self._available(old):
                    if surging < budget:
                        candidates.append(node)
                elif node in self.typed_nodes and self.should_run(node)[0]:
                    allowed.append(node)
                else:
                    old_to_delete.append(old)
            elif not self._available(new):
                surging += 1
            else:
                old_to_delete.append(old)
        remaining = max(0, min(budget - surging, len(candidates)))
        self._sync_nodes(old_to_delete, allowed + candidates[:remaining], hash_)

    # ----------------------------------------------------------- history
    def _history(self) -> tuple[Obj, list[Obj]]:
        """``constructHistory``: the current template's revision (made, or renumbered to
        be the newest) and the older ones."""
        candidates = self._candidates("ControllerRevision")
        revisions = claim(self.context, self.ds, "ControllerRevision", candidates, MANAGER)
        wanted = self._patch()
        current = [r for r in revisions if rollout.semantic(r.get("data")) == wanted]
        old = [r for r in revisions if rollout.semantic(r.get("data")) != wanted]
        number = max((int(r.get("revision") or 0) for r in old), default=0) + 1
        if not current:
            return self._snapshot(number), old
        current.sort(key=lambda r: (int(r.get("revision") or 0), r["metadata"]["name"]))
        kept = current[-1]
        for duplicate in current[:-1]:  # ``dedupCurHistories``
            self.context.delete("ControllerRevision", self.namespace, duplicate["metadata"]["name"])
        if int(kept.get("revision") or 0) < number:
            renumbered = clone_document(kept)
            renumbered["revision"] = number
            kept = self.context.update("ControllerRevision", renumbered, MANAGER)
        if HASH_LABEL not in (kept["metadata"].get("labels") or {}):
            kept = clone_document(kept)
            kept["metadata"].setdefault("labels", {})[HASH_LABEL] = kept["metadata"]["name"]
        return kept, old

    def _patch(self) -> Obj:
        """``getPatch``: the template as a patch that replaces it."""
        template = clone_document(self.spec.get("template") or {})
        patch: Obj = rollout.semantic({"spec": {"template": {**template, "$patch": "replace"}}})
        return patch

    def _snapshot(self, number: int) -> Obj:
        """A new revision of the current template (a hash collision bumps
        ``collisionCount`` and is tried again)."""
        while True:
            template = self.spec.get("template") or {}
            hash_ = rollout.template_hash(template, self.collisions or None)
            labels = dict((template.get("metadata") or {}).get("labels") or {})
            labels[HASH_LABEL] = hash_
            metadata: Obj = {
                "name": f"{self.name[:223]}-{hash_}",
                "namespace": self.namespace,
                "labels": labels,
                "ownerReferences": [controller_ref(self.ds)],
            }
            if self.ds["metadata"].get("annotations"):
                metadata["annotations"] = dict(self.ds["metadata"]["annotations"])
            revision = {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": metadata,
                "data": self._patch(),
                "revision": number,
            }
            try:
                created: Obj = self.context.create("ControllerRevision", revision, MANAGER)
                return created
            except AlreadyExists:
                found = self.context.get("ControllerRevision", self.namespace, metadata["name"])
                if found is not None and rollout.semantic(found.get("data")) == self._patch():
                    return found
                self.collisions += 1

    def _cleanup_history(self, old: list[Obj]) -> None:
        """``cleanupHistory``: the oldest revisions beyond the limit that no pod uses."""
        limit = self.spec.get("revisionHistoryLimit")
        limit = rollout.DEFAULT_HISTORY_LIMIT if limit is None else int(limit)
        excess = len(old) - limit
        if excess <= 0:
            return
        live = {
            (p["metadata"].get("labels") or {}).get(HASH_LABEL)
            for pods in self.pods_by_node().values()
            for p in pods
        }
        for revision in sorted(old, key=lambda r: int(r.get("revision") or 0)):
            if excess <= 0:
                return
            if (revision["metadata"].get("labels") or {}).get(HASH_LABEL) in live:
                continue
            self.context.delete("ControllerRevision", self.namespace, revision["metadata"]["name"])
            excess -= 1

    # ------------------------------------------------------------ status
    def _write_status(self, hash_: str) -> None:
        """``updateDaemonSetStatus``: per node, desired, current, misscheduled, and of its
        oldest pod whether it is ready, available and updated."""
        by_node = self.pods_by_node()
        counts = Counter[str]()
        now = self.context.clock()
        for node in self.typed_nodes:
            should_run, _ = self.should_run(node)
            pods = by_node.get(node, [])
            if not should_run:
                counts["numberMisscheduled"] += bool(pods)
                continue
            counts["desiredNumberScheduled"] += 1
            if not pods:
                continue
            counts["currentNumberScheduled"] += 1
            pod = pods[0]
            if is_pod_ready(pod):
                counts["numberReady"] += 1
                counts["numberAvailable"] += is_pod_available(pod, self.min_ready, now)
            counts["updatedNumberScheduled"] += self._updated(pod, hash_)
        if self.min_ready and counts["numberReady"] != counts["numberAvailable"]:
            self._later(self.min_ready)
        self._store_status(counts)

    def _store_status(self, counts: Counter[str]) -> None:
        status: Obj = {
            key: counts[key]
            for key in (
                "currentNumberScheduled",
                "desiredNumberScheduled",
                "numberMisscheduled",
                "numberReady",
            )
        }
        status["observedGeneration"] = self.ds["metadata"].get("generation")
        for key in ("updatedNumberScheduled", "numberAvailable"):
            if counts[key]:
                status[key] = counts[key]
        unavailable = counts["desiredNumberScheduled"] - counts["numberAvailable"]
        if unavailable:
            status["numberUnavailable"] = unavailable
        if self.collisions:
            status["collisionCount"] = self.collisions
        old = self.ds.get("status") or {}
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        if status == old:
            return
        latest = self.context.get("DaemonSet", self.namespace, self.name)
        if latest is None or latest["metadata"].get("uid") != self.ds["metadata"].get("uid"):
            return
        latest["status"] = status
        self.context.update_status("DaemonSet", latest, MANAGER)
