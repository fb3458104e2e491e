"""One strategy per served kind: everything the registry does differently for it.

Upstream gives each resource a ``rest.Strategy`` (defaulting, validation, what a create
resets, which subresources exist) and a printer (``kubectl get`` columns). allot keeps the
same facts for a kind in one module of this package: its serving details (singular, short
names, categories, subresources), the status a new object starts with, its validation
rules (:class:`allot.validation.objects.KindRules`, built from the validators of
``allot.validation``), its table and its ResourceQuota evaluator. Adding a kind is a
model in :mod:`allot.api`, a module here and its tests. Read by
:mod:`allot.registry.resources` (discovery and paths), the handlers (initial status), the
admission chain and ``allot validate`` (rules), quota and :mod:`allot.apiserver.tables`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from allot.api.apiextensions_v1 import CustomObject
from allot.api.base import ApiModel
from allot.api.kinds import KINDS, kind_info
from allot.registry.kinds.columns import Cells
from allot.types import Obj
from allot.validation import schema
from allot.validation.objects import KindRules

if TYPE_CHECKING:  # the quota module reads strategies in turn
    from allot.registry.quota import Charging, Usage


@dataclass(frozen=True)
class Table:
    """``kubectl get`` columns (``meta.k8s.io/v1`` column definitions) and their cells."""

    columns: list[Obj]
    cells: Cells


@dataclass(frozen=True)
class QuotaEvaluator:
    """A kind's ResourceQuota charges beyond its object count: ``usage`` of one object,
    and whether it ``charges`` any of a quota's keys (upstream's evaluator per resource)."""

    usage: Callable[[Obj, Charging], Usage]
    charges: Callable[[set[str]], bool]


class Preparation:
    """What a kind's ``prepare_create`` may use: the uid the new object will have (upstream
    assigns it before validation; drawn only when asked for) and the cluster's other
    objects of the kind."""

    def __init__(self, new_uid: Callable[[], str], existing: Callable[[], list[Obj]]) -> None:
        self._new_uid = new_uid
        self.existing = existing
        self.assigned: str | None = None

    @property
    def uid(self) -> str:
        if self.assigned is None:
            self.assigned = self._new_uid()
        return self.assigned


@dataclass(frozen=True)
class KindStrategy:
    kind: str
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    rules: KindRules = field(default_factory=KindRules)
    initial_status: Callable[[Obj], None] | None = None  # what a create sets or drops
    # a create's wire object before decoding and validation (generated selector, cluster IP)
    prepare_create: Callable[[Obj, Preparation], None] | None = None
    # an update's wire object, given the stored one (a Service keeps its allocated IP)
    prepare_update: Callable[[Obj, Obj], None] | None = None
    table: Table | None = None
    quota: QuotaEvaluator | None = None  # charges beyond the object count


def _custom_rules() -> KindRules:
    """A CRD's objects are checked against the CRD's structural schema."""
    return KindRules(
        validate=lambda obj, context: schema.validate_custom(
            obj.to_wire(), type(obj).openapi_schema
        )
    )


CUSTOM_RULES = _custom_rules()


def _strategies() -> dict[str, KindStrategy]:
    from allot.registry.kinds import (
        admissionpolicies,
        alerts,
        configmaps,
        controllerrevisions,
        crds,
        cronjobs,
        deployments,
        deviceclasses,
        events,
        jobs,
        namespaces,
        nodes,
        pods,
        replicasets,
        resourceclaims,
        resourceclaimtemplates,
        resourcequotas,
        resourceslices,
        secrets,
        serviceaccounts,
        services,
        statefulsets,
        tenants,
    )

    modules = (
        deviceclasses,
        resourceslices,
        resourceclaims,
        resourceclaimtemplates,
        pods,
        nodes,
        namespaces,
        events,
        configmaps,
        crds,
        resourcequotas,
        admissionpolicies,
        tenants,
        alerts,
        services,
        serviceaccounts,
        secrets,
        deployments,
        replicasets,
        statefulsets,
        controllerrevisions,
        jobs,
        cronjobs,
    )
    found: dict[str, KindStrategy] = {}
    for module in modules:
        for strategy in module.STRATEGIES:
            if strategy.kind in found:
                raise ValueError(f"two strategies for kind {strategy.kind}")
            found[strategy.kind] = strategy
    return found


_BY_KIND: dict[str, KindStrategy] = {}


def strategies() -> dict[str, KindStrategy]:
    """Every built-in kind's strategy, by kind (loaded on first use)."""
    if not _BY_KIND:
        _BY_KIND.update(_strategies())
    return _BY_KIND


def strategy(kind: str) -> KindStrategy:
    return strategies()[kind]


def rules_for(obj: ApiModel) -> KindRules:
    """The validation rules of a decoded object's kind (a custom object's: its schema)."""
    if isinstance(obj, CustomObject):
        return CUSTOM_RULES
    known = strategies().get(kind_info(obj).kind)
    return known.rules if known else KindRules()


def table_for(plural: str) -> Table | None:
    """A built-in resource's table by its plural; None for other plurals."""
    for info in KINDS:
        if info.plural == plural:
            return strategy(info.kind).table
    return None
