"""The RBAC authorizer and the escalation check against ``tests/scenarios/authorization.yaml``:
who may do what through which Role, ClusterRole and binding, and the exact texts of a
refusal; plus the covering rule's invariant (hypothesis) and the bootstrap policy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.apiserver.authn import ForbiddenRequest
from allot.registry import HOST_CLUSTER
from allot.registry.admission import AdmissionDenied
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.rbac import bootstrap
from allot.registry.rbac.identity import AUTHENTICATED, UserInfo
from allot.registry.rbac.rules import Attributes, Rule, allows, covers
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.statuses import to_status
from allot.store.errors import NotFound
from allot.types import Obj

SCENARIOS = yaml.safe_load((Path(__file__).parent / "scenarios" / "authorization.yaml").read_text())
ADMIN = WriteOptions("test", "Strict", False)


def target(obj: Obj) -> Target:
    served = by_kind(obj["kind"])
    namespace = obj["metadata"].get("namespace") if served.namespaced else None
    return Target(served, namespace, None, "")


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    registry = Registry(tmp_path_factory.mktemp("rbac"))
    for obj in SCENARIOS["objects"]:
        registry.handlers.create(HOST_CLUSTER, target(obj), obj, ADMIN)
    yield registry
    registry.close()


def user_of(case: dict[str, Any]) -> UserInfo:
    spec = case["user"]
    return UserInfo(spec["name"], groups=tuple(spec.get("groups", [AUTHENTICATED])))


def attributes_of(case: dict[str, Any]) -> Attributes:
    request = dict(case["request"])
    if "path" in request:
        return Attributes(
            user_of(case), request["verb"], resource_request=False, path=request["path"]
        )
    return Attributes(
        user_of(case),
        request["verb"],
        namespace=request.get("namespace", ""),
        api_group=request.get("group", ""),
        resource=request["resource"],
        subresource=request.get("subresource", ""),
        name=request.get("name", ""),
    )


@pytest.mark.parametrize("case", SCENARIOS["cases"], ids=lambda c: c["name"])
def test_authorization(registry: Registry, case: dict[str, Any]) -> None:
    attributes = attributes_of(case)
    decision = registry.authorizer.authorize(HOST_CLUSTER, attributes)
    if case.get("allowed"):
        assert decision.allowed, decision.reason
        return
    assert not decision.allowed
    status = to_status(ForbiddenRequest(attributes, decision.reason))
    assert (status.code, status.reason, status.message) == (403, "Forbidden", case["forbidden"])
    if attributes.resource_request:
        assert status.details is not None
        assert status.details.kind == attributes.resource
        assert status.details.group == (attributes.api_group or None)


@pytest.mark.parametrize("case", SCENARIOS["escalations"], ids=lambda c: c["name"])
def test_escalation(registry: Registry, case: dict[str, Any]) -> None:
    user = user_of(case)
    options = WriteOptions("test", "Strict", True, user=user.name, groups=user.groups)
    obj = case["object"]
    if "refused" not in case:
        registry.handlers.create(HOST_CLUSTER, target(obj), obj, options)
        return
    with pytest.raises((AdmissionDenied, NotFound)) as refused:
        registry.handlers.create(HOST_CLUSTER, target(obj), obj, options)
    status = to_status(refused.value)
    assert status.message == case["refused"]
    assert status.code == (404 if isinstance(refused.value, NotFound) else 403)


def test_bootstrap_roles_are_recreated_unless_autoupdate_is_false(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    roles = by_kind("ClusterRole").store
    store = registry.store
    store.delete(HOST_CLUSTER, roles, "", "view")
    kept = dict(store.get(HOST_CLUSTER, roles, "", "system:discovery"))
    kept["metadata"]["annotations"] = {bootstrap.AUTOUPDATE: "false"}
    kept["rules"] = [{"nonResourceURLs": ["/version"], "verbs": ["get"]}]
    store.update(HOST_CLUSTER, roles, kept)
    registry.close()
    registry = Registry(tmp_path)  # a restart
    view = registry.store.get(HOST_CLUSTER, roles, "", "view")
    assert {
        "apiGroups": [""],
        "resources": ["namespaces"],
        "verbs": ["get", "list", "watch"],
    } in view["rules"]
    assert registry.store.get(HOST_CLUSTER, roles, "", "system:discovery")["rules"] == kept["rules"]
    registry.close()


def test_every_cluster_has_the_bootstrap_policy(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    registry.add_cluster("legal-ai")
    for cluster in (HOST_CLUSTER, "legal-ai"):
        names = {
            r["metadata"]["name"]
            for r in registry.store.scan(cluster, by_kind("ClusterRole").store)
        }
        assert {"cluster-admin", "admin", "edit", "view", "system:discovery"} <= names
    registry.close()


NAMES = st.sampled_from(["a", "b"])
RULES = st.builds(
    Rule,
    verbs=st.lists(st.sampled_from(["get", "list", "*"]), min_size=1, max_size=2).map(tuple),
    api_groups=st.lists(st.sampled_from(["", "apps", "*"]), min_size=1, max_size=2).map(tuple),
    resources=st.lists(
        st.sampled_from(["pods", "pods/log", "*/log", "*", "deployments"]), min_size=1, max_size=2
    ).map(tuple),
    resource_names=st.lists(NAMES, max_size=1).map(tuple),
)
REQUESTS = st.builds(
    lambda verb, group, resource, name: Attributes(
        UserInfo("u"),
        verb,
        api_group=group,
        resource=resource.split("/")[0],
        subresource=resource.partition("/")[2],
        name=name,
    ),
    st.sampled_from(["get", "list"]),
    st.sampled_from(["", "apps"]),
    st.sampled_from(["pods", "pods/log", "deployments", "deployments/log"]),
    st.sampled_from(["", "a", "b"]),
)


@settings(max_examples=300, deadline=None)
@given(owner=st.lists(RULES, max_size=3), servant=st.lists(RULES, max_size=2), request=REQUESTS)
def test_covered_rules_allow_nothing_more(
    owner: list[Rule], servant: list[Rule], request: Attributes
) -> None:
    """Whatever a covered role allows, the rules covering it allow too (no escalation
    can pass the check)."""
    if not covers(owner, servant) and any(allows(request, rule) for rule in servant):
        assert any(allows(request, rule) for rule in owner)
