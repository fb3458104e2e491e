"""ValidatingAdmissionPolicy: the admission plugin that evaluates policies and bindings.

For every write, each ValidatingAdmissionPolicyBinding of the cluster whose policy exists
is considered: the policy's ``matchConstraints`` and the binding's ``matchResources``
(resource rules with operations, groups, versions, resources and names, exclusions,
namespace and object selectors) must match; the binding's ``paramRef`` is resolved to the
parameter objects (``parameterNotFoundAction``); ``matchConditions`` must all hold; then
``variables`` are computed and each validation evaluated. A failed validation is enforced
per ``validationActions``: ``Deny`` refuses the request with the API server's text
(``ValidatingAdmissionPolicy 'p' with binding 'b' denied request: ...``) and the
validation's reason as HTTP code, ``Warn`` adds a warning header, ``Audit`` records the
failure through ``audit``. Errors (compile, runtime, missing params) follow
``failurePolicy``. Built by :class:`allot.registry.clusters.Registry`, one of its standard plugins.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from allot.api.kinds import lookup
from allot.api.meta import selector_matches
from allot.cel import CelError, authz
from allot.cel.authz import Checker
from allot.cel.policy import PolicyCompiler, as_bool
from allot.registry.admission import AdmissionDenied, AdmissionRequest
from allot.registry.resources import ServedResource, by_kind
from allot.registry.resources import lookup as lookup_resource
from allot.store import Store, WatchEvent
from allot.types import Obj

AuditSink = Callable[[Obj], None]
POLICY_RESOURCES = (
    "validatingadmissionpolicies.admissionregistration.k8s.io",
    "validatingadmissionpolicybindings.admissionregistration.k8s.io",
)


class PolicyFailure(Exception):
    """A policy could not be evaluated (compile or runtime error, missing params)."""


@dataclass
class Decision:
    policy: str
    binding: str
    message: str
    reason: str
    actions: list[str]


class PolicyAdmission:
    """The ``ValidatingAdmissionPolicy`` admission plugin over one store."""

    def __init__(
        self, store: Store, audit: AuditSink | None = None, checker: Checker | None = None
    ) -> None:
        self.store = store
        self.compiler = PolicyCompiler(checker)
        self.audit = audit or (lambda record: None)
        self._pairs: dict[str, list[tuple[Obj, Obj]]] = {}
        self._by_resource: dict[str, dict[tuple[str, str, str], list[tuple[Obj, Obj]]]] = {}
        self._by_namespace: dict[str, dict[tuple[Any, ...], list[tuple[Obj, Obj]]]] = {}
        store.add_listener(self._forget_pairs)

    def _forget_pairs(self, event: WatchEvent) -> None:
        if event.resource in POLICY_RESOURCES:
            self._pairs.pop(event.cluster, None)
            self._by_resource.pop(event.cluster, None)
            self._by_namespace.pop(event.cluster, None)
        elif event.resource == "namespaces":
            self._by_namespace.pop(event.cluster, None)

    def admit(self, request: AdmissionRequest) -> list[str]:
        """Judge the request by every binding that matches it; an update that writes the
        status too (``with_status``) by the bindings of the object's and of its
        ``status`` subresource's updates, as its two writes would be."""
        if request.with_status:
            main = replace(request, with_status=False)
            status = replace(main, subresource="status")
            return self._admit(main) + self._admit(status)
        return self._admit(request)

    def _admit(self, request: AdmissionRequest) -> list[str]:
        if request.resource.kind in (
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ):
            return []
        pairs = self._candidates(request)
        if not pairs:
            return []
        warnings: list[str] = []
        denied: list[Decision] = []
        inputs = self._inputs(request)
        for policy, binding in self._in_namespace(request, inputs, pairs):
            matches = [
                (policy.get("spec") or {}).get("matchConstraints"),
                (binding.get("spec") or {}).get("matchResources"),
            ]
            if not all(self._matches(request, inputs, match) for match in matches):
                continue
            for decision in self._decisions(request, inputs, policy, binding):
                if "Warn" in decision.actions:
                    warnings.append(
                        f"Validation failed for ValidatingAdmissionPolicy '{decision.policy}' "
                        f"with binding '{decision.binding}': {decision.message}"
                    )
                if "Audit" in decision.actions:
                    self.audit(_audit_record(request, decision))
                if "Deny" in decision.actions:
                    denied.append(decision)
        if denied:
            first = denied[0]
            raise AdmissionDenied(
                request.resource,
                request.name,
                f"ValidatingAdmissionPolicy '{first.policy}' with binding '{first.binding}' "
                f"denied request: {first.message}",
                first.reason,
            )
        return warnings

    # ---------------------------------------------------------------- matching
    def _candidates(self, request: AdmissionRequest) -> list[tuple[Obj, Obj]]:
        """The pairs whose rules may match this kind of request (names aside), cached per
        operation and resource until a policy or binding changes."""
        key = (request.operation.value, request.resource.plural, request.subresource)
        per_resource = self._by_resource.setdefault(request.cluster, {})
        cached = per_resource.get(key)
        if cached is None:
            cached = [
                (policy, binding)
                for policy, binding in self._bindings(request.cluster)
                if _rules_admit(request, (policy.get("spec") or {}).get("matchConstraints"), False)
                and _rules_admit(request, (binding.get("spec") or {}).get("matchResources"), False)
            ]
            per_resource[key] = cached
        return cached

    def _in_namespace(
        self, request: AdmissionRequest, inputs: Obj, pairs: list[tuple[Obj, Obj]]
    ) -> list[tuple[Obj, Obj]]:
        """The pairs whose namespace selectors select the request's namespace, cached per
        namespace version (namespace labels change rarely, requests often)."""
        namespace = inputs["namespaceObject"]
        if namespace is None or request.resource.kind == "Namespace":
            return pairs
        key = (
            request.operation.value,
            request.resource.plural,
            request.subresource,
            request.namespace,
            namespace["metadata"].get("resourceVersion"),
        )
        per_namespace = self._by_namespace.setdefault(request.cluster, {})
        cached = per_namespace.get(key)
        if cached is None:
            cached = [
                (policy, binding)
                for policy, binding in pairs
                if _namespace_selected(
                    request, inputs, _selector((policy.get("spec") or {}).get("matchConstraints"))
                )
                and _namespace_selected(
                    request, inputs, _selector((binding.get("spec") or {}).get("matchResources"))
                )
            ]
            per_namespace[key] = cached
        return cached

    def _bindings(self, cluster: str) -> list[tuple[Obj, Obj]]:
        """The cluster's (policy, binding) pairs, cached until either kind changes."""
        cached = self._pairs.get(cluster)
        if cached is not None:
            return cached
        bindings, _ = self.store.list_objects(
            cluster, by_kind("ValidatingAdmissionPolicyBinding").store, None, shared=True
        )
        policies = by_kind("ValidatingAdmissionPolicy").store
        pairs = []
        for binding in sorted(bindings, key=lambda b: b["metadata"]["name"]):
            name = (binding.get("spec") or {}).get("policyName") or ""
            policy = self.store.peek(cluster, policies, "", name)
            if policy is not None:
                pairs.append((policy, binding))
        self._pairs[cluster] = pairs
        return pairs

    @staticmethod
    def _matches(request: AdmissionRequest, inputs: Obj, match: Obj | None) -> bool:
        """Selectors, and the rules' ``resourceNames`` (the rest was pre-selected)."""
        if not match:
            return True
        if not _namespace_selected(request, inputs, match.get("namespaceSelector")):
            return False
        selector = match.get("objectSelector")
        if selector is not None and not any(
            selector_matches(selector, ((obj or {}).get("metadata") or {}).get("labels"))
            for obj in (inputs["object"], inputs["oldObject"])
            if obj is not None
        ):
            return False
        return not _names_in(match) or _rules_admit(request, match)

    # -------------------------------------------------------------- evaluation
    def _decisions(
        self, request: AdmissionRequest, inputs: Obj, policy: Obj, binding: Obj
    ) -> list[Decision]:
        spec, binding_spec = policy.get("spec") or {}, binding.get("spec") or {}
        names = (policy["metadata"]["name"], binding["metadata"]["name"])
        actions = list(binding_spec.get("validationActions") or [])
        try:
            decisions = []
            for params in self._params(request, spec, binding_spec):
                decisions += self._evaluate(spec, {**inputs, "params": params}, names, actions)
            return decisions
        except (PolicyFailure, CelError) as failure:
            if (spec.get("failurePolicy") or "Fail") == "Ignore":
                return []
            return [Decision(*names, str(failure), "Invalid", actions)]

    def _evaluate(
        self, spec: Obj, inputs: Obj, names: tuple[str, str], actions: list[str]
    ) -> list[Decision]:
        for condition in spec.get("matchConditions") or []:
            if not as_bool(self._compiled(condition.get("expression") or "", ()), inputs):
                return []
        declared: list[str] = []
        for variable in spec.get("variables") or []:
            expression = self._compiled(variable.get("expression") or "", tuple(declared))
            inputs = {**inputs, f"variables.{variable.get('name')}": expression.evaluate(inputs)}
            declared.append(str(variable.get("name")))
        scope = tuple(declared)
        decisions = []
        for validation in spec.get("validations") or []:
            text = validation.get("expression") or ""
            try:
                held = as_bool(self._compiled(text, scope), inputs)
            except CelError as err:
                raise PolicyFailure(f"expression '{text}' resulted in error: {err}") from None
            if held:
                continue
            message = self._message(validation, inputs, scope)
            decisions.append(
                Decision(*names, message, validation.get("reason") or "Invalid", actions)
            )
        return decisions

    def _message(self, validation: Obj, inputs: Obj, scope: tuple[str, ...]) -> str:
        expression = validation.get("messageExpression")
        if expression:
            try:
                value = self._compiled(expression, scope).evaluate(inputs)
            except CelError:
                value = None
            if isinstance(value, str) and value.strip() and "\n" not in value:
                return value
        if validation.get("message"):
            return str(validation["message"])
        return f"failed expression: {str(validation.get('expression') or '').strip()}"

    def _compiled(self, expression: str, scope: tuple[str, ...]) -> Any:
        try:
            return self.compiler.compile(expression, scope)
        except CelError as err:
            raise PolicyFailure(f"compilation error: {err}") from None

    def _params(self, request: AdmissionRequest, spec: Obj, binding_spec: Obj) -> list[Any]:
        kind = spec.get("paramKind")
        if not kind:
            return [None]
        resource = _param_resource(request.cluster, kind)
        ref = binding_spec.get("paramRef") or {}
        if not ref:
            raise PolicyFailure(
                f"failed to configure binding: paramKind {kind.get('kind')} is set, "
                "but the binding has no paramRef"
            )
        namespace = ref.get("namespace") or (request.namespace if resource.namespaced else "")
        found = self._find_params(request.cluster, resource, namespace, ref)
        if found:
            return found
        if (ref.get("parameterNotFoundAction") or "Deny") == "Allow":
            return []
        raise PolicyFailure(
            "failed to configure binding: no params found for policy binding with "
            "`Deny` parameterNotFoundAction"
        )

    def _find_params(
        self, cluster: str, resource: ServedResource, namespace: str, ref: Obj
    ) -> list[Obj]:
        if ref.get("name"):
            found = self.store.peek(cluster, resource.store, namespace, ref["name"])
            return [found] if found is not None else []
        items, _ = self.store.list_objects(cluster, resource.store, namespace or None, shared=True)
        selector = ref.get("selector") or {}
        return [o for o in items if selector_matches(selector, o["metadata"].get("labels"))]

    def _inputs(self, request: AdmissionRequest) -> Obj:
        new = request.object.to_wire() if request.object is not None else None
        old = request.old_object.to_wire() if request.old_object is not None else None
        namespace_object = None
        if request.namespace:
            namespace_object = self.store.peek(
                request.cluster, by_kind("Namespace").store, "", request.namespace
            )
        return {
            "object": new,
            "oldObject": old,
            "params": None,
            "request": _request_attributes(request),
            "namespaceObject": namespace_object,
            "authorizer": authz.authorizer_value(request.cluster, _user_info(request)),
            "authorizer.requestResource": authz.resource_check_value(
                request.cluster,
                _user_info(request),
                group=request.resource.group,
                resource=request.resource.plural,
                subresource=request.subresource,
                namespace=request.namespace,
                name=request.name,
            ),
        }


