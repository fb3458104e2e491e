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

import importlib
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
    # the quota's keys and the new object -> why it may not be created under them (the
    # text after ``failed quota: <name>: ``), or None
    constraints: Callable[[set[str], Obj], str | None] | None = None


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
    # an admitted (defaulted, validated) update's wire object, given the stored one, before
    # it is stored (a DaemonSet's template generation follows its template)
    finish_update: Callable[[Obj, Obj], None] | None = None
    table: Table | None = None
    quota: QuotaEvaluator | None = None  # charges beyond the object count
    # upstream's ``ReturnDeletedObject`` (or a REST whose delete answers with the object):
    # a delete that removes the object answers with it, not with a ``Status``
    returns_deleted_object: bool = False
    # whether a create sets ``metadata.generation`` and spec changes count it (upstream's
    # strategies of claims, claim templates, nodes, namespaces and services set none)
    generation: bool = True


def _custom_rules() -> KindRules:
    """A CRD's objects are checked against the CRD's structural schema."""
    return KindRules(
        validate=lambda obj, context: schema.validate_custom(
            obj.to_wire(), type(obj).openapi_schema
        )
    )


CUSTOM_RULES = _custom_rules()


_MODULES: dict[str, str] = {
    "DeviceClass": "deviceclasses",
    "ResourceSlice": "resourceslices",
    "ResourceClaim": "resourceclaims",
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "Pod": "pods",
    "Node": "nodes",
    "Namespace": "namespaces",
    "Event": "events",
    "ConfigMap": "configmaps",
    "CustomResourceDefinition": "crds",
    "ResourceQuota": "resourcequotas",
    "ValidatingAdmissionPolicy": "admissionpolicies",
    "ValidatingAdmissionPolicyBinding": "admissionpolicies",
    "Tenant": "tenants",
    "Alert": "alerts",
    "Service": "services",
    "ServiceAccount": "serviceaccounts",
    "Secret": "secrets",
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "DaemonSet": "daemonsets",
    "ReplicationController": "replicationcontrollers",
    "ControllerRevision": "controllerrevisions",
    "Job": "jobs",
    "CronJob": "cronjobs",
    "Role": "rbac",
    "RoleBinding": "rbac",
    "ClusterRole": "rbac",
    "ClusterRoleBinding": "rbac",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "Lease": "leases",
    "Endpoints": "endpoints",
    "EndpointSlice": "endpoints",
    "Ingress": "networking",
    "IngressClass": "networking",
    "NetworkPolicy": "networking",
    "HorizontalPodAutoscaler": "horizontalpodautoscalers",
    "PriorityClass": "priorityclasses",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "PersistentVolume": "persistentvolumes",
    "StorageClass": "storageclasses",
}
"""The module of this package that declares each built-in kind's strategy. A module is
imported when one of its kinds is first asked for, so ``allot validate`` of DRA objects
loads neither the workload nor the admission validators and models (start-up, issue 15)."""

_BY_KIND: dict[str, KindStrategy] = {}


def _load(module_name: str) -> None:
    module = importlib.import_module(f"{__name__}.{module_name}")
    for each in module.STRATEGIES:
        if _MODULES.get(each.kind) != module_name or each.kind in _BY_KIND:
            raise ValueError(f"strategy for kind {each.kind} declared in {module_name}")
        _BY_KIND[each.kind] = each


def find_strategy(kind: str) -> KindStrategy | None:
    """A built-in kind's strategy (its module imported on first use); None for other kinds."""
    module_name = _MODULES.get(kind)
    if module_name is not None and kind not in _BY_KIND:
        _load(module_name)
    return _BY_KIND.get(kind)


def strategies() -> dict[str, KindStrategy]:
    """Every built-in kind's strategy, by kind, in the order of :data:`_MODULES`."""
    return {kind: strategy(kind) for kind in _MODULES}


def strategy(kind: str) -> KindStrategy:
    known = find_strategy(kind)
    if known is None:
        raise KeyError(kind)
    return known


def rules_for(obj: ApiModel) -> KindRules:
    """The validation rules of a decoded object's kind (a custom object's: its schema)."""
    if isinstance(obj, CustomObject):
        return CUSTOM_RULES
    known = find_strategy(kind_info(obj).kind)
    return known.rules if known else KindRules()


def table_for(plural: str) -> Table | None:
    """A built-in resource's table by its plural; None for other plurals."""
    for info in KINDS:
        if info.plural == plural:
            return strategy(info.kind).table
    return None
