"""The patch types kubectl and controllers send: JSON patch, merge patch, strategic merge.

- ``application/json-patch+json``: RFC 6902 (add, remove, replace, move, copy, test).
- ``application/merge-patch+json``: RFC 7386 (``null`` deletes, objects merge, lists
  replace).
- ``application/strategic-merge-patch+json``: merge patch plus Kubernetes' list merging
  for the lists upstream declares with a merge key (containers by ``name``, conditions by
  ``type``, ``reservedFor`` by ``uid``, a container's ports by ``containerPort`` and a
  Service's by ``port``...), ``$patch: delete|replace`` directives, ``$retainKeys`` (the
  object keeps only the keys listed: kubectl sends it for a Deployment's ``strategy`` and a
  volume's source, so a switch to ``Recreate`` drops ``rollingUpdate``) and
  ``$deleteFromPrimitiveList/<field>`` (values removed from a merged list of scalars:
  kubectl sends it for a dropped finalizer), as ``k8s.io/apimachinery``'s strategicpatch
  applies them; ``$setElementOrder`` is accepted and ignored. Lists without a merge key are
  replaced, as for atomic lists upstream.

Server-side apply is not a patch here: :mod:`allot.managedfields` merges it. Errors raise
:class:`PatchError`, answered as the kube-apiserver answers them: a patch that cannot be
decoded is 400 BadRequest with the decoder's text; one that decodes but does not apply to
the object is 422 Invalid, ``the server rejected our request due to an error in our
request``, with the reason as a cause on field ``patch`` (kubectl prints ``The request is
invalid: patch: <reason>``; upstream sends no cause, so kubectl shows no reason).
"""

from __future__ import annotations

import copy
from typing import Any

from allot.api.meta import StatusCause, StatusDetails
from allot.statuses import RequestError

MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "env": "name",
    "ports": "containerPort",
    "conditions": "type",
    "resourceClaims": "name",
    "ownerReferences": "uid",
    "reservedFor": "uid",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "tolerations": "",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "resourceClaimStatuses": "name",
    "addresses": "type",
}
SET_LISTS = {"finalizers"}
"""Lists of scalars that upstream merges (``patchStrategy:"merge"``): values are added, and
removed by ``$deleteFromPrimitiveList``."""
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER = "$setElementOrder"
BAD_DIRECTIVE = {
    RETAIN_KEYS: "invalid patch format of retainKeys",
    DELETE_FROM_PRIMITIVE_LIST: "invalid patch format of primitive list",
    SET_ELEMENT_ORDER: "invalid patch format of setElementOrder list",
}
"""mergepatch's texts, answered 400 BadRequest as the patch handler's
``interpretStrategicMergePatchError`` does."""


class PatchError(RequestError):
    """The patch cannot be applied (422, the default) or decoded (400)."""

    def __init__(self, message: str, code: int = 422) -> None:
        self.detail = message
        self.code = code
        if code == 422:
            self.reason = "Invalid"
            self.details = StatusDetails(
                causes=[
                    StatusCause(reason="UnexpectedServerResponse", message=message, field="patch")
                ]
            )
            message = "the server rejected our request due to an error in our request"
        super().__init__(message)


# ------------------------------------------------------------------ RFC 7386
def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --------------------------------------------------------- strategic merge patch
def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    if RETAIN_KEYS in patch:
        _retain_keys(result, patch)
    for key, value in patch.items():
        if key == RETAIN_KEYS:
            continue
        if key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            _list_directive(result, key, value)
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(key, result[key], value)
        elif isinstance(value, dict):
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = copy.deepcopy(value)
    return result


def _retain_keys(result: dict[str, Any], patch: dict[str, Any]) -> None:
    """``$retainKeys``: every key the patch sets must be listed, and ``result`` keeps only
    the listed ones (upstream's ``applyRetainKeysDirective``)."""
    listed = patch[RETAIN_KEYS]
    if not isinstance(listed, list):
        raise PatchError(BAD_DIRECTIVE[RETAIN_KEYS], 400)
    directives = (RETAIN_KEYS, DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)
    for key, value in patch.items():
        if value is not None and not key.startswith(directives) and key not in listed:
            raise PatchError(BAD_DIRECTIVE[RETAIN_KEYS], 400)
    for key in [key for key in result if key not in listed]:
        del result[key]


def _list_directive(result: dict[str, Any], key: str, values: Any) -> None:
    """``$deleteFromPrimitiveList/<field>``: the values leave the merged list of scalars
    ``field``; nothing happens where the object has no such list or the values are no list
    (upstream's ``mergeMap`` skips a type mismatch), and a list upstream does not merge is
    replaced by the values, as its ``mergeSliceHandler`` does. ``$setElementOrder/<field>``
    is checked for its form only."""
    directive, slash, field = key.partition("/")
    prefix = SET_ELEMENT_ORDER
    if key.startswith(DELETE_FROM_PRIMITIVE_LIST):
        prefix = DELETE_FROM_PRIMITIVE_LIST
    if directive != prefix or not slash:
        raise PatchError(BAD_DIRECTIVE[prefix], 400)
    current = result.get(field)
    if prefix == SET_ELEMENT_ORDER or not isinstance(current, list) or not isinstance(values, list):
        return
    if field in SET_LISTS:
        result[field] = [item for item in current if item not in values]
    else:
        result[field] = copy.deepcopy(values)


