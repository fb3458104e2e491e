"""CustomResourceDefinition: validated as apiextensions does; its objects get the CRD's schema."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy
from allot.validation import schema
from allot.validation.objects import KindRules

STRATEGIES = (
    KindStrategy(
        "CustomResourceDefinition",
        "customresourcedefinition",
        short_names=("crd", "crds"),
        returns_deleted_object=True,  # upstream the CRD REST: the CRD, its cleanup pending
        categories=("api-extensions",),
        subresources=("status",),
        rules=KindRules(validate=lambda obj, context: schema.validate_crd(obj)),
    ),
)
