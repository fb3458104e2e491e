"""ValidatingAdmissionPolicy and its binding: defaulted and validated as admissionregistration
does."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import admission
from allot.validation.objects import KindRules


def _binding_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    ref = spec.get("paramRef") or {}
    shown = "<unset>"
    if ref:
        shown = f"{ref.get('namespace', '')}/{ref.get('name', '*')}".lstrip("/")
    return [obj["metadata"]["name"], spec.get("policyName", ""), shown, age(obj, now)]


def _policy_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    kind = spec.get("paramKind") or {}
    shown = f"{kind.get('apiVersion')}/{kind.get('kind')}" if kind else "<unset>"
    return [obj["metadata"]["name"], len(spec.get("validations") or []), shown, age(obj, now)]


STRATEGIES = (
    KindStrategy(
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicy",
        categories=("api-extensions",),
        subresources=("status",),
        rules=KindRules(
            defaults=admission.default_policy,
            validate=lambda obj, context: admission.validate_policy_spec(obj.spec),
        ),
        table=Table(
            [
                NAME,
                column("Validations", "Number of validations.", kind="integer"),
                column("ParamKind", "The kind of the parameter resource."),
                AGE,
            ],
            _policy_cells,
        ),
    ),
    KindStrategy(
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybinding",
        categories=("api-extensions",),
        rules=KindRules(
            defaults=admission.default_binding,
            validate=lambda obj, context: admission.validate_binding_spec(obj.spec),
        ),
        table=Table(
            [
                NAME,
                column("PolicyName", "The policy this binding binds."),
                column("ParamRef", "The parameter resource."),
                AGE,
            ],
            _binding_cells,
        ),
    ),
)