def _rules_admit(request: AdmissionRequest, match: Obj | None, names: bool = True) -> bool:
    """The resource rules alone (cheap, checked before anything else is computed).
    Without ``names``, ``resourceNames`` are ignored: the answer is a superset, used to
    pre-select pairs per kind of request."""
    if not match:
        return True
    rules = match.get("resourceRules")
    if rules is not None and not any(_rule_matches(r, request, names) for r in rules):
        return False
    excluded = match.get("excludeResourceRules") or []
    if not names:
        excluded = [r for r in excluded if not r.get("resourceNames")]
    return not any(_rule_matches(r, request, names) for r in excluded)


def _selector(match: Obj | None) -> Obj | None:
    return (match or {}).get("namespaceSelector")


def _names_in(match: Obj) -> bool:
    rules = [*(match.get("resourceRules") or []), *(match.get("excludeResourceRules") or [])]
    return any(rule.get("resourceNames") for rule in rules)


def _param_resource(cluster: str, kind: Obj) -> ServedResource:
    try:
        info = lookup(str(kind.get("apiVersion")), str(kind.get("kind")), cluster)
    except Exception:
        raise PolicyFailure(
            f"failed to configure policy: paramKind {kind.get('apiVersion')}, "
            f"Kind={kind.get('kind')} is not served"
        ) from None
    resource = lookup_resource(info.group, info.version, info.plural, cluster)
    assert resource is not None
    return resource


