"""ResourceClaimTemplate: the claim a pod's entry makes for it; immutable like a claim."""

from __future__ import annotations

from allot.api import resource_v1 as resourceapi
from allot.registry.kinds import KindStrategy
from allot.validation import objects
from allot.validation.objects import KindRules

STRATEGIES = (
    KindStrategy(
        "ResourceClaimTemplate",
        "resourceclaimtemplate",
        generation=False,
        returns_deleted_object=True,  # upstream storage: ReturnDeletedObject
        rules=KindRules(
            defaults=lambda obj: resourceapi.apply_claim_defaults(obj.spec.spec),
            validate=objects.validate_claim_template,
            immutable_spec=True,
        ),
    ),
)
