"""How the kubelet reports a pod's init containers, for the node agent.

A pod with ``initContainers`` starts ``Pending`` with every container, init and app,
waiting ``PodInitializing`` (the kubelet's default waiting state for such a pod); each init
container, as the runtime (``allot.controllers.runtimes``) starts it in order, runs, then
is terminated ``Completed``, ready and no longer started; a native sidecar (an init
container with ``restartPolicy: Always``) is running, started and ready beside the app
containers. The ``Initialized`` condition is False with ``ContainersNotInitialized`` and
``containers with incomplete status: [a b]`` until every regular init container has
completed and every sidecar has started, as the kubelet's ``GeneratePodInitializedCondition``
works it out (True once an app container has started, ``PodCompleted`` for a pod that
succeeded). Called by ``allot.controllers.nodeagent``; pods without init containers never
come here.
"""

from __future__ import annotations

from allot.controllers import lifecycle
from allot.controllers.runtimes import is_sidecar
from allot.types import Obj

POD_INITIALIZING = "PodInitializing"
NOT_INITIALIZED = "ContainersNotInitialized"


def waiting_entry(container: Obj, reason: str = POD_INITIALIZING) -> Obj:
    """A container's status before it first runs: waiting, not ready, not started."""
    return {
        "name": container["name"],
        "ready": False,
        "restartCount": 0,
        "image": container.get("image", ""),
        "imageID": "",
        "started": False,
        "state": {"waiting": {"reason": reason}},
    }


def initializing(pod: Obj, now: str) -> None:
    """The status of a pod whose init containers are about to run: ``Pending``, every
    container waiting ``PodInitializing``."""
    spec, status = pod["spec"], pod.setdefault("status", {})
    status["phase"] = "Pending"
    status["startTime"] = status.get("startTime") or now
    status["initContainerStatuses"] = [waiting_entry(c) for c in spec["initContainers"]]
    status["containerStatuses"] = [waiting_entry(c) for c in spec.get("containers") or []]


def entry_of(pod: Obj, name: str) -> Obj | None:
    """The init container's entry in the pod's status."""
    entries: list[Obj] = (pod.get("status") or {}).get("initContainerStatuses") or []
    for entry in entries:
        if entry.get("name") == name:
            return entry  # the status's own, to change in place
    return None


def spec_of(pod: Obj, name: str) -> Obj | None:
    """The container's spec, init or app container."""
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if container.get("name") == name:
            return dict(container)
    return None


def started(pod: Obj, name: str, now: str) -> None:
    """An init container runs (for the first time): started; a sidecar also ready
    (allot runs no probes), a regular init container not until it completes."""
    entry, spec = entry_of(pod, name), spec_of(pod, name)
    if entry is None or spec is None:
        return
    entry.update(
        {
            "imageID": lifecycle.image_id(spec.get("image", "")),
            "containerID": lifecycle.container_id(pod, name),
            "state": {"running": {"startedAt": now}},
            "started": True,
            "ready": is_sidecar(spec),
        }
    )


def terminated(entry: Obj, code: int, now: str) -> None:
    """A container's run ended with ``code``: terminated (``Completed``/``Error``), not
    started; ready only for a regular init container that completed."""
    running = (entry.get("state") or {}).get("running") or {}
    entry["state"] = {
        "terminated": {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": running.get("startedAt", now),
            "finishedAt": now,
            "containerID": entry.get("containerID", ""),
        }
    }
    entry["started"] = False
    entry["ready"] = False


def initialized_condition(pod: Obj, now: str) -> Obj:
    """The ``Initialized`` condition, as the kubelet's ``GeneratePodInitializedCondition``:
    the regular init containers not terminated with 0 and the sidecars not started are
    incomplete; none (or an app container has started) makes it True."""
    status = pod.get("status") or {}
    entries = {e["name"]: e for e in status.get("initContainerStatuses") or []}
    incomplete = []
    for container in pod["spec"].get("initContainers") or []:
        entry = entries.get(container["name"]) or {}
        if is_sidecar(container):
            done = bool(entry.get("started"))
        else:
            done = ((entry.get("state") or {}).get("terminated") or {}).get("exitCode") == 0
        if not done:
            incomplete.append(container["name"])
    condition: Obj = {"type": "Initialized", "status": "True"}
    if status.get("phase") == "Succeeded":
        condition["reason"] = "PodCompleted"
    elif incomplete and not _app_started(status):
        condition.update(
            status="False",
            reason=NOT_INITIALIZED,
            message=f"containers with incomplete status: [{' '.join(incomplete)}]",
        )
    conditions: list[Obj] = status.get("conditions") or []
    before: Obj = next((c for c in conditions if c["type"] == "Initialized"), {})
    same = before.get("status") == condition["status"]
    condition["lastTransitionTime"] = before.get("lastTransitionTime", now) if same else now
    return condition


def _app_started(status: Obj) -> bool:
    """Whether an app container has run (so the pod was initialized before)."""
    for entry in status.get("containerStatuses") or []:
        state = entry.get("state") or {}
        if "running" in state or "terminated" in state or entry.get("lastState"):
            return True
    return False


def sidecar_names(pod: Obj) -> list[str]:
    """The pod's native sidecars, in order."""
    return [c["name"] for c in pod["spec"].get("initContainers") or [] if is_sidecar(c)]