def _namespace_selected(request: AdmissionRequest, inputs: Obj, selector: Obj | None) -> bool:
    if selector is None or not selector:
        return True
    if request.resource.kind == "Namespace":
        obj = inputs["object"] or inputs["oldObject"] or {}
        return selector_matches(selector, (obj.get("metadata") or {}).get("labels"))
    if not request.resource.namespaced:
        return True
    namespace = inputs["namespaceObject"] or {}
    return selector_matches(selector, (namespace.get("metadata") or {}).get("labels"))


def _rule_matches(rule: Obj, request: AdmissionRequest, check_names: bool = True) -> bool:
    resource = request.resource
    operations = rule.get("operations") or []
    if "*" not in operations and request.operation.value not in operations:
        return False
    if not _listed(rule.get("apiGroups"), resource.group):
        return False
    if not _listed(rule.get("apiVersions"), resource.version):
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and resource.namespaced:
        return False
    if scope == "Namespaced" and not resource.namespaced:
        return False
    names = rule.get("resourceNames") or []
    if check_names and names and request.name not in names:
        return False
    return any(_resource_matches(entry, request) for entry in rule.get("resources") or [])


def _listed(values: list[str] | None, value: str) -> bool:
    return bool(values) and ("*" in (values or []) or value in (values or []))


