"""The values a container's environment takes from ConfigMaps and Secrets, as the kubelet
resolves them before it creates the container (``makeEnvironmentVariables``).

``envFrom`` entries (``configMapRef``, ``secretRef``, with their ``prefix``) give every key
of the object's ``data``; ``env`` entries with ``configMapKeyRef``/``secretKeyRef`` give one
key and override what ``envFrom`` gave. A missing object or key that is not ``optional`` is
a :class:`ContainerConfigError` with the kubelet's text (``configmap "x" not found``,
``couldn't find key k in ConfigMap ns/x``); an optional one leaves the variable unset.
Secret values are decoded from base64. Called by
:func:`allot.controllers.runtimes.container_environment`, which the node agent uses both to
check a pod before it starts (``CreateContainerConfigError``) and to build a process
container's environment.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from allot.types import Obj

SourceLookup = Callable[[str, str], Obj | None]
"""(kind, name) to the ConfigMap or Secret of that name in the pod's namespace, or None."""
KEY_REFS = (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef"))
OBJECT_REFS = (("ConfigMap", "configMapRef"), ("Secret", "secretRef"))


class ContainerConfigError(Exception):
    """A container's configuration cannot be made; the message is the kubelet's."""


def names_sources(container: Obj) -> bool:
    """Whether the container's environment names a ConfigMap or Secret at all (most do
    not: then there is nothing to look up before it starts)."""
    if container.get("envFrom"):
        return True
    return any(
        field in (item.get("valueFrom") or {})
        for item in container.get("env") or []
        for _, field in KEY_REFS
    )


def from_objects(container: Obj, lookup: SourceLookup) -> dict[str, str]:
    """The variables of the container's ``envFrom`` entries, in order (later wins)."""
    values: dict[str, str] = {}
    for entry in container.get("envFrom") or []:
        for kind, field in OBJECT_REFS:
            reference = entry.get(field)
            found = _referenced(lookup, kind, reference) if reference is not None else None
            if found is not None:
                prefix = entry.get("prefix") or ""
                values.update({prefix + key: value for key, value in _data(found, kind).items()})
    return values


def key_value(source: Obj, namespace: str, lookup: SourceLookup) -> str | None:
    """The value of an ``env`` entry's ``configMapKeyRef``/``secretKeyRef``; None when it
    has neither, or when an optional object or key is missing."""
    for kind, field in KEY_REFS:
        reference = source.get(field)
        if reference is None:
            continue
        found = _referenced(lookup, kind, reference)
        if found is None:
            return None
        data, key = _data(found, kind), reference.get("key")
        if key in data:
            return data[key]
        if reference.get("optional"):
            return None
        raise ContainerConfigError(
            f"couldn't find key {key} in {kind} {namespace}/{reference.get('name')}"
        )
    return None


def _referenced(lookup: SourceLookup, kind: str, reference: Obj) -> Obj | None:
    name = str(reference.get("name") or "")
    found = lookup(kind, name)
    if found is None and not reference.get("optional"):
        raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
    return found


def _data(obj: Obj, kind: str) -> dict[str, str]:
    """The object's ``data`` as strings (a Secret's decoded; its bytes kept as they are)."""
    data = obj.get("data") or {}
    if kind != "Secret":
        return {str(k): str(v) for k, v in data.items()}
    decoded = {}
    for key, value in data.items():
        try:
            raw = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        decoded[str(key)] = raw.decode(errors="surrogateescape")
    return decoded
