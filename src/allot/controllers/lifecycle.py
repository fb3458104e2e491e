"""What the kubelet tells about a container's life: its events and its identifiers.

``kubectl describe pod`` shows the kubelet's events in order: ``Pulling`` and ``Pulled``
for the image, ``Created`` and ``Started`` for each container, ``Killing`` when a pod is
deleted gracefully; ``kubectl get pod -o yaml`` shows each container's ``containerID``
and ``imageID``. allot runs no images (the simulated runtime runs nothing, the process
runtime runs local commands), so the pull is simulated and said to be; the identifiers
have the shapes containerd gives them (``containerd://<64 hex>``,
``<image>@sha256:<64 hex>``), derived from the pod's uid, the container and its restart
count, and the image's name, so they are stable across restarts of the platform. The
texts follow the kubelet's (``pkg/kubelet/kuberuntime``, ``pkg/kubelet/images``). Used by
the node agent.
"""

from __future__ import annotations

import hashlib

from allot.controllers.context import ControllerContext
from allot.types import Obj

COMPONENT = "kubelet"
SIMULATED_PULL = "(simulated: allot runs no images)"


def container_id(pod: Obj, container: str, restarts: int = 0) -> str:
    """The runtime's id of one run of a container, as containerd writes it."""
    uid = pod["metadata"].get("uid") or pod["metadata"]["name"]
    digest = hashlib.sha256(f"{uid}/{container}/{restarts}".encode()).hexdigest()
    return f"containerd://{digest}"


def image_id(image: str) -> str:
    """The image's resolved id: its repository with a (simulated) digest."""
    repository = image.split("@", 1)[0]
    last = repository.rsplit("/", 1)[-1]
    if ":" in last:
        repository = repository[: repository.rfind(":")]
    if "/" not in repository:
        repository = f"docker.io/library/{repository}"
    elif "." not in repository.split("/", 1)[0] and ":" not in repository.split("/", 1)[0]:
        repository = f"docker.io/{repository}"
    return f"{repository}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def started_events(context: ControllerContext, pod: Obj) -> None:
    """Pulling, Pulled, Created and Started for every container of a starting pod."""
    for spec in pod["spec"].get("containers") or []:
        image, name = spec.get("image", ""), spec["name"]
        context.event(pod, "Normal", "Pulling", f'Pulling image "{image}"', COMPONENT)
        context.event(
            pod,
            "Normal",
            "Pulled",
            f'Successfully pulled image "{image}" in 0s (0s including waiting). Image size: '
            f"0 bytes. {SIMULATED_PULL}",
            COMPONENT,
        )
        context.event(pod, "Normal", "Created", f"Created container: {name}", COMPONENT)
        context.event(pod, "Normal", "Started", f"Started container {name}", COMPONENT)


def killing_events(context: ControllerContext, pod: Obj) -> None:
    """Killing for every running container of a pod deleted gracefully."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    for status in statuses:
        if "running" in (status.get("state") or {}):
            message = f"Stopping container {status['name']}"
            context.event(pod, "Normal", "Killing", message, COMPONENT)
