"""The platform as a process that can be killed, and the world the fault suite builds in it.

``Platform`` runs ``allot up --port 0 --fleet ... --data-dir ...`` as a child process (the
command a user types), waits for ``Ctrl-C stops it.``, and ends it with ``kill -9``
(``SIGKILL``: no shutdown hook runs, nothing is flushed). A restart is a new ``allot up``
on the same data directory; its kubeconfigs name the new port, so clients are made per
start (``client``). ``build_world`` creates what ``tests/scenarios/faults.yaml`` describes
through the documented doors: classes and the host quota over HTTPS, tenants with
``allot tenant create``. Used by ``test_crash_rounds`` and ``test_quota_race``.
"""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from allot.cli.main import main as allot

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "faults.yaml"
READY = "Ctrl-C stops it."
Obj = dict[str, Any]


def load_world() -> Obj:
    world: Obj = yaml.safe_load(SCENARIO.read_text())
    return world


@dataclass
class Platform:
    """One data directory served by successive ``allot up`` processes."""

    data_dir: Path
    fleet: Path
    process: subprocess.Popen[str] | None = None
    starts: int = 0

    def start(self) -> str:
        """Start ``allot up`` and return its banner once the fleet is published."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ALLOT_", "XDG_"))}
        command = [sys.executable, "-m", "allot.cli.main", "up", "--port", "0"]
        command += ["--fleet", str(self.fleet), "--data-dir", str(self.data_dir)]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        assert self.process.stdout is not None
        lines: list[str] = []
        while not lines or lines[-1] != READY:
            line = self.process.stdout.readline()
            if not line:
                self.process.wait(timeout=30)
                output = "\n".join(lines)
                raise AssertionError(f"allot up exited {self.process.returncode}:\n{output}")
            lines.append(line.rstrip("\n"))
        self.starts += 1
        return "\n".join(lines)

    def kill(self) -> None:
        """``kill -9``: the process ends where it stands."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        assert self.process.stdout is not None
        self.process.stdout.close()
        self.process = None

    def stop(self) -> None:
        """Ctrl-C, for the end of the suite."""
        if self.process is None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
        self.process = None

    def client(self, cluster: str, timeout: float = 10.0) -> httpx.Client:
        """HTTPS to ``cluster`` with the server, CA and token of its kubeconfig."""
        config = yaml.safe_load((self.data_dir / "kubeconfigs" / f"{cluster}.yaml").read_text())
        server = config["clusters"][0]["cluster"]
        token = config["users"][0]["user"]["token"]
        return httpx.Client(
            base_url=server["server"],
            verify=ssl.create_default_context(cafile=server["certificate-authority"]),
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )


def write_fleet(directory: Path, world: Obj) -> Path:
    path = directory / "fleet.yaml"
    path.write_text(yaml.safe_dump(world["fleet"]))
    return path


def build_world(platform: Platform, world: Obj, scratch: Path) -> None:
    """The classes and host quota over HTTPS, then each tenant with ``allot tenant create``."""
    with platform.client("host") as host:
        for device_class in world["classes"]:
            host.post("/apis/resource.k8s.io/v1/deviceclasses", json=device_class)
        quota = resource_quota("host-claims", world["hostQuota"])
        host.post("/api/v1/namespaces/default/resourcequotas", json=quota).raise_for_status()
    values = scratch / "values.yaml"
    selector = {"matchLabels": {"faults.example/shared": "yes"}}
    values.write_text(
        yaml.safe_dump({"sync": {"fromHost": {"deviceClasses": {"selector": selector}}}})
    )
    for tenant in world["tenants"]:
        options = ["-f", str(values), "--data-dir", str(platform.data_dir)]
        for key, value in (tenant.get("quota") or {}).items():
            options += ["--quota", f"{key}={value}"]
        if tenant.get("gpuMemory"):
            options += ["--gpu-memory", tenant["gpuMemory"]]
        assert allot(["tenant", "create", tenant["name"], *options]) == 0


def resource_quota(name: str, hard: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name},
        "spec": {"hard": hard},
    }


def claim(name: str, device_class: str) -> Obj:
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [request]}},
    }


def pod(name: str, claim_name: str) -> Obj:
    container = {"name": "main", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
            "containers": [container],
        },
    }
