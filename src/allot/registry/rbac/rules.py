"""Policy rules: matching a request, covering other rules, the texts RBAC writes.

Pure functions with upstream's semantics (``pkg/apis/rbac/v1`` evaluation helpers,
``component-helpers/auth/rbac/validation`` covers, ``pkg/registry/rbac/validation``):
verbs and API groups with ``*``, resources with ``*``, ``resource/subresource`` and
``*/subresource``, resource names (none means all), non-resource URLs with a trailing
``*``. The forbidden text is the API server's. Used by the authorizer, the escalation
check and the rules review.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from allot.registry.rbac.identity import UserInfo

ALL = "*"


@dataclass(frozen=True)
class Rule:
    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_wire(cls, rule: Mapping[str, Any]) -> Rule:
        return cls(
            tuple(rule.get("verbs") or ()),
            tuple(rule.get("apiGroups") or ()),
            tuple(rule.get("resources") or ()),
            tuple(rule.get("resourceNames") or ()),
            tuple(rule.get("nonResourceURLs") or ()),
        )

    def to_wire(self) -> dict[str, list[str]]:
        wire = {
            "verbs": self.verbs,
            "apiGroups": self.api_groups,
            "resources": self.resources,
            "resourceNames": self.resource_names,
            "nonResourceURLs": self.non_resource_urls,
        }
        return {key: list(values) for key, values in wire.items() if values}


@dataclass(frozen=True)
class Attributes:
    """What a request asks: upstream's ``authorizer.Attributes``."""

    user: UserInfo
    verb: str
    resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""


def rules_of(wire_rules: Iterable[Mapping[str, Any]] | None) -> tuple[Rule, ...]:
    return tuple(Rule.from_wire(rule) for rule in wire_rules or ())


def allows(attributes: Attributes, rule: Rule) -> bool:
    """Whether ``rule`` allows the request (upstream's ``RuleAllows``)."""
    if not _verb_matches(rule, attributes.verb):
        return False
    if not attributes.resource_request:
        return any(_url_covers(url, attributes.path) for url in rule.non_resource_urls)
    combined = attributes.resource
    if attributes.subresource:
        combined = f"{attributes.resource}/{attributes.subresource}"
    return (
        (ALL in rule.api_groups or attributes.api_group in rule.api_groups)
        and _resource_matches(rule, combined, attributes.subresource)
        and (not rule.resource_names or attributes.name in rule.resource_names)
    )


def _verb_matches(rule: Rule, verb: str) -> bool:
    return ALL in rule.verbs or verb in rule.verbs


def _resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    for resource in rule.resources:
        if resource in (ALL, combined):
            return True
        if subresource and resource == f"*/{subresource}":
            return True
    return False


def _url_covers(owner: str, path: str) -> bool:
    if owner in (ALL, path):
        return True
    return owner.endswith("*") and path.startswith(owner.rstrip("*"))


# ------------------------------------------------------------------ covering rules
def breakdown(rule: Rule) -> list[Rule]:
    """One rule per (group, resource, verb, name) and per (URL, verb)."""
    atoms: list[Rule] = []
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                names: Sequence[str | None] = rule.resource_names or (None,)
                for name in names:
                    atoms.append(
                        Rule((verb,), (group,), (resource,), (name,) if name is not None else ())
                    )
    for url in rule.non_resource_urls:
        for verb in rule.verbs:
            atoms.append(Rule((verb,), non_resource_urls=(url,)))
    return atoms


def covers(owner: Sequence[Rule], servant: Sequence[Rule]) -> list[Rule]:
    """The atoms of ``servant`` that no rule of ``owner`` covers (empty: covered)."""
    return [
        atom
        for rule in servant
        for atom in breakdown(rule)
        if not any(_rule_covers(held, atom) for held in owner)
    ]


def _rule_covers(owner: Rule, atom: Rule) -> bool:
    verbs = ALL in owner.verbs or set(atom.verbs) <= set(owner.verbs)
    groups = ALL in owner.api_groups or set(atom.api_groups) <= set(owner.api_groups)
    resources = _resources_cover(owner.resources, atom.resources)
    urls = all(
        any(_url_prefix_covers(o, p) for o in owner.non_resource_urls)
        for p in atom.non_resource_urls
    )
    if not atom.resource_names:
        names = not owner.resource_names
    else:
        names = not owner.resource_names or set(atom.resource_names) <= set(owner.resource_names)
    return verbs and groups and resources and names and urls


def _url_prefix_covers(owner: str, path: str) -> bool:
    return owner == path or (owner.endswith("*") and path.startswith(owner.rstrip("*")))


def _resources_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if ALL in owned or set(wanted) <= set(owned):
        return True
    for resource in wanted:
        if resource in owned:
            continue
        if "/" not in resource:
            return False
        if "*/" + resource.split("/", 1)[1] not in owned:
            return False
    return True


# ------------------------------------------------------------------------ texts
def compact(rules: Sequence[Rule]) -> list[Rule]:
    """Simple rules (one group, one resource, no names) of the same group and resource
    merged into one with all their verbs, as upstream's ``CompactRules``."""
    verbs_of: dict[tuple[str, str], list[str]] = {}
    others: list[Rule] = []
    for rule in rules:
        simple = (
            len(rule.api_groups) == 1
            and len(rule.resources) == 1
            and not rule.resource_names
            and not rule.non_resource_urls
        )
        if not simple:
            others.append(rule)
            continue
        verbs = verbs_of.setdefault((rule.api_groups[0], rule.resources[0]), [])
        verbs += [verb for verb in rule.verbs if verb not in verbs]
    merged = [Rule(tuple(v), (g,), (r,)) for (g, r), v in verbs_of.items()]
    return merged + others


def compact_string(rule: Rule) -> str:
    """Upstream's ``CompactString``: ``{APIGroups:["apps"], Resources:["deployments"],
    Verbs:["get"]}``."""
    parts = [
        f"{label}:{go_quoted_list(values)}"
        for label, values in (
            ("APIGroups", rule.api_groups),
            ("Resources", rule.resources),
            ("NonResourceURLs", rule.non_resource_urls),
            ("ResourceNames", rule.resource_names),
            ("Verbs", rule.verbs),
        )
        if values
    ]
    return "{" + ", ".join(parts) + "}"


def go_quoted_list(values: Sequence[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def go_quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def forbidden_message(attributes: Attributes) -> str:
    """The authorization filter's text (``responsewriters.forbiddenMessage``)."""
    user = go_quote(attributes.user.name)
    if not attributes.resource_request:
        return f"User {user} cannot {attributes.verb} path {go_quote(attributes.path)}"
    resource = attributes.resource
    if attributes.subresource:
        resource = f"{resource}/{attributes.subresource}"
    head = (
        f"User {user} cannot {attributes.verb} resource {go_quote(resource)} "
        f"in API group {go_quote(attributes.api_group)}"
    )
    if attributes.namespace:
        return f"{head} in the namespace {go_quote(attributes.namespace)}"
    return f"{head} at the cluster scope"
