"""The resourceclaim controller: claims from templates, reservations, deallocation.

For each pod (upstream ``pkg/controller/resourceclaim``): every ``resourceClaimTemplateName``
entry gets a claim named ``<pod>-<claim>-<5 random chars>`` (the base truncated
proportionally to 57 characters), owned by the pod, annotated with
``resource.kubernetes.io/pod-claim-name``, recorded in ``status.resourceClaimStatuses``.
A claim that cannot be created (its template is missing, or the API refuses it: quota, an
admission policy) is reported as upstream's ``syncPod`` reports it: a Warning Event
``FailedResourceClaimCreation`` ``PodResourceClaim <entry>: <error>`` on the pod, and the
pod retried with the runtime's back-off (:class:`~allot.controllers.runtime.ReconcileError`,
one log line); claims created before the failure are found again by the next attempt.
When a pod is gone or finished, and the node agent's runtime holds none of its processes
any more (a terminating pod still runs; a pod removed at once may too), its UID leaves
the ``reservedFor`` of every claim it used
(also when it went while the platform was down: every claim with reservations is checked
against the pods that exist, at start and on each change);
a claim nobody reserves any more is deallocated and loses the scheduler's finalizer, so a
generated claim is then garbage-collected with its pod.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import NoReturn

from allot.api import claims as claims_api
from allot.api.documents import clone_document
from allot.controllers.context import ControllerContext
from allot.controllers.runtime import ReconcileError, RetryLater
from allot.statuses import InvalidObjectError, RequestError
from allot.store import WatchEvent
from allot.store.errors import Conflict, StoreError
from allot.types import Obj

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"
MANAGER = "resourceclaim-controller"
TERMINAL = ("Succeeded", "Failed")
RECHECK_SECONDS = 0.2  # while a gone pod's processes are still being ended
FAILED_CREATION = "FailedResourceClaimCreation"
EVENT_SOURCE = "resource_claim"  # upstream's recorder: EventSource{Component: "resource_claim"}


class PodClaimError(Exception):
    """Why the claim of one ``spec.resourceClaims`` entry could not be had (upstream's
    ``handleClaim`` error text)."""


def generate_name(pod: str, claim: str) -> str:
    """Upstream's generateName for a pod's claim (``<pod>-<claim>-``, truncated to 57)."""
    base = f"{pod}-{claim}-"
    if len(base) <= 57:
        return base
    return f"{pod[: len(pod) * 57 // len(base)]}-{claim[: len(claim) * 57 // len(base)]}"


class ClaimController:
    name = "resourceclaim"
    watches = frozenset(
        {"resourceclaims.resource.k8s.io", "pods"}
    )  # the resources keys_for answers for

    def __init__(
        self, context: ControllerContext, holds: Callable[[str], bool] = lambda uid: False
    ) -> None:
        self.context = context
        self.holds = holds  # the node agent's runtime: may the pod's processes still run?
        self.gone: dict[tuple[str, str], Obj] = {}
        self.generated: dict[tuple[str, str], str] = {}  # (pod uid, pod claim) -> claim

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.cluster != self.context.cluster:
            return []
        if event.resource == "resourceclaims.resource.k8s.io":
            if event.type == "DELETED" or not _reserved_pods(event.object):
                return []
            metadata = event.object["metadata"]
            return [("claim", metadata.get("namespace", ""), metadata["name"])]
        if event.resource == "pods":
            metadata = event.object["metadata"]
            return [("pod", metadata.get("namespace", ""), metadata["name"])]
        return []

    def observe(self, event: WatchEvent) -> None:
        """Which claims were generated for which pod entry, and what a deleted pod held."""
        if event.cluster != self.context.cluster:
            return
        if event.resource == "resourceclaims.resource.k8s.io":
            self._remember(event.object, forget=event.type == "DELETED")
        elif event.resource == "pods" and event.type == "DELETED":
            metadata = event.object["metadata"]
            self.gone[(metadata.get("namespace", ""), metadata["name"])] = event.object

    def _remember(self, claim: Obj, forget: bool = False) -> None:
        metadata = claim["metadata"]
        pod_claim = (metadata.get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
        owner = next(
            (
                o
                for o in metadata.get("ownerReferences") or []
                if o.get("controller") and o.get("kind") == "Pod"
            ),
            None,
        )
        if pod_claim is None or owner is None:
            return
        key = (owner.get("uid", ""), pod_claim)
        if forget:
            self.generated.pop(key, None)
        else:
            self.generated[key] = metadata["name"]

    def initial_keys(self) -> list[Hashable]:
        for claim in self.context.list("ResourceClaim"):
            self._remember(claim)
        pods: list[Hashable] = [
            ("pod", p["metadata"].get("namespace", ""), p["metadata"]["name"])
            for p in self.context.list("Pod")
        ]
        claims: list[Hashable] = [
            ("claim", c["metadata"].get("namespace", ""), c["metadata"]["name"])
            for c in self.context.list("ResourceClaim")
            if _reserved_pods(c)
        ]
        return pods + claims

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        what, namespace, name = key
        if what == "claim":
            self._drop_stale_reservations(namespace, name)
            return
        pod = self.context.peek("Pod", namespace, name)  # read only: writes fetch again
        if pod is None:
            last = self.gone.get((namespace, name))
            if last is not None:
                self._release_when_ended(last)
                del self.gone[(namespace, name)]
            return
        if (pod.get("status") or {}).get("phase") in TERMINAL:
            self._release_when_ended(pod)
            return
        if not pod["metadata"].get("deletionTimestamp"):  # terminating: still running
            self._ensure_generated_claims(pod)

    # ------------------------------------------------------------- creation
    def _ensure_generated_claims(self, pod: Obj) -> None:
        namespace = pod["metadata"].get("namespace", "")
        statuses = {
            s["name"]: s for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        }
        missing = [
            c
            for c in (pod.get("spec") or {}).get("resourceClaims") or []
            if c.get("resourceClaimTemplateName") and c["name"] not in statuses
        ]
        if not missing:
            return
        new_statuses = list(statuses.values())
        for pod_claim in missing:
            try:
                claim_name = self._claim_for(pod, pod_claim)
            except PodClaimError as err:
                self._report(pod, pod_claim["name"], err)
            new_statuses.append({"name": pod_claim["name"], "resourceClaimName": claim_name})
        if len(new_statuses) != len(statuses):
            latest = self.context.get("Pod", namespace, pod["metadata"]["name"])
            if latest is None:
                return
            latest.setdefault("status", {})["resourceClaimStatuses"] = new_statuses
            self.context.write_status("Pod", latest, MANAGER)

    def _report(self, pod: Obj, entry: str, err: PodClaimError) -> NoReturn:
        """Upstream's ``syncPod`` on a failed entry: the Warning Event on the pod (repeats
        counted on one Event by the recorder), then the error that makes the runtime
        retry with back-off."""
        self.context.event(
            pod, "Warning", FAILED_CREATION, f"PodResourceClaim {entry}: {err}", EVENT_SOURCE
        )
        namespace = pod["metadata"].get("namespace", "")
        raise ReconcileError(
            f"pod {namespace}/{pod['metadata']['name']}, PodResourceClaim {entry}: {err}"
        ) from None

    def _claim_for(self, pod: Obj, pod_claim: Obj) -> str:
        """The claim generated for ``pod_claim``: found again, or created from its
        template; :class:`PodClaimError` when the template is missing or the create is
        refused."""
        namespace = pod["metadata"].get("namespace", "")
        uid = pod["metadata"]["uid"]
        orphan = self.generated.get((uid, pod_claim["name"]))
        if orphan is not None and self.context.peek("ResourceClaim", namespace, orphan):
            return orphan  # created by an earlier attempt whose pod update failed
        template_name = pod_claim["resourceClaimTemplateName"]
        template = self.context.peek(  # read only: what the claim takes is copied
            "ResourceClaimTemplate", namespace, template_name
        )
        if template is None:
            raise PodClaimError(
                f'resource claim template "{template_name}": '
                f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found'
            )
        template_meta = (template.get("spec") or {}).get("metadata") or {}
        claim: Obj = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "generateName": generate_name(pod["metadata"]["name"], pod_claim["name"]),
                "namespace": namespace,
                "labels": clone_document(template_meta.get("labels")) or None,
                "annotations": {
                    **(template_meta.get("annotations") or {}),
                    POD_CLAIM_ANNOTATION: pod_claim["name"],
                },
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod["metadata"]["name"],
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": clone_document((template.get("spec") or {}).get("spec") or {}),
        }
        claim["metadata"] = {k: v for k, v in claim["metadata"].items() if v is not None}
        try:
            created = self.context.create_shared("ResourceClaim", claim, MANAGER)
        except (RequestError, InvalidObjectError, StoreError) as err:
            if isinstance(err, Conflict):
                raise  # written meanwhile: the runtime reads again at once
            # upstream names the claim it asked for: only generateName is set, so no name
            raise PodClaimError(f"create ResourceClaim : {err}") from err
        created_name: str = created["metadata"]["name"]
        self.generated[(uid, pod_claim["name"])] = created_name
        return created_name

    # -------------------------------------------------------------- release
    def _release_when_ended(self, pod: Obj) -> None:
        """Release the pod's claims once none of its processes can hold their devices."""
        if self.holds(pod["metadata"].get("uid", "")):
            raise RetryLater(RECHECK_SECONDS)
        self._release(pod)

    def _release(self, pod: Obj) -> None:
        """Drop the pod's reservations; a claim generated for a finished pod that nothing
        else reserves is deleted, as upstream's ``syncClaim`` deletes an unused generated
        claim of a pod that is done, instead of waiting for the pod's deletion."""
        namespace = pod["metadata"].get("namespace", "")
        uid = pod["metadata"].get("uid")
        done = (pod.get("status") or {}).get("phase") in TERMINAL
        for name in sorted(claims_api.referenced_claims(pod)):
            claim = self.context.get("ResourceClaim", namespace, name)
            if claim is None:
                continue
            self._unreserve(claim, {uid})
            if done and _generated_for(claim, uid) and not self._reserved(namespace, name):
                self.context.delete("ResourceClaim", namespace, name)

    def _reserved(self, namespace: str, name: str) -> bool:
        claim = self.context.peek("ResourceClaim", namespace, name)
        return claim is not None and bool((claim.get("status") or {}).get("reservedFor"))

    def _drop_stale_reservations(self, namespace: str, name: str) -> None:
        """Reservations of pods that no longer exist (deleted while the platform was down,
        or their delete event lost in a crash) go, as upstream's ``syncClaim`` drops them."""
        claim = self.context.peek("ResourceClaim", namespace, name)
        if claim is None:
            return
        stale: set[str | None] = set()
        for consumer in _reserved_pods(claim):
            pod = self.context.peek("Pod", namespace, consumer.get("name", ""))
            if pod is None or pod["metadata"].get("uid") != consumer.get("uid"):
                if self.holds(consumer.get("uid", "")):
                    raise RetryLater(RECHECK_SECONDS)
                stale.add(consumer.get("uid"))
        if stale:
            self._unreserve(clone_document(claim), stale)

    def _unreserve(self, claim: Obj, gone: set[str | None]) -> None:
        status = claim.get("status") or {}
        reserved = status.get("reservedFor") or []
        remaining = [r for r in reserved if r.get("uid") not in gone]
        if remaining != reserved:
            status["reservedFor"] = remaining or None
            if not remaining:
                status.pop("reservedFor", None)
            claim["status"] = status
            claim = self.context.update_status("ResourceClaim", claim, MANAGER)
        if remaining or not status.get("allocation"):
            return
        claim["status"] = {
            k: v
            for k, v in (claim.get("status") or {}).items()
            if k not in ("allocation", "reservedFor", "devices")
        }
        claim = self.context.update_status("ResourceClaim", claim, MANAGER)
        finalizers = claim["metadata"].get("finalizers") or []
        if FINALIZER in finalizers:
            claim["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER] or None
            if claim["metadata"]["finalizers"] is None:
                del claim["metadata"]["finalizers"]
            self.context.update("ResourceClaim", claim, MANAGER)


def _generated_for(claim: Obj, pod_uid: str | None) -> bool:
    """Whether the claim was generated for the pod with ``pod_uid`` (its controller)."""
    return any(
        ref.get("controller") and ref.get("kind") == "Pod" and ref.get("uid") == pod_uid
        for ref in claim["metadata"].get("ownerReferences") or []
    )


def _reserved_pods(claim: Obj) -> list[Obj]:
    """The claim's ``reservedFor`` entries that are pods."""
    reserved = (claim.get("status") or {}).get("reservedFor") or []
    return [r for r in reserved if r.get("resource") == "pods"]
