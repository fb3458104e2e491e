"""RBAC through the real kubectl, in the host and in a tenant cluster: a ServiceAccount
limited by a Role and RoleBinding, its token from ``kubectl create token``, the texts kubectl
prints for what it may and may not do, ``kubectl auth can-i --as`` and ``--list``."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import running_platform
from tests.e2e.tenancy import Tenancy

NS = "rbac-demo"
SA = f"system:serviceaccount:{NS}:reader"
UNAUTHORIZED = (  # "(Unauthorized)", or kubectl's wording when discovery hears it first
    "error: You must be logged in to the server (Unauthorized)",
    "error: You must be logged in to the server "
    "(the server has asked for the client to provide credentials)",
)


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    root = tmp_path_factory.mktemp("rbac")
    with running_platform(root) as cluster:
        tenancy = Tenancy(cluster, root / "data")
        tenancy.create_tenant("team-a")
        yield tenancy


def kubectl(
    tenancy: Tenancy, cluster: str, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return tenancy.cluster.kubectl(*args, check=check, kubeconfig=tenancy.kubeconfig(cluster))


@pytest.mark.parametrize("cluster", ["host", "team-a"])
def test_a_service_account_has_only_what_its_role_binding_grants(
    tenancy: Tenancy, cluster: str
) -> None:
    for command in (
        ("create", "namespace", NS),
        ("create", "serviceaccount", "reader", "-n", NS),
        ("create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods", "-n", NS),
        (
            "create",
            "rolebinding",
            "reader",
            "--role=pod-reader",
            f"--serviceaccount={NS}:reader",
            "-n",
            NS,
        ),
    ):
        kubectl(tenancy, cluster, *command)
    token = kubectl(
        tenancy, cluster, "create", "token", "reader", "-n", NS, "--duration=15m"
    ).stdout.strip()

    allowed = kubectl(tenancy, cluster, "--token", token, "get", "pods", "-n", NS)
    assert allowed.stderr.strip() == f"No resources found in {NS} namespace."
    root = tenancy.cluster.server.endpoint.url  # as kubectl proxy sends: routed by the token
    at_root = kubectl(tenancy, cluster, "--token", token, "--server", root, "get", "pods", "-n", NS)
    assert at_root.stderr.strip() == f"No resources found in {NS} namespace."
    refused = kubectl(
        tenancy, cluster, "--token", token, "get", "configmaps", "-n", NS, check=False
    )
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f'Error from server (Forbidden): configmaps is forbidden: User "{SA}" cannot list '
        f'resource "configmaps" in API group "" in the namespace "{NS}"'
    )
    nodes = kubectl(tenancy, cluster, "--token", token, "get", "nodes", check=False)
    assert nodes.stderr.strip() == (
        f'Error from server (Forbidden): nodes is forbidden: User "{SA}" cannot list '
        'resource "nodes" in API group "" at the cluster scope'
    )
    other = "team-a" if cluster == "host" else "host"
    elsewhere = kubectl(tenancy, other, "--token", token, "get", "pods", "-n", NS, check=False)
    assert elsewhere.returncode == 1
    assert elsewhere.stderr.splitlines()[-1] in UNAUTHORIZED

    def can_i(*question: str) -> str:
        asked = kubectl(
            tenancy, cluster, "auth", "can-i", *question, f"--as={SA}", "-n", NS, check=False
        )
        return asked.stdout.strip()

    assert can_i("list", "pods") == "yes"
    assert can_i("delete", "pods") == "no"
    listed = kubectl(tenancy, cluster, "auth", "can-i", "--list", f"--as={SA}", "-n", NS).stdout
    rows = [" ".join(line.split()) for line in listed.splitlines()]
    assert "pods [] [] [get list watch]" in rows
    assert "selfsubjectaccessreviews.authorization.k8s.io [] [] [create]" in rows
    assert not any(row.startswith("configmaps") for row in rows)

    as_jane = kubectl(tenancy, cluster, "get", "pods", "-n", NS, "--as=jane", check=False)
    assert as_jane.stderr.strip() == (
        'Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource '
        f'"pods" in API group "" in the namespace "{NS}"'
    )
    sneaky = kubectl(tenancy, cluster, "--token", token, "get", "pods", "--as=jane", check=False)
    assert sneaky.stderr.splitlines()[-1] == (
        f'Error from server (Forbidden): users "jane" is forbidden: User "{SA}" cannot '
        'impersonate resource "users" in API group "" at the cluster scope'
    )
    whoami = kubectl(tenancy, cluster, "--token", token, "auth", "whoami").stdout
    uid = kubectl(tenancy, cluster, "get", "sa", "reader", "-n", NS, "-o=jsonpath={.metadata.uid}")
    assert [" ".join(line.split()) for line in whoami.splitlines()] == [
        "ATTRIBUTE VALUE",
        f"Username {SA}",
        f"UID {uid.stdout}",
        f"Groups [system:serviceaccounts system:serviceaccounts:{NS} system:authenticated]",
    ]
    kubectl(tenancy, cluster, "create", "rolebinding", "jane-admin", "--clusterrole=admin",
            "--user=jane", "-n", NS)  # fmt: skip
    grab = kubectl(tenancy, cluster, "create", "rolebinding", "grab", "--clusterrole=cluster-admin",
                   "--user=jane", "-n", NS, "--as=jane", check=False)  # fmt: skip
    assert grab.stderr.strip() == (
        'error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io "grab" is '
        'forbidden: user "jane" (groups=["system:authenticated"]) is attempting to grant RBAC '
        'permissions not currently held:\n{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n'
        '{NonResourceURLs:["*"], Verbs:["*"]}'
    )
    kubectl(tenancy, cluster, "delete", "serviceaccount", "reader", "-n", NS)
    gone = kubectl(tenancy, cluster, "--token", token, "get", "pods", "-n", NS, check=False)
    assert gone.stderr.splitlines()[-1] in UNAUTHORIZED
