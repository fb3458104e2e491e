"""CustomResourceDefinition: defaulted and validated as apiextensions does; a new CRD's
status is upstream's empty one with its storage version; its objects get the CRD's schema
(:mod:`allot.registry.crds`). The names and conditions of the status are the apiextensions
controllers' (:mod:`allot.controllers.crdstatus`)."""

from __future__ import annotations

from typing import Any

from allot.registry.kinds import KindStrategy
from allot.types import Obj
from allot.validation import schema
from allot.validation.objects import KindRules


def _defaults(crd: Any) -> None:
    """``SetDefaults_CustomResourceDefinitionSpec``: the singular is the kind in lower case,
    the list kind ``<kind>List``, and the conversion strategy ``None``."""
    spec = crd.spec
    names = spec.names
    if names is not None and names.kind:
        if not names.singular:
            names.singular = names.kind.lower()
        if not names.list_kind:
            names.list_kind = f"{names.kind}List"
    if spec.conversion is None:
        spec.conversion = {"strategy": "None"}


def _empty_status(obj: Obj) -> None:
    """``PrepareForCreate``: the status is reset, its stored versions the storage version
    (Go writes the names' plural and kind, and the list, even when empty)."""
    storage = [
        v.get("name") for v in (obj.get("spec") or {}).get("versions") or [] if v.get("storage")
    ]
    obj["status"] = {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": storage[:1]}


STRATEGIES = (
    KindStrategy(
        "CustomResourceDefinition",
        "customresourcedefinition",
        short_names=("crd", "crds"),
        returns_deleted_object=True,  # upstream the CRD REST: the CRD, its cleanup pending
        categories=("api-extensions",),
        subresources=("status",),
        rules=KindRules(defaults=_defaults, validate=lambda obj, context: schema.validate_crd(obj)),
        initial_status=_empty_status,
    ),
)
