"""ServiceAccount: serving details and ``kubectl get sa`` columns (NAME, AGE since the
SECRETS column went away). The ``default`` account of every namespace is created by
:mod:`allot.controllers.serviceaccounts`."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age
from allot.validation import services
from allot.validation.objects import KindRules

STRATEGIES = (
    KindStrategy(
        "ServiceAccount",
        "serviceaccount",
        short_names=("sa",),
        returns_deleted_object=True,  # upstream serviceaccount/storage: ReturnDeletedObject
        rules=KindRules(validate=lambda obj, context: services.validate_service_account(obj)),
        table=Table([NAME, AGE], lambda o, n: [o["metadata"]["name"], age(o, n)]),
    ),
)
