"""ServiceAccount tokens and impersonation without HTTP: what a token authenticates as,
when it stops working (expiry, a deleted or re-created account, another cluster), how
tokens are kept on disk, the TokenRequest's validation, and who may impersonate whom."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.datastructures import Headers

from allot.apiserver import authn, reviews
from allot.apiserver.errors import Unauthorized
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.rbac.identity import UserInfo, cluster_admin
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.statuses import InvalidObjectError, to_status
from allot.store.errors import NotFound

START = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
ADMIN = WriteOptions("test", "Strict", False)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def registry(tmp_path: Path, clock: Clock) -> Iterator[Registry]:
    registry = Registry(tmp_path, clock=clock)
    registry.add_cluster("legal-ai")
    for cluster in (HOST_CLUSTER, "legal-ai"):
        create_account(registry, cluster)
    yield registry
    registry.close()


def create_account(registry: Registry, cluster: str) -> None:
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ci"}}
    target = Target(by_kind("ServiceAccount"), "default", None, "")
    registry.handlers.create(cluster, target, account, ADMIN)


def bearer(token: str, **impersonation: str) -> Headers:
    return Headers({"authorization": f"Bearer {token}", **impersonation})


def issue(registry: Registry, cluster: str = HOST_CLUSTER, seconds: int | None = None) -> str:
    body = {"spec": {"expirationSeconds": seconds}} if seconds else {}
    answer = reviews.token_request(registry, cluster, "default", "ci", body)
    token: str = answer["status"]["token"]
    return token


def test_a_token_authenticates_as_its_account_in_its_cluster(registry: Registry) -> None:
    answer = reviews.token_request(registry, HOST_CLUSTER, "default", "ci", {})
    assert answer["spec"]["expirationSeconds"] == 3600
    assert answer["status"]["expirationTimestamp"] == "2026-11-27T13:00:00Z"
    user = authn.authenticate(registry, bearer(answer["status"]["token"]), HOST_CLUSTER)
    assert (user.name, user.groups) == (
        "system:serviceaccount:default:ci",
        ("system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"),
    )
    with pytest.raises(Unauthorized):
        authn.authenticate(registry, bearer(answer["status"]["token"]), "legal-ai")


def test_a_token_expires(registry: Registry, clock: Clock) -> None:
    token = issue(registry, seconds=600)
    clock.now = START + dt.timedelta(seconds=599)
    assert authn.authenticate(registry, bearer(token), HOST_CLUSTER).name.endswith(":ci")
    clock.now = START + dt.timedelta(seconds=600)
    with pytest.raises(Unauthorized):
        authn.authenticate(registry, bearer(token), HOST_CLUSTER)


def test_a_deleted_account_s_tokens_stop_working_even_if_it_comes_back(
    registry: Registry,
) -> None:
    token = issue(registry)
    target = Target(by_kind("ServiceAccount"), "default", "ci", "")
    registry.handlers.delete(HOST_CLUSTER, target, {}, False)
    with pytest.raises(Unauthorized):
        authn.authenticate(registry, bearer(token), HOST_CLUSTER)
    create_account(registry, HOST_CLUSTER)  # the same name, a new uid
    with pytest.raises(Unauthorized):
        authn.authenticate(registry, bearer(token), HOST_CLUSTER)


def test_tokens_are_kept_hashed_and_private(
    registry: Registry, tmp_path: Path, clock: Clock
) -> None:
    token = issue(registry)
    path = tmp_path / "serviceaccount-tokens.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert token not in path.read_text()
    assert [r["name"] for r in json.loads(path.read_text()).values()] == ["ci"]
    reopened = Registry(tmp_path, clock=clock)  # a restart keeps them
    assert authn.authenticate(reopened, bearer(token), HOST_CLUSTER).name.endswith(":ci")
    reopened.close()


@pytest.mark.parametrize(
    ("seconds", "message"),
    [
        (599, "spec.expirationSeconds: Invalid value: 599: may not specify a duration less "
         "than 10 minutes"),
        (2**32 + 1, "spec.expirationSeconds: Invalid value: 4294967297: may not specify a "
         "duration larger than 2^32 seconds"),
    ],
)  # fmt: skip
def test_token_durations_are_validated(registry: Registry, seconds: int, message: str) -> None:
    with pytest.raises(InvalidObjectError) as refused:
        reviews.token_request(
            registry, HOST_CLUSTER, "default", "ci", {"spec": {"expirationSeconds": seconds}}
        )
    status = to_status(refused.value)
    assert status.code == 422
    assert status.message == f'TokenRequest.authentication.k8s.io "ci" is invalid: {message}'


def test_a_missing_account_gets_no_token(registry: Registry) -> None:
    with pytest.raises(NotFound) as refused:
        reviews.token_request(registry, HOST_CLUSTER, "default", "nobody", {})
    status = to_status(refused.value)
    assert (status.code, status.message) == (404, 'serviceaccounts "nobody" not found')


def test_the_cluster_admin_impersonates_with_authenticated_added(registry: Registry) -> None:
    admin = cluster_admin(HOST_CLUSTER)
    headers = Headers(raw=[(b"impersonate-user", b"jane"), (b"impersonate-group", b"devs"),
                           (b"impersonate-extra-scopes", b"view")])  # fmt: skip
    user = authn.impersonate(registry, headers, HOST_CLUSTER, admin)
    assert user == UserInfo(
        "jane", groups=("devs", "system:authenticated"), extra=(("scopes", ("view",)),)
    )
    account = authn.impersonate(
        registry,
        Headers({"impersonate-user": "system:serviceaccount:default:ci"}),
        HOST_CLUSTER,
        admin,
    )
    assert account.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    )


def test_impersonation_needs_the_impersonate_verb(registry: Registry) -> None:
    token = issue(registry)
    user = authn.authenticate(registry, bearer(token), HOST_CLUSTER)
    with pytest.raises(authn.ForbiddenRequest) as refused:
        authn.impersonate(registry, Headers({"impersonate-user": "jane"}), HOST_CLUSTER, user)
    status = to_status(refused.value)
    assert (status.code, status.message) == (
        403,
        'users "jane" is forbidden: User "system:serviceaccount:default:ci" cannot '
        'impersonate resource "users" in API group "" at the cluster scope',
    )
