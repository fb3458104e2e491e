"""The node agent, ``simulated`` runtime: pods bound to a simulated node run on a timer.

For every pod bound to one of its nodes, the agent plays the kubelet: it asks the driver to
prepare the pod's claims (a CDI-like spec per claim under ``<data-dir>/cdi``), then moves
the pod to ``Running`` with ready containers, ``Ready`` and ``ContainersReady`` conditions;
a pod whose containers ``exit`` after a while (annotation
``allot.dev/simulated-runtime-seconds``) moves on to ``Succeeded``. When a pod goes away the
claims are unprepared. A ``process`` runtime (containers' commands as local processes with
their devices' environment) is not built yet; it is to reuse :class:`DevicePreparer`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from allot.controllers.context import ControllerContext
from allot.store import WatchEvent

MANAGER = "allot-node-agent"
RUNTIME_ANNOTATION = "allot.dev/simulated-runtime-seconds"
Obj = dict[str, Any]


class DevicePreparer:
    """The driver's prepare/unprepare: one JSON spec per claim, listing its devices."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def prepare(self, claim: Obj, node: str) -> list[Obj]:
        results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get(
            "results"
        ) or []
        devices = [
            {
                "request": r.get("request"),
                "driver": r.get("driver"),
                "pool": r.get("pool"),
                "device": r.get("device"),
                "cdiDevice": f"k8s.{r.get('driver')}/claim="
                f"{claim['metadata']['uid']}-{r.get('device')}",
            }
            for r in results
            if r.get("pool") == node or r.get("pool")
        ]
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"k8s.gpu.nvidia.com-claim_{claim['metadata']['uid']}.json"
        path.write_text(
            json.dumps(
                {
                    "claim": claim["metadata"]["name"],
                    "namespace": claim["metadata"].get("namespace"),
                    "node": node,
                    "devices": devices,
                },
                indent=2,
            )
        )
        return devices

    def unprepare(self, claim_uid: str) -> None:
        path = self.directory / f"k8s.gpu.nvidia.com-claim_{claim_uid}.json"
        path.unlink(missing_ok=True)


class SimulatedNodeAgent:
    name = "node-agent"

    def __init__(self, context: ControllerContext, preparer: DevicePreparer) -> None:
        self.context = context
        self.preparer = preparer

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.cluster != self.context.cluster or event.resource != "pods":
            return []
        metadata = event.object["metadata"]
        if event.type == "DELETED":
            return []
        if (event.object.get("spec") or {}).get("nodeName") and (
            event.object.get("status") or {}
        ).get("phase", "Pending") == "Pending":
            return [("pod", metadata.get("namespace", ""), metadata["name"])]
        return []

    def initial_keys(self) -> list[Hashable]:
        return [
            ("pod", p["metadata"].get("namespace", ""), p["metadata"]["name"])
            for p in self.context.list("Pod")
            if (p.get("spec") or {}).get("nodeName")
            and (p.get("status") or {}).get("phase", "Pending") == "Pending"
        ]

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        _, namespace, name = key
        pod = self.context.get("Pod", namespace, name)
        if pod is None or (pod.get("status") or {}).get("phase", "Pending") != "Pending":
            return
        node = pod["spec"].get("nodeName")
        for claim in self._claims(pod):
            self.preparer.prepare(claim, node)
        now = self.context.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        containers = pod["spec"].get("containers") or []
        status = pod.setdefault("status", {})
        status.update(
            {
                "phase": "Running",
                "hostIP": "127.0.0.1",
                "podIP": "127.0.0.1",
                "podIPs": [{"ip": "127.0.0.1"}],
                "hostIPs": [{"ip": "127.0.0.1"}],
                "startTime": now,
                "containerStatuses": [
                    {
                        "name": c["name"],
                        "ready": True,
                        "restartCount": 0,
                        "image": c.get("image", ""),
                        "imageID": "",
                        "started": True,
                        "state": {"running": {"startedAt": now}},
                    }
                    for c in containers
                ],
            }
        )
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        for kind in ("Initialized", "ContainersReady", "Ready", "PodScheduled"):
            conditions[kind] = {"type": kind, "status": "True", "lastTransitionTime": now}
        status["conditions"] = list(conditions.values())
        updated = self.context.update_status("Pod", pod, MANAGER)
        seconds = (pod["metadata"].get("annotations") or {}).get(RUNTIME_ANNOTATION)
        if seconds is not None:
            asyncio.get_running_loop().call_later(float(seconds), self._finish, updated)

    def _claims(self, pod: Obj) -> list[Obj]:
        namespace = pod["metadata"].get("namespace", "")
        names = [
            s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        ]
        names += [c.get("resourceClaimName") for c in pod["spec"].get("resourceClaims") or []]
        extended = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
        names.append(extended.get("resourceClaimName"))
        claims = []
        for name in names:
            claim = self.context.get("ResourceClaim", namespace, name) if name else None
            if claim is not None:
                claims.append(claim)
        return claims

    def _finish(self, pod: Obj) -> None:
        latest = self.context.get(
            "Pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
        )
        if latest is None or (latest.get("status") or {}).get("phase") != "Running":
            return
        now = self.context.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        status = latest["status"]
        status["phase"] = "Succeeded"
        for container in status.get("containerStatuses") or []:
            container["ready"] = False
            container["state"] = {
                "terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": now}
            }
        status["conditions"] = [
            {**c, "status": "False"} if c["type"] in ("Ready", "ContainersReady") else c
            for c in status.get("conditions") or []
        ]
        self.context.update_status("Pod", latest, MANAGER)
        for claim in self._claims(latest):
            self.preparer.unprepare(claim["metadata"]["uid"])
