"""The generic REST verbs for every served resource: get, list, create, update, patch, delete.

One implementation serves all kinds (Kubernetes REST is uniform); the per-kind differences
are data: whether writes to the main resource keep ``status`` (and ``/status`` writes only
``status``), whether ``spec`` changes bump ``generation``, and the status a new object
starts with. Every write runs the admission chain before the store sees it, so a rejected
write changes nothing, and keeps ``metadata.managedFields`` with
:mod:`allot.managedfields`, which also merges server-side apply patches. Called by
:mod:`allot.apiserver.app` for clients and by :mod:`allot.controllers.context` for the
platform's own controllers.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from allot.managedfields import managers, schema
from allot.managedfields.fieldpaths import Path, added_fields, field, render
from allot.managedfields.typed import MISSING, ShapeError
from allot.registry import bodies, disruption, listing, patching, scale
from allot.registry.admission import (
    CONTROLLER_USER,
    AdmissionChain,
    AdmissionRequest,
    Operation,
)
from allot.registry.bodies import go_json_type
from allot.registry.errors import ApplyConflict, BadRequest, UnsupportedMediaType
from allot.registry.kinds import Preparation, strategy
from allot.registry.listing import ListOptions, ListPage
from allot.registry.requests import Target
from allot.registry.resources import ServedResource, by_kind
from allot.registry.storedmodels import StoredModels
from allot.store import Store
from allot.store.errors import Conflict, NotFound
from allot.types import Obj, rfc3339

PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/apply-patch+cbor",
)


@dataclass
class WriteOptions:
    field_manager: str
    field_validation: str
    dry_run: bool
    force: bool = False
    user: str = CONTROLLER_USER
    groups: tuple[str, ...] | None = None  # an HTTP request's user's; None: the platform's


@dataclass
class Admitted:
    """An admitted update before it is stored: the object, its model (None when the
    strategy changed the object after admission) and the warnings."""

    object: Obj
    model: Any
    warnings: list[str]


@dataclass
class WriteResult:
    object: Obj
    warnings: list[str]
    created: bool = False


class Handlers:
    def __init__(
        self, store: Store, admission: AdmissionChain, clock: Callable[[], dt.datetime]
    ) -> None:
        self.store = store
        self.admission = admission
        self.clock = clock
        self.models = StoredModels()
        # whether deleting a running pod of a cluster is graceful (marked until the node
        # agent has ended its processes, or for a tenant until the sync saw its twin go),
        # as upstream
        self.graceful_pods_in: Callable[[str], bool] = lambda cluster: False

    # ----------------------------------------------------------------- reading
    def get(self, cluster: str, target: Target) -> Obj:
        obj = self.store.get(
            cluster, target.resource.store, target.namespace or "", target.name or ""
        )
        return self.with_type(target.resource, obj)

    @staticmethod
    def with_type(resource: ServedResource, obj: Obj) -> Obj:
        return {
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")},
        }

    # ----------------------------------------------------------------- writing
    def create(
        self,
        cluster: str,
        target: Target,
        body: Obj,
        options: WriteOptions,
        operation: str = "Update",
    ) -> WriteResult:
        resource = target.resource
        body = self._checked_body(resource, target, body)
        applied = None
        if operation == "Apply":
            _, applied, _ = self._apply(target, MISSING, [], body, options)
        requested = body.get("spec")
        uid = self._prepare_create(cluster, resource, body)
        completed = added_fields(requested, body.get("spec"), (field("spec"),))
        model, warnings = self.admission.decode(cluster, body, options.field_validation)
        metadata = body.get("metadata") or {}
        request = AdmissionRequest(
            cluster,
            Operation.CREATE,
            resource,
            "",
            target.namespace or "",
            metadata.get("name") or metadata.get("generateName") or "",
            model,
            None,
            options.dry_run,
            options.user,
            options.groups,
        )
        warnings += self.admission.admit(request)
        obj = model.to_wire()
        self._initial_status(resource, obj, rfc3339(self.clock()))
        if "spec" in obj and (resource.custom or strategy(resource.kind).generation):
            obj["metadata"]["generation"] = 1
        if applied is None:  # what the strategy and mutating admission completed is no one's
            self._record_update(target, MISSING, obj, options, (*completed, *request.completed))
        else:
            _set_managed_fields(obj, applied)
        if uid is not None:  # the uid the strategy saw; the store sets the timestamp
            obj["metadata"]["uid"] = uid
            obj["metadata"].pop("creationTimestamp", None)
        created = self.store.create(
            cluster,
            resource.store,
            obj,
            dry_run=options.dry_run,
            owned=True,
            copy_result=False,
            keep_identity=uid is not None,
        )
        if not options.dry_run:  # the strategy's initial status was set after admission
            initial = not resource.custom and strategy(resource.kind).initial_status is not None
            self.models.remember(cluster, resource, created, model, ("status",) if initial else ())
        return WriteResult(self.with_type(resource, created), warnings, created=True)

    def update(self, cluster: str, target: Target, body: Obj, options: WriteOptions) -> WriteResult:
        resource = target.resource
        body = self._checked_body(resource, target, body)
        named = (body.get("metadata") or {}).get("name")
        if named != target.name:
            raise BadRequest(
                f"the name of the object ({named or ''}) does not match the name on the URL "
                f"({target.name})"
            )
        current = self._current(cluster, target)
        return self._replace(cluster, target, current, body, options)

    def patch(
        self, cluster: str, target: Target, content_type: str, raw: bytes, options: WriteOptions
    ) -> WriteResult:
        patch_type = content_type.split(";")[0].strip()
        if patch_type not in PATCH_TYPES:
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {', '.join(PATCH_TYPES[:4])}"
            )
        return self.patch_decoded(cluster, target, patch_type, bodies.decode_patch(raw), options)

    def patch_decoded(
        self, cluster: str, target: Target, patch_type: str, patch: Any, options: WriteOptions
    ) -> WriteResult:
        """:meth:`patch` of a patch already decoded (an in-process client's: no JSON round
        trip); ``patch_type`` is one of ``PATCH_TYPES``."""
        resource = target.resource
        try:
            current = self._current(cluster, target)
        except NotFound:
            if patch_type != "application/apply-patch+yaml" or target.subresource:
                raise
            if not isinstance(patch, dict):
                raise BadRequest("an apply patch must be an object") from None
            return self.create(cluster, target, patch, options, "Apply")
        current_typed = self.with_type(resource, current)
        if patch_type == "application/apply-patch+yaml":
            if not isinstance(patch, dict):
                raise BadRequest("an apply patch must be an object")
            entries = managers.read(current["metadata"].get("managedFields"))
            patched, applied, _ = self._apply(target, current_typed, entries, patch, options)
            patched["metadata"] = {**patched["metadata"], "managedFields": applied}
        else:
            patched = self._apply_patch(patch_type, current_typed, patch)
        if not isinstance(patched, dict):
            raise BadRequest("the patched object is not an object")
        bodies.check_nesting(patched)
        metadata = patched.setdefault("metadata", {})
        if isinstance(metadata, dict):  # otherwise refused with the decoder's text below
            metadata["resourceVersion"] = (
                metadata.get("resourceVersion") or current["metadata"]["resourceVersion"]
            )
        operation = "Apply" if patch_type == "application/apply-patch+yaml" else "Update"
        return self._replace(cluster, target, current, patched, options, operation)

    # ------------------------------------------------------------------- scale
    def get_scale(self, cluster: str, target: Target) -> Obj:
        return scale.scale_of(self._current(cluster, target), target.resource.kind)

    def update_scale(
        self, cluster: str, target: Target, body: Any, options: WriteOptions
    ) -> WriteResult:
        """A Scale write: the object with its new ``spec.replicas``, written as an update
        of the ``scale`` subresource; answers the Scale of the result."""
        current = self._current(cluster, target)
        typed = self.with_type(target.resource, current)
        result = self._replace(cluster, target, current, scale.scaled(typed, body), options)
        return WriteResult(scale.scale_of(result.object, target.resource.kind), result.warnings)

    def patch_scale(
        self, cluster: str, target: Target, content_type: str, raw: bytes, options: WriteOptions
    ) -> WriteResult:
        patch_type = content_type.split(";")[0].strip()
        if patch_type not in PATCH_TYPES[:3]:
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {', '.join(PATCH_TYPES[:3])}"
            )
        return self.patch_scale_decoded(
            cluster, target, patch_type, bodies.decode_patch(raw), options
        )

    def patch_scale_decoded(
        self, cluster: str, target: Target, patch_type: str, patch: Any, options: WriteOptions
    ) -> WriteResult:
        current = scale.scale_of(self._current(cluster, target), target.resource.kind)
        patched = self._apply_patch(patch_type, current, patch)
        return self.update_scale(cluster, target, patched, options)

    def delete(
        self,
        cluster: str,
        target: Target,
        options: Obj,
        dry_run: bool,
        user: str = CONTROLLER_USER,
    ) -> Obj:
        """Delete (or mark) one object; a dry run by ``dry_run`` (the query) or by the
        DeleteOptions' own ``dryRun`` (kubectl sends ``--dry-run=server`` there)."""
        dry_run = dry_run or "All" in (options.get("dryRun") or [])
        resource = target.resource
        preconditions = options.get("preconditions") or {}
        current = self._current(cluster, target)
        request = AdmissionRequest(
            cluster,
            Operation.DELETE,
            resource,
            "",
            target.namespace or "",
            target.name or "",
            None,
            self._model(cluster, current, resource),
            dry_run,
            user,
        )
        self.admission.admit(request)
        if not dry_run:
            self.models.forget(cluster, resource, current)
        obj, _ = self.store.delete(
            cluster,
            resource.store,
            target.namespace or "",
            target.name or "",
            uid=preconditions.get("uid"),
            resource_version=preconditions.get("resourceVersion"),
            dry_run=dry_run,
            grace_seconds=self._grace_seconds(cluster, resource, current, options),
            propagation=propagation_policy(resource, current, options),
        )
        return self.with_type(resource, obj)

    def list_page(self, cluster: str, target: Target, options: ListOptions) -> ListPage:
        return listing.page(self.store, cluster, target, options)

    def delete_collection(
        self,
        cluster: str,
        target: Target,
        options: ListOptions,
        delete_options: Obj,
        dry_run: bool,
        user: str,
    ) -> list[Obj]:
        """Delete every selected object with the request's DeleteOptions, each admitted
        and graceful on its own, as upstream."""
        items, _ = listing.select(self.store, cluster, target, options)
        deleted = []
        for item in items:
            metadata = item["metadata"]
            one = Target(target.resource, metadata.get("namespace"), metadata["name"], "")
            deleted.append(self.delete(cluster, one, delete_options, dry_run, user=user))
        return deleted

    def _grace_seconds(
        self, cluster: str, resource: ServedResource, current: Obj, options: Obj
    ) -> int:
        """The deletion grace period of upstream's pod strategy (``CheckGracefulDelete``):
        the request's ``gracePeriodSeconds``, else the pod's
        ``terminationGracePeriodSeconds`` (30); none for a pod that is not bound or has
        finished, and for every other kind (a custom kind called ``Pod`` included)."""
        if resource.custom or resource.kind != "Pod":
            return 0
        if not self.graceful_pods_in(cluster):
            return 0
        spec = current.get("spec") or {}
        phase = (current.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        requested = options.get("gracePeriodSeconds")
        if requested is None:
            requested = spec.get("terminationGracePeriodSeconds")
        return max(0, int(30 if requested is None else requested))

    def bind(self, cluster: str, target: Target, body: Obj, user: str = CONTROLLER_USER) -> None:
        """``POST pods/<name>/binding``: set ``spec.nodeName`` and ``PodScheduled=True`` in
        one write, as the API server's pod binding storage does for kube-scheduler. The
        admission hooks see it as a CREATE of the ``binding`` subresource (no object)."""
        node = _binding_field(body, "target", dict, "v1.ObjectReference").get("name")
        if node is not None and not isinstance(node, str):
            raise BadRequest(
                f"json: cannot unmarshal {go_json_type(node)} into Go struct field "
                "Binding.target.name of type string"
            )
        if body.get("kind") != "Binding" or not node:
            raise BadRequest("a Binding with target.name (the node) is required")
        bound_name = _binding_field(body, "metadata", dict, "v1.ObjectMeta").get("name")
        if bound_name and bound_name != target.name:
            raise BadRequest(
                f"the name of the object ({bound_name}) does not match the name on the URL "
                f"({target.name})"
            )
        current = self._current(cluster, target)
        assigned = (current.get("spec") or {}).get("nodeName")
        if assigned:
            raise _binding_conflict(target, f'is already assigned to node "{assigned}"')
        if (current.get("spec") or {}).get("schedulingGates"):
            raise _binding_conflict(target, "has non-empty .spec.schedulingGates")
        old_model = self._model(cluster, current, target.resource)
        request = AdmissionRequest(
            cluster,
            Operation.CREATE,
            target.resource,
            "binding",
            target.namespace or "",
            target.name or "",
            None,
            old_model,
            user=user,
        )
        self.admission.admit(request)
        status = dict(current.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        now = rfc3339(self.clock())
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now})
        status["conditions"] = conditions
        obj = {
            **current,
            "metadata": {**current["metadata"]},
            "spec": {**current["spec"], "nodeName": node},
            "status": status,
        }
        bound = self.store.update(
            cluster, target.resource.store, obj, owned=True, copy_result=False
        )
        spec = old_model.spec.model_copy(update={"node_name": node})
        bound_model = old_model.model_copy(update={"spec": spec})
        self.models.remember(cluster, target.resource, bound, bound_model, ("status",))

    def evict(
        self, cluster: str, target: Target, body: Obj, dry_run: bool, user: str = CONTROLLER_USER
    ) -> None:
        """``POST pods/<name>/eviction``: a policy/v1 Eviction deletes the pod gracefully
        with its ``deleteOptions``, as upstream's eviction storage does once no
        PodDisruptionBudget stands in the way (429 when one does: :mod:`disruption`)."""
        if body.get("kind") != "Eviction":
            raise BadRequest(f"not a Eviction object: {body.get('kind') or 'no kind'}")
        metadata = _binding_field(body, "metadata", dict, "v1.ObjectMeta", "Eviction")
        if metadata.get("name") != target.name:
            raise BadRequest("name in URL does not match name in Eviction object")
        if metadata.get("namespace") not in (None, "", target.namespace):
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent "
                "on the request"
            )
        options = _binding_field(body, "deleteOptions", dict, "v1.DeleteOptions", "Eviction")
        self._check_budgets(cluster, target)
        self.delete(cluster, target, options, dry_run, user)

    def _check_budgets(self, cluster: str, target: Target) -> None:
        """Refuse the eviction of ``target``'s pod if a disruption budget forbids it."""
        namespace = target.namespace or ""
        pod = self._current(cluster, target)
        budgets = self.store.scan_namespace(
            cluster, by_kind("PodDisruptionBudget").store, namespace
        )
        if not budgets:
            return
        pods = self.store.scan_namespace(cluster, target.resource.store, namespace)

        def find(kind: str, name: str) -> Obj | None:
            return self.store.peek(cluster, by_kind(kind).store, namespace, name)

        disruption.check_eviction(pod, budgets, pods, find)

    # ---------------------------------------------------------------- internals
    def _current(self, cluster: str, target: Target) -> Obj:
        """The stored object, shared (read-only here: every change builds a new dict)."""
        found = self.store.peek(
            cluster, target.resource.store, target.namespace or "", target.name or ""
        )
        if found is None:  # raises NotFound with the upstream text
            return self.store.get(
                cluster, target.resource.store, target.namespace or "", target.name or ""
            )
        return found

    def update_with_status(
        self, cluster: str, target: Target, body: Obj, options: WriteOptions
    ) -> WriteResult:
        """A controller's change of an object and of its status in one stored write (the
        scheduler's claim finalizer with the allocation and reservation): decoded once and
        admitted once, as an update of the object that also changes its status (validated
        as an update and as a status update, so a refusal has the same text as the one of
        two writes; the plugins judge it once, seeing the status it stores). Its fields
        are owned as two writes' would be: the main entry and the ``status`` one."""
        current = self._current(cluster, target)
        admitted = self._admitted(cluster, target, current, body, options, "Update", True)
        return self._store_update(cluster, target, admitted, options)

    def _replace(
        self,
        cluster: str,
        target: Target,
        current: Obj,
        body: Obj,
        options: WriteOptions,
        operation: str = "Update",
    ) -> WriteResult:
        prepare = None if target.resource.custom else strategy(target.resource.kind).prepare_update
        if prepare is not None and not target.subresource:
            body = {**body, "spec": copy.deepcopy(body.get("spec"))} if "spec" in body else body
            prepare(body, current)
        admitted = self._admitted(cluster, target, current, body, options, operation)
        return self._store_update(cluster, target, admitted, options)

    def _store_update(
        self, cluster: str, target: Target, admitted: Admitted, options: WriteOptions
    ) -> WriteResult:
        updated = self.store.update(
            cluster,
            target.resource.store,
            admitted.object,
            dry_run=options.dry_run,
            owned=True,
            copy_result=False,
        )
        if admitted.model is not None and not options.dry_run:
            self.models.remember(cluster, target.resource, updated, admitted.model)
        return WriteResult(self.with_type(target.resource, updated), admitted.warnings)

    def _admitted(
        self,
        cluster: str,
        target: Target,
        current: Obj,
        body: Obj,
        options: WriteOptions,
        operation: str,
        with_status: bool = False,
    ) -> Admitted:
        """The object an update of ``current`` with ``body`` stores, decoded and admitted
        (not stored yet); ``with_status``: the body's status is written too
        (:meth:`update_with_status`)."""
        resource = target.resource
        if with_status:
            new = dict(body)
        else:
            new = self._merge_for_subresource(resource, target.subresource, current, body)
        old_model = self._model(cluster, current, resource)
        # a status write stores the current spec (as upstream's status strategies, which
        # reset spec to the old object's): decoded just above, it is not decoded again
        same_spec = old_model if target.subresource == "status" and not resource.custom else None
        model, warnings = self.admission.decode(cluster, new, options.field_validation, same_spec)
        request = AdmissionRequest(
            cluster,
            Operation.UPDATE,
            resource,
            target.subresource,
            target.namespace or "",
            target.name or "",
            model,
            old_model,
            options.dry_run,
            options.user,
            options.groups,
            with_status=with_status,
        )
        warnings += self.admission.admit(request)
        obj = model.to_wire()
        obj["metadata"]["resourceVersion"] = (new.get("metadata") or {}).get("resourceVersion")
        finish = None if resource.custom else strategy(resource.kind).finish_update
        stored_model: Any = model
        if finish is not None and not target.subresource:
            finish(obj, current)
            stored_model = None  # changed after admission: decoded when next needed
        generation = current["metadata"].get("generation")
        if generation is not None:
            changed = obj.get("spec") != current.get("spec")
            obj["metadata"]["generation"] = generation + 1 if changed else generation
        if operation == "Apply":  # the entries the apply worked out travel in the body
            _set_managed_fields(obj, (body.get("metadata") or {}).get("managedFields") or [])
        else:
            self._record_update(target, current, obj, options)
        if with_status:  # then the status write's own entry, over the main write's
            status = Target(resource, target.namespace, target.name, "status")
            entries = obj["metadata"].get("managedFields")
            metadata = {**current["metadata"], "managedFields": entries}
            self._record_update(status, {**current, "metadata": metadata}, obj, options)
        return Admitted(obj, stored_model, warnings)

    @staticmethod
    def _merge_for_subresource(
        resource: ServedResource, subresource: str, current: Obj, body: Obj
    ) -> Obj:
        if subresource == "status":  # shallow copies: nothing below is modified in place
            merged = {**current, "metadata": {**current["metadata"]}}
            merged["status"] = body.get("status")
            if merged["status"] is None:
                merged.pop("status")
            merged["metadata"]["resourceVersion"] = (body.get("metadata") or {}).get(
                "resourceVersion"
            )
            return merged
        merged = dict(body)
        if resource.has_status:
            if "status" in current:
                merged["status"] = current["status"]
            else:
                merged.pop("status", None)
        return merged

    @staticmethod
    def _apply_patch(patch_type: str, current: Obj, patch: Any) -> Any:
        if patch_type == "application/json-patch+json":
            return patching.json_patch(current, patch)
        if patch_type == "application/merge-patch+json":
            return patching.merge_patch(current, patch)
        return patching.strategic_merge_patch(current, patch)

    def _checked_body(self, resource: ServedResource, target: Target, body: Obj) -> Obj:
        if not isinstance(body, dict):
            raise BadRequest("the body of the request must be a JSON object")
        metadata = body.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            kind, version = resource.kind, resource.api_version.rpartition("/")[2]
            raise BadRequest(
                f'{kind} in version "{version}" cannot be handled as a {kind}: json: cannot '
                f"unmarshal {go_json_type(metadata)} into Go struct field {kind}.metadata of "
                "type v1.ObjectMeta"
            )
        body = {**body, "metadata": dict(metadata or {})}
        body.setdefault("apiVersion", resource.api_version)
        body.setdefault("kind", resource.kind)
        if body["apiVersion"] != resource.api_version or body["kind"] != resource.kind:
            raise BadRequest(
                f"the API version in the data ({body['apiVersion']}) does not "
                f"match the expected API version ({resource.api_version})"
                if body["apiVersion"] != resource.api_version
                else f"the kind in the data ({body['kind']}) does not match the "
                f"expected kind ({resource.kind})"
            )
        metadata = body.setdefault("metadata", {})
        if not isinstance(metadata, dict):
            raise BadRequest("metadata must be an object")
        if resource.namespaced:
            if metadata.get("namespace") and metadata["namespace"] != target.namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the "
                    "namespace sent on the request"
                )
            metadata["namespace"] = target.namespace
        return body

    def _prepare_create(self, cluster: str, resource: ServedResource, body: Obj) -> str | None:
        """The kind's ``prepare_create`` on the body (in place); the uid it was given, or
        None when it asked for none (the store assigns the uid then)."""
        prepare = None if resource.custom else strategy(resource.kind).prepare_create
        if prepare is None:
            return None
        if "spec" in body:  # the request's own body stays as it came
            body["spec"] = copy.deepcopy(body["spec"])
        preparation = Preparation(
            self.store.new_uid, lambda: self.store.scan(cluster, resource.store)
        )
        prepare(body, preparation)
        return preparation.assigned

    @staticmethod
    def _initial_status(resource: ServedResource, obj: Obj, now: str) -> None:
        """The kind's status of a new object; the conditions it sets date from now."""
        if resource.custom:
            return
        prepare = strategy(resource.kind).initial_status
        if prepare is None:
            return
        prepare(obj)
        for condition in (obj.get("status") or {}).get("conditions") or []:
            condition.setdefault("lastTransitionTime", now)

    def _model(self, cluster: str, obj: Obj, resource: ServedResource) -> Any:
        """The model of a stored object: the one its write admitted, else decoded."""
        model = self.models.model_of(cluster, resource, obj)
        return resource.info.model.model_validate(obj) if model is None else model

    def _field_write(
        self, target: Target, options: WriteOptions, completed: tuple[Path, ...] = ()
    ) -> managers.Write:
        """What a write may own: a main resource with a status subresource never owns
        ``status``, a ``/status`` write owns only ``status`` (upstream's reset fields);
        no write owns the ``completed`` fields the server set on it."""
        resource = target.resource
        ignored: tuple[Path, ...] = completed
        only = None
        if target.subresource == "status":
            only = ("f:status",)
        elif not target.subresource and resource.has_status:
            ignored = (("f:status",), *completed)
        return managers.Write(
            options.field_manager,
            resource.api_version,
            schema.of_model(resource.info.model),
            rfc3339(self.clock()),
            target.subresource,
            ignored,
            only,
        )

    def _record_update(
        self,
        target: Target,
        current: Any,
        obj: Obj,
        options: WriteOptions,
        completed: tuple[Path, ...] = (),
    ) -> None:
        """managedFields after a create (``current`` is ``MISSING``) or an update: the
        entries the body brings (a main resource write may set them; ``[]`` or ``[{}]``
        clears them, and an object without any is not tracked), else (or when the body's
        do not decode) the stored ones, with the changed fields moved to the writer, but
        for the ``completed`` ones the server set (see :meth:`_field_write`)."""
        creating = current is MISSING
        stored = [] if creating else managers.read(current["metadata"].get("managedFields"))
        source = None if target.subresource else obj["metadata"].get("managedFields")
        if source in ([], [{}]):  # a reset: an existing object is not tracked from now on
            choices: list[list[managers.Entry]] = [[]]
        else:
            choices = [managers.read(source) or stored, stored]
        write = self._field_write(target, options, completed)
        updated: list[managers.Entry] = []  # as upstream's UpdateNoErrors: no garbage kept
        for entries in choices:
            try:
                updated = managers.update(entries, current, obj, write, creating=creating)
                break
            except ValueError:  # entries that do not decode: the next choice
                continue
            except ShapeError:  # an object the schema cannot walk: nothing is tracked
                break
        _set_managed_fields(obj, managers.write(updated))

    def _apply(
        self,
        target: Target,
        live: Any,
        entries: list[managers.Entry],
        config: Obj,
        options: WriteOptions,
    ) -> tuple[Obj, list[Obj], bool]:
        """Server-side apply of ``config`` over ``live`` (``MISSING`` when creating): the
        merged object, its managedFields and whether the object changed."""
        metadata = config.get("metadata")
        if isinstance(metadata, dict) and metadata.get("managedFields") is not None:
            raise BadRequest("metadata.managedFields must be nil")
        write = self._field_write(target, options)
        try:
            merged, result, changed = managers.apply(
                entries,
                live,
                copy.deepcopy(config),
                write,
                force=options.force,
                last_applied=_last_applied(live),
            )
        except managers.ApplyConflicts as err:
            causes = [(f"conflict with {e.describe()}", render(p)) for e, p in err.conflicts]
            raise ApplyConflict(str(err), causes) from None
        except ShapeError as err:
            resource = target.resource
            gvk = f"{resource.group}/{resource.version}, Kind={resource.kind}"
            raise BadRequest(f"failed to create typed patch object ({gvk}): {err}") from None
        return merged, managers.write(result), changed


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _last_applied(live: Any) -> Any:
    """kubectl's client-side last applied configuration of an object, if it has one."""
    if not isinstance(live, dict):
        return None
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _set_managed_fields(obj: Obj, wire: list[Obj]) -> None:
    if wire:
        obj["metadata"]["managedFields"] = wire
    else:
        obj["metadata"].pop("managedFields", None)


