"""The Deployment controller: ReplicaSets per pod template, rolled out as the strategy says.

Upstream's ``pkg/controller/deployment``: the ReplicaSets the selector matches are claimed;
the one whose template equals the Deployment's (ignoring ``pod-template-hash``) is the new
one, created as ``<deployment>-<hash>`` when missing, with the revision annotations that
``kubectl rollout history|undo`` read. A resize (``kubectl scale``) or a paused Deployment
only scales (proportionally across ReplicaSets in mid-rollout); otherwise RollingUpdate
adds new pods up to ``replicas + maxSurge`` and removes old ones while at least
``replicas - maxUnavailable`` stay available, and Recreate scales the old ReplicaSets to
zero and waits for their pods to go before it scales up the new one. Old ReplicaSets beyond
``revisionHistoryLimit`` are deleted once the rollout completes. The status and the
Available and Progressing conditions carry upstream's reasons and messages, including
``ProgressDeadlineExceeded``. One instance serves the host and every tenant cluster
(:mod:`allot.controllers.workloads`). Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable, Sequence

from allot.api.documents import clone_document
from allot.controllers import rollout
from allot.controllers.adoption import claim, in_namespace, owner_keys, typed
from allot.controllers.context import ControllerContext
from allot.controllers.runtime import RetryLater
from allot.controllers.workloads import (
    ClusterContexts,
    WorkloadKey,
    controller_of,
    controller_ref,
    event_key,
    owner_key,
)
from allot.statuses import to_status
from allot.store import WatchEvent
from allot.store.errors import AlreadyExists, Conflict
from allot.types import Obj, rfc3339

MANAGER = "deployment-controller"
AVAILABLE = "Available"
PROGRESSING = "Progressing"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MAX_INT32 = 2**31 - 1


class DeploymentController:
    name = "deployment"
    watches = frozenset(
        {"deployments.apps", "replicasets.apps", "pods"}
    )  # the resources keys_for answers for

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts

    # ---------------------------------------------------------------- keys
    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        if event.resource == "deployments.apps":
            return [event_key(event)]
        if event.resource == "replicasets.apps":
            return owner_keys(self.contexts, event, "Deployment")
        if event.resource == "pods" and (
            event.type == "DELETED" or event.object["metadata"].get("deletionTimestamp")
        ):
            return self._deployment_of_pod(event)  # Recreate waits for old pods to go
        return []

    def _deployment_of_pod(self, event: WatchEvent) -> list[Hashable]:
        rs_key = owner_key(event, "ReplicaSet")
        if rs_key is None:
            return []
        rs = self.contexts(event.cluster).peek("ReplicaSet", rs_key.namespace, rs_key.name)
        ref = controller_of(rs) if rs is not None else None
        if ref is None or ref.get("kind") != "Deployment":
            return []
        return [WorkloadKey(event.cluster, rs_key.namespace, ref["name"])]

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("Deployment")

    # ----------------------------------------------------------- reconcile
    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, "Deployment")
        if found is None:
            return
        context, stored = found
        Rollout(context, typed(stored, "apps/v1", "Deployment")).sync()


class Rollout:
    """One sync of one Deployment (upstream's ``syncDeployment``)."""

    def __init__(self, context: ControllerContext, deployment: Obj) -> None:
        self.context = context
        self.d = deployment
        self.namespace: str = deployment["metadata"].get("namespace") or ""
        self.annotations_changed = False

    @property
    def spec(self) -> Obj:
        spec: Obj = self.d.setdefault("spec", {})
        return spec

    def sync(self) -> None:
        selector = self.spec.get("selector")
        if not selector:
            self.context.event(
                self.d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
                MANAGER,
            )
            return
        candidates = in_namespace(self.context, "ReplicaSet", self.namespace)
        sets = [
            typed(rs, "apps/v1", "ReplicaSet")
            for rs in claim(self.context, self.d, "ReplicaSet", candidates, MANAGER)
        ]
        if self.d["metadata"].get("deletionTimestamp"):
            new_rs, old_sets = self.new_and_old(sets, create=False)
            self.write_status(self.calculate_status(old_sets, new_rs))
            return
        self.check_paused_conditions()
        if self.spec.get("paused") or self.is_scaling_event(sets):
            self.scale_only(sets)
            return
        if rollout.is_rolling(self.d):
            self.rolling(sets)
        else:
            self.recreate(sets)

    # ------------------------------------------------------ new and old sets
    def new_and_old(self, sets: list[Obj], create: bool) -> tuple[Obj | None, list[Obj]]:
        """The new ReplicaSet (created when ``create``) and the others, revisions synced
        (``getAllReplicaSetsAndSyncRevision``)."""
        template = self.spec.get("template") or {}
        ordered = sorted(sets, key=_created)
        existing = next(
            (rs for rs in ordered if rollout.equal_ignore_hash(_template(rs), template)), None
        )
        old_sets = [rs for rs in ordered if rs is not existing]
        new_revision = max((rollout.revision(rs) for rs in old_sets), default=0) + 1
        if existing is not None:
            synced = self._sync_existing(existing, new_revision)
            if synced is not existing:  # the caller's list sees the written version
                existing.clear()
                existing.update(synced)
            return existing, old_sets
        if not create:
            return None, old_sets
        return self._create_new(old_sets, new_revision), old_sets

    def _sync_existing(self, rs: Obj, new_revision: int) -> Obj:
        updated = clone_document(rs)
        changed = rollout.set_new_rs_annotations(self.d, updated, new_revision, exists=True)
        min_ready = int(self.spec.get("minReadySeconds") or 0)
        if int((updated.get("spec") or {}).get("minReadySeconds") or 0) != min_ready:
            updated["spec"]["minReadySeconds"] = min_ready
            changed = True
        if changed:
            rs = typed(self.context.update("ReplicaSet", updated, MANAGER), "apps/v1", "ReplicaSet")
        self._set_revision((rs["metadata"].get("annotations") or {}).get(rollout.REVISION, ""))
        status = self.d.setdefault("status", {})
        if self.has_deadline() and _condition(status, PROGRESSING) is None:
            _set_condition(
                status,
                self._condition(
                    PROGRESSING,
                    "True",
                    "FoundNewReplicaSet",
                    f'Found new replica set "{rs["metadata"]["name"]}"',
                ),
            )
            self.annotations_changed = True
        self._flush()
        return rs

    def _create_new(self, old_sets: list[Obj], new_revision: int) -> Obj | None:
        status = self.d.setdefault("status", {})
        rs = self._new_rs(old_sets, new_revision)
        try:
            created = typed(self.context.create("ReplicaSet", rs, MANAGER), "apps/v1", "ReplicaSet")
        except AlreadyExists:
            return self._collided(rs)
        except Conflict:
            raise
        except Exception as err:
            refusal = to_status(err)
            if (refusal.code or 500) >= 500:
                raise
            if self.has_deadline():
                message = f'Failed to create new replica set "{rs["metadata"]["name"]}": '
                failed = self._condition(
                    PROGRESSING, "False", "ReplicaSetCreateError", message + (refusal.message or "")
                )
                before = clone_document(status.get("conditions"))
                _set_condition(status, failed)
                if status.get("conditions") != before:  # once, not on every retry
                    self._write_deployment_status()
            raise RetryLater(5.0) from err
        name = created["metadata"]["name"]
        if rollout.rs_replicas(created) > 0:
            self.context.event(
                self.d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {name} from 0 to {rollout.rs_replicas(created)}",
                MANAGER,
            )
        self._set_revision(str(new_revision))
        if self.has_deadline():
            message = f'Created new replica set "{name}"'
            _set_condition(
                status, self._condition(PROGRESSING, "True", "NewReplicaSetCreated", message)
            )
            self.annotations_changed = True
        self._flush()
        return created

    def _new_rs(self, old_sets: list[Obj], new_revision: int) -> Obj:
        """The new ReplicaSet ``<deployment>-<hash>``: the template and selector with the
        ``pod-template-hash`` label, the replicas it may start with, its annotations."""
        collisions = (self.d.get("status") or {}).get("collisionCount")
        template = clone_document(self.spec.get("template") or {})
        pod_hash = rollout.template_hash(template, collisions)
        labels = {
            **((template.get("metadata") or {}).get("labels") or {}),
            rollout.HASH_LABEL: pod_hash,
        }
        template.setdefault("metadata", {})["labels"] = labels
        selector = clone_document(self.spec.get("selector") or {})
        selector["matchLabels"] = {
            **(selector.get("matchLabels") or {}),
            rollout.HASH_LABEL: pod_hash,
        }
        rs: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{self.d['metadata']['name']}-{pod_hash}",
                "namespace": self.namespace,
                "labels": labels,
                "ownerReferences": [controller_ref(self.d)],
            },
            "spec": {"replicas": 0, "selector": selector, "template": template},
        }
        if self.spec.get("minReadySeconds") is not None:
            rs["spec"]["minReadySeconds"] = self.spec["minReadySeconds"]
        rs["spec"]["replicas"] = rollout.new_rs_replicas(self.d, [*old_sets, rs], rs)
        rollout.set_new_rs_annotations(self.d, rs, new_revision, exists=False)
        return rs

    def _collided(self, rs: Obj) -> Obj | None:
        """A ReplicaSet of that name exists: ours with this template is the new one; any
        other is a hash collision, resolved by bumping ``collisionCount``."""
        found = self.context.get("ReplicaSet", self.namespace, rs["metadata"]["name"])
        if found is not None:
            ref = controller_of(found)
            if (
                ref is not None
                and ref.get("uid") == self.d["metadata"]["uid"]
                and rollout.equal_ignore_hash(_template(found), self.spec.get("template") or {})
            ):
                return typed(found, "apps/v1", "ReplicaSet")
        status = self.d.setdefault("status", {})
        status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
        self._write_deployment_status()
        raise RetryLater(0.01)

    def _set_revision(self, revision: str) -> None:
        annotations = self.d["metadata"].setdefault("annotations", {})
        if revision and annotations.get(rollout.REVISION) != revision:
            annotations[rollout.REVISION] = revision
            self.annotations_changed = True

    def _flush(self) -> None:
        if self.annotations_changed:
            self._write_deployment_status()

    def _write_deployment_status(self) -> None:
        """Write the Deployment's annotations and status together (upstream writes the
        revision annotation through the status subresource)."""
        latest = self.context.update_with_status("Deployment", self.d, MANAGER)
        self.d = typed(latest, "apps/v1", "Deployment")
        self.annotations_changed = False

    # -------------------------------------------------------------- scaling
    def is_scaling_event(self, sets: list[Obj]) -> bool:
        new_rs, old_sets = self.new_and_old(sets, create=False)
        wanted = rollout.replicas(self.d)
        for rs in _active([*old_sets, new_rs]):
            desired = rollout.annotation_int(rs, rollout.DESIRED_REPLICAS)
            if desired is not None and desired != wanted:
                return True
        return False

    def scale_only(self, sets: list[Obj]) -> None:
        """Resize without rolling out (upstream's ``sync``)."""
        new_rs, old_sets = self.new_and_old(sets, create=False)
        self.scale(new_rs, old_sets)
        if self.spec.get("paused"):
            self.cleanup(old_sets)
        self.write_status(self.calculate_status(old_sets, new_rs))

    def scale(self, new_rs: Obj | None, old_sets: list[Obj]) -> None:
        wanted = rollout.replicas(self.d)
        latest = _active_or_latest(new_rs, old_sets)
        if latest is not None:
            if rollout.rs_replicas(latest) != wanted:
                self.scale_rs(latest, wanted)
            return
        if self._saturated(new_rs):
            for rs in _active(old_sets):
                self.scale_rs(rs, 0)
            return
        if not rollout.is_rolling(self.d):
            return
        sets = _active([*old_sets, new_rs])
        allowed = wanted + rollout.max_surge(self.d) if wanted > 0 else 0
        to_add = allowed - rollout.total(sets)
        if to_add > 0:
            sets.sort(key=lambda rs: (-rollout.rs_replicas(rs), _negated_created(rs)))
        elif to_add < 0:
            sets.sort(key=lambda rs: (-rollout.rs_replicas(rs), _created(rs)))
        sizes: dict[str, int] = {}
        added = 0
        for rs in sets:
            share = rollout.proportion(rs, self.d, to_add, added) if to_add else 0
            sizes[rs["metadata"]["name"]] = rollout.rs_replicas(rs) + share
            added += share
        if to_add and sets:
            first = sets[0]["metadata"]["name"]
            sizes[first] = max(0, sizes[first] + to_add - added)
        for rs in sets:
            self.scale_rs(rs, sizes[rs["metadata"]["name"]])

    def _saturated(self, rs: Obj | None) -> bool:
        if rs is None:
            return False
        wanted = rollout.replicas(self.d)
        return (
            rollout.annotation_int(rs, rollout.DESIRED_REPLICAS) == wanted
            and rollout.rs_status(rs, "availableReplicas") == wanted
            and rollout.rs_replicas(rs) == wanted
        )

    def scale_rs(self, rs: Obj, count: int) -> Obj:
        """Set a ReplicaSet's replicas and replica annotations; a ``ScalingReplicaSet``
        Event when the size changes."""
        before = rollout.rs_replicas(rs)
        updated = clone_document(rs)
        wanted = rollout.replicas(self.d)
        changed = rollout.set_replica_annotations(
            updated, wanted, wanted + rollout.max_surge(self.d)
        )
        if before == count and not changed:
            return rs
        updated["spec"]["replicas"] = count
        result = typed(self.context.update("ReplicaSet", updated, MANAGER), "apps/v1", "ReplicaSet")
        rs.clear()
        rs.update(result)
        if before != count:
            direction = "up" if count > before else "down"
            self.context.event(
                self.d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {direction} replica set {result['metadata']['name']} "
                f"from {before} to {count}",
                MANAGER,
            )
        return rs

    # ------------------------------------------------------------- rollouts
    def rolling(self, sets: list[Obj]) -> None:
        new_rs, old_sets = self.new_and_old(sets, create=True)
        if new_rs is None:
            return
        all_sets = [*old_sets, new_rs]
        if self._reconcile_new(all_sets, new_rs) or self._reconcile_old(all_sets, old_sets, new_rs):
            self.sync_rollout_status(old_sets, new_rs)
            return
        if self.complete(self.d.get("status") or {}):  # as upstream: the stored status
            self.cleanup(old_sets)
        self.sync_rollout_status(old_sets, new_rs)

    def _reconcile_new(self, all_sets: list[Obj], new_rs: Obj) -> bool:
        wanted = rollout.replicas(self.d)
        current = rollout.rs_replicas(new_rs)
        if current == wanted:
            return False
        if current > wanted:
            self.scale_rs(new_rs, wanted)
            return True
        count = rollout.new_rs_replicas(self.d, all_sets, new_rs)
        if count == current:
            return False
        self.scale_rs(new_rs, count)
        return True

    def _reconcile_old(self, all_sets: list[Obj], old_sets: list[Obj], new_rs: Obj) -> bool:
        if rollout.total(old_sets) == 0:
            return False
        min_available = rollout.replicas(self.d) - rollout.max_unavailable(self.d)
        new_unavailable = rollout.rs_replicas(new_rs) - rollout.rs_status(
            new_rs, "availableReplicas"
        )
        max_scaled_down = rollout.total(all_sets) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        active = _active(old_sets)
        cleaned = self._cleanup_unhealthy(active, max_scaled_down)
        scaled = self._scale_down_old([*active, new_rs], active, min_available)
        return cleaned + scaled > 0

    def _cleanup_unhealthy(self, old_sets: list[Obj], limit: int) -> int:
        """Scale down old ReplicaSets' unavailable pods first (``cleanupUnhealthyReplicas``)."""
        done = 0
        for rs in sorted(old_sets, key=_created):
            if done >= limit:
                break
            size = rollout.rs_replicas(rs)
            unhealthy = size - rollout.rs_status(rs, "availableReplicas")
            if size == 0 or unhealthy <= 0:
                continue
            step = min(limit - done, unhealthy)
            self.scale_rs(rs, size - step)
            done += step
        return done

    def _scale_down_old(self, all_sets: list[Obj], old_sets: list[Obj], min_available: int) -> int:
        available = rollout.total(all_sets, "availableReplicas")
        if available <= min_available:
            return 0
        budget = available - min_available
        done = 0
        for rs in sorted(old_sets, key=_created):
            if done >= budget:
                break
            size = rollout.rs_replicas(rs)
            if size == 0:
                continue
            step = min(size, budget - done)
            self.scale_rs(rs, size - step)
            done += step
        return done

    def recreate(self, sets: list[Obj]) -> None:
        new_rs, old_sets = self.new_and_old(sets, create=False)
        scaled = False
        for rs in _active(old_sets):
            if rollout.rs_replicas(rs) != 0:
                self.scale_rs(rs, 0)
                scaled = True
        if scaled or self._old_pods_running(new_rs, old_sets):
            self.sync_rollout_status(old_sets, new_rs)
            return
        if new_rs is None:
            new_rs, old_sets = self.new_and_old(sets, create=True)
            if new_rs is None:
                return
        if rollout.rs_replicas(new_rs) != rollout.replicas(self.d):
            self.scale_rs(new_rs, rollout.replicas(self.d))
        if self.complete(self.d.get("status") or {}):
            self.cleanup(old_sets)
        self.sync_rollout_status(old_sets, new_rs)

    def _old_pods_running(self, new_rs: Obj | None, old_sets: list[Obj]) -> bool:
        if rollout.total(old_sets, "replicas") > 0:
            return True
        old_uids = {rs["metadata"]["uid"] for rs in old_sets}
        for pod in in_namespace(self.context, "Pod", self.namespace):
            ref = controller_of(pod)
            if ref is None or ref.get("uid") not in old_uids:
                continue
            if (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded"):
                return True
        return False

    def cleanup(self, old_sets: list[Obj]) -> None:
        """Delete the oldest idle ReplicaSets beyond ``revisionHistoryLimit``."""
        limit = self.spec.get("revisionHistoryLimit")
        limit = rollout.DEFAULT_HISTORY_LIMIT if limit is None else int(limit)
        idle = [
            rs
            for rs in old_sets
            if rollout.rs_replicas(rs) == 0
            and rollout.rs_status(rs, "replicas") == 0
            and not rs["metadata"].get("deletionTimestamp")
        ]
        surplus = len(idle) - limit
        for rs in sorted(idle, key=lambda r: (rollout.revision(r), _created(r)))[: max(0, surplus)]:
            observed = (rs.get("status") or {}).get("observedGeneration") or 0
            if (rs["metadata"].get("generation") or 0) > observed:
                continue
            self.context.delete("ReplicaSet", self.namespace, rs["metadata"]["name"])

    # --------------------------------------------------------------- status
    def has_deadline(self) -> bool:
        deadline = self.spec.get("progressDeadlineSeconds", rollout.DEFAULT_PROGRESS_DEADLINE)
        return deadline is not None and int(deadline) != MAX_INT32

    def deadline(self) -> int:
        return int(self.spec.get("progressDeadlineSeconds") or rollout.DEFAULT_PROGRESS_DEADLINE)

    def _condition(self, kind: str, status: str, reason: str, message: str) -> Obj:
        now = rfc3339(self.context.clock())
        return {
            "type": kind,
            "status": status,
            "lastUpdateTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }

    def check_paused_conditions(self) -> None:
        if not self.has_deadline():
            return
        status = self.d.setdefault("status", {})
        current = _condition(status, PROGRESSING)
        if current is not None and current.get("reason") == TIMED_OUT:
            return
        paused = bool(self.spec.get("paused"))
        shown = current is not None and current.get("reason") == PAUSED
        if paused and not shown:
            _set_condition(
                status, self._condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused")
            )
        elif not paused and shown:
            _set_condition(
                status, self._condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed")
            )
        else:
            return
        self._write_deployment_status()

    def calculate_status(self, old_sets: list[Obj], new_rs: Obj | None) -> Obj:
        sets = [*old_sets, *([new_rs] if new_rs is not None else [])]
        available = rollout.total(sets, "availableReplicas")
        old_status = self.d.get("status") or {}
        status: Obj = {
            "observedGeneration": self.d["metadata"].get("generation"),
            "replicas": rollout.total(sets, "replicas"),
            "updatedReplicas": rollout.rs_status(new_rs, "replicas") if new_rs else 0,
            "readyReplicas": rollout.total(sets, "readyReplicas"),
            "availableReplicas": available,
            "unavailableReplicas": max(0, rollout.total(sets) - available),
            "conditions": clone_document(old_status.get("conditions") or []),
        }
        if old_status.get("collisionCount") is not None:
            status["collisionCount"] = old_status["collisionCount"]
        counted = [
            rs for rs in sets if (rs.get("status") or {}).get("terminatingReplicas") is not None
        ]
        if counted:
            status["terminatingReplicas"] = rollout.total(counted, "terminatingReplicas")
        if available >= rollout.replicas(self.d) - rollout.max_unavailable(self.d):
            condition = self._condition(
                AVAILABLE,
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        else:
            condition = self._condition(
                AVAILABLE,
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        _set_condition(status, condition)
        return status

    def complete(self, status: Obj) -> bool:
        wanted = rollout.replicas(self.d)
        return bool(
            int(status.get("updatedReplicas") or 0) == wanted
            and int(status.get("replicas") or 0) == wanted
            and int(status.get("availableReplicas") or 0) == wanted
            and (status.get("observedGeneration") or 0)
            >= (self.d["metadata"].get("generation") or 0)
        )

    def _progressing(self, status: Obj) -> bool:
        old = self.d.get("status") or {}
        old_old = int(old.get("replicas") or 0) - int(old.get("updatedReplicas") or 0)
        new_old = status["replicas"] - status["updatedReplicas"]
        return bool(
            status["updatedReplicas"] > int(old.get("updatedReplicas") or 0)
            or new_old < old_old
            or status["readyReplicas"] > int(old.get("readyReplicas") or 0)
            or status["availableReplicas"] > int(old.get("availableReplicas") or 0)
        )

    def _timed_out(self, status: Obj) -> bool:
        condition = _condition(status, PROGRESSING)
        if condition is None or condition.get("reason") == NEW_RS_AVAILABLE:
            return False
        if condition.get("reason") == TIMED_OUT:
            return True
        return self._progress_age(condition) > self.deadline()

    def _progress_age(self, condition: Obj) -> float:
        stamp = condition.get("lastUpdateTime") or condition.get("lastTransitionTime")
        since = dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        return (self.context.clock() - since).total_seconds()

    def sync_rollout_status(self, old_sets: list[Obj], new_rs: Obj | None) -> None:
        """Write the status with the Progressing condition the rollout has earned and the
        ReplicaSets' failures (``syncRolloutStatus``); look again at the deadline."""
        status = self.calculate_status(old_sets, new_rs)
        if not self.has_deadline():
            status["conditions"] = [c for c in status["conditions"] if c.get("type") != PROGRESSING]
        else:
            self._set_progress(status, new_rs)
        failure = _replica_failure([*([new_rs] if new_rs else []), *old_sets])
        if failure is not None:
            _set_condition(status, failure)
        else:
            status["conditions"] = [
                c for c in status["conditions"] if c.get("type") != "ReplicaFailure"
            ]
        if not self.write_status(status):
            self._requeue_stuck(status)

    def _set_progress(self, status: Obj, new_rs: Obj | None) -> None:
        """Progressing: complete, progressing (a fresh update time) or timed out."""
        current = _condition(self.d.get("status") or {}, PROGRESSING)
        if (
            status["replicas"] == status["updatedReplicas"]
            and current is not None
            and current.get("reason") == NEW_RS_AVAILABLE
        ):
            return
        subject = (
            f'ReplicaSet "{new_rs["metadata"]["name"]}"'
            if new_rs is not None
            else f'Deployment "{self.d["metadata"]["name"]}"'
        )
        if self.complete(status):
            message = f"{subject} has successfully progressed."
            _set_condition(status, self._condition(PROGRESSING, "True", NEW_RS_AVAILABLE, message))
        elif self._progressing(status):
            condition = self._condition(
                PROGRESSING, "True", "ReplicaSetUpdated", f"{subject} is progressing."
            )
            if current is not None and current.get("status") == "True":
                condition["lastTransitionTime"] = current.get("lastTransitionTime")
            others = [c for c in status["conditions"] if c.get("type") != PROGRESSING]
            status["conditions"] = [*others, condition]
        elif self._timed_out(status):
            message = f"{subject} has timed out progressing."
            _set_condition(status, self._condition(PROGRESSING, "False", TIMED_OUT, message))

    def _requeue_stuck(self, status: Obj) -> None:
        """Look again when the progress deadline will have passed."""
        condition = _condition(status, PROGRESSING)
        if (
            not self.has_deadline()
            or condition is None
            or condition.get("reason") in (NEW_RS_AVAILABLE, TIMED_OUT)
            or condition.get("status") != "True"
        ):
            return
        left = self.deadline() - self._progress_age(condition)
        raise RetryLater(max(0.05, left + 0.01))

    def write_status(self, status: Obj) -> bool:
        """Write the status when it changed; whether it did."""
        status = _wire_status(status)
        if status == _wire_status(self.d.get("status") or {}) and not self.annotations_changed:
            return False
        self.d["status"] = status
        self._write_deployment_status()
        return True


def _wire_status(status: Obj) -> Obj:
    """A status as the wire has it: counts and empty lists omitted when zero, but
    ``terminatingReplicas`` and ``collisionCount`` (pointers upstream) whenever set."""
    return {
        k: v
        for k, v in status.items()
        if v not in (0, None, []) or (k in ("terminatingReplicas", "collisionCount") and v == 0)
    }


def _condition(status: Obj, kind: str) -> Obj | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def _set_condition(status: Obj, condition: Obj) -> None:
    """Upstream's ``SetDeploymentCondition``: the same status and reason change nothing; a
    changed reason keeps the transition time of the same status."""
    current = _condition(status, condition["type"])
    if (
        current is not None
        and current.get("status") == condition["status"]
        and current.get("reason") == condition["reason"]
    ):
        return
    if current is not None and current.get("status") == condition["status"]:
        condition["lastTransitionTime"] = current.get("lastTransitionTime")
    others = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
    status["conditions"] = [*others, condition]


def _replica_failure(sets: list[Obj]) -> Obj | None:
    for rs in sets:
        for condition in (rs.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "ReplicaFailure":
                stamp = condition.get("lastTransitionTime")
                return {
                    "type": "ReplicaFailure",
                    "status": condition.get("status"),
                    "lastUpdateTime": stamp,
                    "lastTransitionTime": stamp,
                    "reason": condition.get("reason"),
                    "message": condition.get("message"),
                }
    return None


def _template(rs: Obj) -> Obj:
    template: Obj = (rs.get("spec") or {}).get("template") or {}
    return template


def _created(rs: Obj) -> tuple[str, str]:
    return (rs["metadata"].get("creationTimestamp") or "", rs["metadata"]["name"])


def _negated_created(rs: Obj) -> tuple[int, str]:
    stamp = rs["metadata"].get("creationTimestamp") or ""
    seconds = (
        int(dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()) if stamp else 0
    )
    return (-seconds, rs["metadata"]["name"])


def _active(sets: Sequence[Obj | None]) -> list[Obj]:
    return [rs for rs in sets if rs is not None and rollout.rs_replicas(rs) > 0]


def _active_or_latest(new_rs: Obj | None, old_sets: list[Obj]) -> Obj | None:
    """The one ReplicaSet with replicas, else the new or newest one (``FindActiveOrLatest``)."""
    if new_rs is None and not old_sets:
        return None
    newest_first = sorted(old_sets, key=_created, reverse=True)
    active = _active([*newest_first, new_rs])
    if not active:
        return new_rs if new_rs is not None else newest_first[0]
    if len(active) == 1:
        return active[0]
    return None
