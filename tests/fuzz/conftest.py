"""The fuzz suites' targets: a bare host API server, and a tenant on a whole platform.

Module-scoped, so each fuzz module (one pytest-xdist worker's unit of work) starts its own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from allot.apiserver.server import ServerThread
from tests.e2e.conftest import running_platform
from tests.e2e.tenancy import Tenancy
from tests.fuzz.fuzzing import Target

TENANT = "fuzz-team"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root = tmp_path_factory.mktemp("fuzz-host")
    with ServerThread(root / "data") as server:
        token = server.api.registry.tokens.ensure("host")
        url = f"{server.endpoint.url}/clusters/host"
        yield Target(url, token, server.endpoint.tls.ca_cert, quiet=True, seed=13, examples=2)


@pytest.fixture(scope="module")
def tenant(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root = tmp_path_factory.mktemp("fuzz-tenant")
    with running_platform(root) as cluster:
        tenancy = Tenancy(cluster, root / "data")
        tenancy.create_tenant(TENANT)
        config = yaml.safe_load(tenancy.kubeconfig(TENANT).read_text())
        url = config["clusters"][0]["cluster"]["server"]
        token = config["users"][0]["user"]["token"]
        ca_cert = cluster.server.endpoint.tls.ca_cert
        yield Target(url, token, ca_cert, quiet=False, seed=14, examples=1)
