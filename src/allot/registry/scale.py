"""The ``scale`` subresource: an ``autoscaling/v1`` Scale made from a Deployment,
ReplicaSet, StatefulSet or ReplicationController, and the object a Scale write makes of it.

``spec.replicas`` is the object's; ``status.replicas`` its status' count and
``status.selector`` its label selector as text (what an autoscaler selects pods by).
Writing a Scale changes only the object's ``spec.replicas``; the object is then written as
an ordinary update (admitted and validated as one), so a negative count is refused with
the Scale's own message first. Used by the handlers (:mod:`allot.registry.handlers`)."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import ValidationError

from allot.api.autoscaling_v1 import SCALE_INFO, Scale
from allot.api.kinds import render_location
from allot.registry.errors import BadRequest
from allot.registry.kinds.workloadcolumns import selector_text
from allot.statuses import InvalidObjectError
from allot.types import Obj
from allot.validation.field import Path, invalid


def scale_of(obj: Obj, kind: str) -> Obj:
    """The Scale of a stored ``kind`` object (a ReplicationController's selector is a plain
    label map)."""
    metadata = obj["metadata"]
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    selector = spec.get("selector")
    if kind == "ReplicationController":
        selector = {"matchLabels": selector or {}}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: metadata[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in metadata
        },
        "spec": {"replicas": int(spec.get("replicas") or 0)},
        "status": {
            "replicas": int(status.get("replicas") or 0),
            "selector": selector_text(selector),
        },
    }


def scaled(current: Obj, body: Any) -> Obj:
    """The object with the replicas of the Scale ``body`` (its resourceVersion, if any,
    kept as the write's precondition); BadRequest or Invalid for a bad Scale."""
    scale = _decoded(body)
    name = current["metadata"]["name"]
    if scale.metadata.name and scale.metadata.name != name:
        raise BadRequest(
            f"the name of the object ({scale.metadata.name}) does not match the name on the "
            f"URL ({name})"
        )
    replicas = scale.spec.replicas or 0
    if replicas < 0:
        error = invalid(
            Path("spec").child("replicas"), replicas, "must be greater than or equal to 0"
        )
        raise InvalidObjectError(SCALE_INFO, name, [error])
    updated = copy.deepcopy(current)
    updated["spec"]["replicas"] = replicas
    updated["metadata"]["resourceVersion"] = scale.metadata.resource_version
    return updated


def _decoded(body: Any) -> Scale:
    if not isinstance(body, dict):
        raise BadRequest("the body of the request must be a JSON object")
    if body.get("kind", "Scale") != "Scale" or body.get("apiVersion", "autoscaling/v1") not in (
        "autoscaling/v1",
    ):
        raise BadRequest(
            f"the API version in the data ({body.get('apiVersion')}) does not match the "
            "expected API version (autoscaling/v1)"
        )
    try:
        return Scale.model_validate(body)
    except ValidationError as err:
        problems = ", ".join(
            f'unknown field "{render_location(tuple(e["loc"]))}"'
            if e["type"] == "extra_forbidden"
            else f"{render_location(tuple(e['loc']))}: {e['msg']}"
            for e in err.errors()
        )
        raise BadRequest(
            f'Scale in version "v1" cannot be handled as a Scale: strict decoding error: {problems}'
        ) from None
