"""The ``Priority`` admission plugin (upstream's ``plugin/pkg/admission/priority``).

On a pod's create it resolves ``priorityClassName`` against the cluster's PriorityClasses
into ``spec.priority`` and ``spec.preemptionPolicy``; a pod without a class gets the
global default class's, if one exists. An unknown class, or a priority or policy the
client wrote that differs from the class's, is refused with upstream's texts. On a
PriorityClass's create or update it keeps the global default unique. A pod the platform
itself writes that already carries a priority (a tenant pod's twin, resolved in the
tenant's cluster), or a dry run of its own that names a class the cluster does not have
(the tenant guard trying a tenant's pod template on the host), is left as it is: the
tenant's cluster judged it. Assembled first in the chain by
:mod:`allot.registry.clusters` and :func:`allot.platform.build`.
"""

from __future__ import annotations

from allot.api import scheduling_v1 as scheduling
from allot.registry.admission import AdmissionDenied, AdmissionRequest, Operation
from allot.registry.resources import by_kind
from allot.store import Store
from allot.types import Obj

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"


class PriorityAdmission:
    def __init__(self, store: Store) -> None:
        self.store = store

    def admit(self, request: AdmissionRequest) -> list[str]:
        if request.subresource or request.object is None:
            return []
        kind = request.resource.kind
        if kind == "Pod" and request.operation is Operation.CREATE:
            self._admit_pod(request)
        elif kind == "PriorityClass" and request.operation in (Operation.CREATE, Operation.UPDATE):
            self._keep_one_default(request)
        return []

    def _classes(self, cluster: str) -> list[Obj]:
        store = by_kind("PriorityClass").store
        return self.store.list_objects(cluster, store, shared=True)[0]

    def _default_class(self, cluster: str) -> Obj | None:
        """The global default; with several (a race upstream), the lowest value's."""
        defaults = [c for c in self._classes(cluster) if c.get("globalDefault")]
        return min(defaults, key=lambda c: c.get("value") or 0, default=None)

    def _admit_pod(self, request: AdmissionRequest) -> None:
        spec = request.object.spec  # type: ignore[union-attr]
        if request.internal and spec.priority is not None:
            return  # resolved where it was first created (a tenant pod's twin)
        if not spec.priority_class_name:
            found = self._default_class(request.cluster)
            if found is None:
                return  # upstream writes priority 0 and PreemptLowerPriority (ledger)
            spec.priority_class_name = found["metadata"]["name"]
            request.completes("spec", "priorityClassName")
        else:
            found = next(
                (
                    c
                    for c in self._classes(request.cluster)
                    if c["metadata"]["name"] == spec.priority_class_name
                ),
                None,
            )
            if found is None and request.internal and request.dry_run:
                return  # a tenant's class, judged in its cluster (the guard's dry runs)
            if found is None:
                self._deny(
                    request, f"no PriorityClass with name {spec.priority_class_name} was found"
                )
        value = int(found.get("value") or 0)  # type: ignore[union-attr]
        policy = str(found.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)  # type: ignore[union-attr]
        if spec.priority is not None and spec.priority != value:
            self._deny(
                request,
                f"the integer value of priority ({spec.priority}) must not be provided in pod "
                f"spec; priority admission controller computed {value} from the given "
                "PriorityClass name",
            )
        if spec.preemption_policy is not None and spec.preemption_policy != policy:
            self._deny(
                request,
                f"the string value of PreemptionPolicy ({spec.preemption_policy}) must not be "
                f"provided in pod spec; priority admission controller computed {policy} from "
                "the given PriorityClass name",
            )
        if spec.priority is None:
            request.completes("spec", "priority")
        if spec.preemption_policy is None:
            request.completes("spec", "preemptionPolicy")
        spec.priority, spec.preemption_policy = value, policy

    def _keep_one_default(self, request: AdmissionRequest) -> None:
        new = request.object
        if not isinstance(new, scheduling.PriorityClass) or not new.global_default:
            return
        found = self._default_class(request.cluster)
        if found is not None and found["metadata"]["name"] != new.metadata.name:
            self._deny(
                request,
                f"PriorityClass {found['metadata']['name']} is already marked as default. "
                "Only one default can exist",
            )

    @staticmethod
    def _deny(request: AdmissionRequest, cause: str) -> None:
        raise AdmissionDenied(request.resource, request.name, cause)