def _merge_key(key: str, current: list[Any], patch: list[Any]) -> str | None:
    """The list's merge key; ``ports`` are a container's (``containerPort``) or a
    Service's (``port``), told apart by their items."""
    if key == "ports":
        items = [i for i in [*current, *patch] if isinstance(i, dict)]
        return "containerPort" if any("containerPort" in i for i in items) else "port"
    return MERGE_KEYS.get(key)


def _merge_list(key: str, current: list[Any], patch: list[Any]) -> list[Any]:
    if key in SET_LISTS:
        return current + [item for item in patch if item not in current]
    merge_key = _merge_key(key, current, patch)
    if not merge_key or not all(isinstance(item, dict) for item in patch):
        return copy.deepcopy(
            [item for item in patch if not (isinstance(item, dict) and item.get("$patch"))]
        )
    result = copy.deepcopy(current)
    for item in patch:
        identity = item.get(merge_key)
        position = next(
            (
                i
                for i, existing in enumerate(result)
                if isinstance(existing, dict) and existing.get(merge_key) == identity
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if position is not None:
                del result[position]
        elif position is None:  # a new item: its directives have nothing to act on
            result.append(strategic_merge_patch(None, item))
        else:
            result[position] = strategic_merge_patch(result[position], item)
    return result


# ------------------------------------------------------------------ RFC 6902
def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f'invalid JSON pointer "{path}"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(document: Any, parts: list[str]) -> Any:
    return _walk(document, parts, len(parts) - 1)


def _index(part: str, items: list[Any], *, allow_end: bool) -> int:
    if part == "-" and allow_end:
        return len(items)
    if not (part.isascii() and part.isdigit()):
        raise PatchError(f'invalid array index "{part}"')
    index = int(part)
    if index > len(items) or (index == len(items) and not allow_end):
        raise PatchError(f"array index {index} out of bounds")
    return index


def _get(document: Any, parts: list[str]) -> Any:
    return _walk(document, parts, len(parts))


def _walk(document: Any, parts: list[str], depth: int) -> Any:
    """Follow the first ``depth`` steps of the pointer ``parts``; errors name it whole."""
    current = document
    for part in parts[:depth]:
        if isinstance(current, list):
            current = current[_index(part, current, allow_end=False)]
        elif isinstance(current, dict) and part in current:
            current = current[part]
        else:
            raise PatchError(f"doc is missing path: /{'/'.join(parts)}")
    return current


def _add(document: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return copy.deepcopy(value)
    parent = _parent(document, parts)
    if isinstance(parent, list):
        parent.insert(_index(parts[-1], parent, allow_end=True), copy.deepcopy(value))
    elif isinstance(parent, dict):
        parent[parts[-1]] = copy.deepcopy(value)
    else:
        raise PatchError(f"doc is missing path: /{'/'.join(parts)}")
    return document


def _remove(document: Any, parts: list[str]) -> Any:
    if not parts:
        raise PatchError("doc is missing path: ")  # the whole document cannot be removed
    parent = _parent(document, parts)
    if isinstance(parent, list):
        del parent[_index(parts[-1], parent, allow_end=False)]
    elif isinstance(parent, dict) and parts[-1] in parent:
        del parent[parts[-1]]
    else:
        raise PatchError(f"doc is missing path: /{'/'.join(parts)}")
    return document


def json_patch(document: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise PatchError("json patch must be a list of operations", 400)
    result = copy.deepcopy(document)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation:
            raise PatchError("json patch operation must be an object with 'op'", 400)
        op = operation["op"]
        try:
            result = _apply_operation(result, operation)
        except PatchError as err:
            if err.code != 422:
                raise
            raise PatchError(f"jsonpatch {op} operation does not apply: {err.detail}") from None
    return result


def _apply_operation(result: Any, operation: dict[str, Any]) -> Any:
    """One RFC 6902 operation on ``result`` (already a private copy)."""
    op, parts = operation["op"], _pointer(str(operation.get("path", "")))
    if op == "add":
        result = _add(result, parts, operation.get("value"))
    elif op == "remove":
        result = _remove(result, parts)
    elif op == "replace":
        _get(result, parts)
        result = (
            _add(_remove(result, parts), parts, operation.get("value"))
            if parts
            else copy.deepcopy(operation.get("value"))
        )
    elif op in ("move", "copy"):
        source = _pointer(str(operation.get("from", "")))
        value = _get(result, source)
        if op == "move":
            result = _remove(result, source)
        result = _add(result, parts, value)
    elif op == "test":
        if _get(result, parts) != operation.get("value"):
            raise PatchError(f"testing value /{'/'.join(parts)} failed")
    else:
        raise PatchError(f'unexpected json patch operation "{op}"', 400)
    return result