ORPHAN_BY_DEFAULT = {("batch", "Job"), ("", "ReplicationController")}
"""Kinds whose dependents are orphaned by a delete that names no policy: upstream's
``DefaultGarbageCollectionPolicy`` of batch/v1 Jobs (kubectl sends Background)."""


def propagation_policy(resource: ServedResource, current: Obj, options: Obj) -> str:
    """What a delete does to the dependents, as the API server decides it: the request's
    ``propagationPolicy``, else the legacy ``orphanDependents``, else the policy a finalizer
    already on the object records, else the kind's default (Background for most)."""
    policy = options.get("propagationPolicy")
    if policy:
        return str(policy)
    orphan = options.get("orphanDependents")
    if orphan is not None:
        return "Orphan" if orphan else "Background"
    finalizers = current["metadata"].get("finalizers") or []
    if "orphan" in finalizers:
        return "Orphan"
    if "foregroundDeletion" in finalizers:
        return "Foreground"
    if (resource.group, resource.kind) in ORPHAN_BY_DEFAULT:
        return "Orphan"
    return "Background"


def _binding_field(
    body: Obj, name: str, expected: type, go_type: str, kind: str = "Binding"
) -> Any:
    """A Binding's (or Eviction's) object field, or ``{}`` when absent; Go's decoding error
    when mistyped."""
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, expected):
        raise BadRequest(
            f"json: cannot unmarshal {go_json_type(value)} into Go struct field "
            f"{kind}.{name} of type {go_type}"
        )
    return value


def _binding_conflict(target: Target, why: str) -> Conflict:
    """The API server's refusal of a binding: ``pods/binding "p": pod p <why>``."""
    name = target.name or ""
    return Conflict(
        f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} {why}',
        resource="pods",
        name=name,
        plural="pods/binding",
    )