def _resource_matches(entry: str, request: AdmissionRequest) -> bool:
    plural, _, sub = entry.partition("/")
    if plural not in ("*", request.resource.plural):
        return False
    if not sub:
        return not request.subresource
    return sub == "*" or sub == request.subresource


def _request_attributes(request: AdmissionRequest) -> Obj:
    resource = request.resource
    kind = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    gvr = {"group": resource.group, "version": resource.version, "resource": resource.plural}
    return {
        "kind": kind,
        "resource": gvr,
        "subResource": request.subresource,
        "requestKind": kind,
        "requestResource": gvr,
        "name": request.name,
        "namespace": request.namespace,
        "operation": request.operation.value,
        "userInfo": {"username": request.user, "groups": _groups(request)},
        "dryRun": request.dry_run,
    }


def _user_info(request: AdmissionRequest) -> Obj:
    """Who the ``authorizer`` library checks as: the request's user; the platform's own
    writes (no groups) hold every right, as ``system:masters``."""
    groups = list(request.groups) if request.groups is not None else ["system:masters"]
    return {"username": request.user, "groups": groups}


def _groups(request: AdmissionRequest) -> list[str]:
    """The request's user's groups; the platform's own writes are authenticated only."""
    return list(request.groups) if request.groups is not None else ["system:authenticated"]


def _audit_record(request: AdmissionRequest, decision: Decision) -> Obj:
    return {
        "policy": decision.policy,
        "binding": decision.binding,
        "message": decision.message,
        "reason": decision.reason,
        "cluster": request.cluster,
        "operation": request.operation.value,
        "resource": request.resource.plural,
        "namespace": request.namespace,
        "name": request.name,
        "user": request.user,
        "validationActions": json.dumps(decision.actions),
    }
