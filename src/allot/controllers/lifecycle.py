"""What the kubelet tells about a container's life: its events and its identifiers.

``kubectl describe pod`` shows the kubelet's events in order: ``Pulling`` and ``Pulled``
for an image the node does not hold yet (only ``Pulled``, "already present", for one it
does, unless the pull policy is ``Always``), ``Created`` and ``Started`` for each
container, ``Failed`` (a Warning) for a container whose ConfigMap or Secret is missing,
``Killing`` when a pod is deleted gracefully; ``kubectl get pod -o yaml`` shows
each container's ``containerID`` and ``imageID``. allot runs no images (the simulated
runtime runs nothing, the process runtime runs local commands), so the pull is simulated
and said to be; the identifiers have the shapes containerd gives them (``containerd://<64
hex>``, ``<image>@sha256:<64 hex>``), derived from the pod's uid, the container and its
restart count, and the image's name, so they are stable across restarts of the platform.
The texts follow the kubelet's (``pkg/kubelet/kuberuntime``, ``pkg/kubelet/images``). Used
by the node agent.
"""

from __future__ import annotations

import hashlib

from allot.controllers.context import ControllerContext, EventOrigin
from allot.types import Obj

COMPONENT = "kubelet"
SIMULATED_PULL = "(simulated: allot runs no images)"
_PRESENT = 'Container image "{image}" already present on machine and can be accessed by the pod'


def container_origin(pod: Obj, container: str) -> EventOrigin:
    """Where the kubelet's event about one of a pod's containers comes from: that
    container (``spec.containers{NAME}``, or ``spec.initContainers{NAME}``) on the pod's
    node, so the same event about two containers stays two Events."""
    spec = pod.get("spec") or {}
    inits = {c.get("name") for c in spec.get("initContainers") or []}
    field = "initContainers" if container in inits else "containers"
    return EventOrigin(f"spec.{field}{{{container}}}", str(spec.get("nodeName") or ""))


def pod_origin(pod: Obj) -> EventOrigin:
    """The kubelet's event about a whole pod: from the pod's node."""
    return EventOrigin(host=str((pod.get("spec") or {}).get("nodeName") or ""))


def container_id(pod: Obj, container: str, restarts: int = 0) -> str:
    """The runtime's id of one run of a container, as containerd writes it."""
    uid = pod["metadata"].get("uid") or pod["metadata"]["name"]
    digest = hashlib.sha256(f"{uid}/{container}/{restarts}".encode()).hexdigest()
    return f"containerd://{digest}"


def kubelet_pod_name(pod: Obj) -> str:
    """A pod as the kubelet names it in messages (``format.Pod``):
    ``<name>_<namespace>(<uid>)``."""
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('name', '')}_{metadata.get('namespace', '')}({metadata.get('uid', '')})"


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


class NodeImages:
    """The images each node holds, as a kubelet's image store would: an image is pulled
    on a node once, later pods there find it present (unless their policy is
    ``Always``). Kept in memory: after a restart of the platform a node pulls again."""

    def __init__(self) -> None:
        self._held: dict[str, set[str]] = {}

    def needs_pull(self, node: str, image: str, policy: str) -> bool:
        """Whether the kubelet would pull: always for ``Always``, never for ``Never`` (allot
        has every image), when absent for ``IfNotPresent``."""
        if policy == "Never":
            return False
        return policy == "Always" or image not in self._held.get(node, set())

    def hold(self, node: str, image: str) -> None:
        self._held.setdefault(node, set()).add(image)


def pull_policy(container: Obj) -> str:
    """The container's ``imagePullPolicy``, or the one upstream defaults it to: ``Always``
    for an image tagged ``latest`` or not tagged at all, ``IfNotPresent`` otherwise."""
    policy = container.get("imagePullPolicy")
    if policy:
        return str(policy)
    image = str(container.get("image") or "")
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def started_events(context: ControllerContext, pod: Obj, images: NodeImages) -> None:
    """For every (app) container of a starting pod: ``Pulling`` and ``Pulled``, or only
    ``Pulled`` when the node holds the image already; then ``Created`` and ``Started``."""
    for spec in pod["spec"].get("containers") or []:
        container_started_events(context, pod, images, spec)


def container_started_events(
    context: ControllerContext, pod: Obj, images: NodeImages, spec: Obj
) -> None:
    """The events of one container's start: also of each restart after its back-off,
    as the kubelet records them again (the image pulled again where its policy says so)."""
    _pulled(context, pod, images, spec)
    origin = container_origin(pod, spec["name"])
    context.event(pod, "Normal", "Created", "Container created", COMPONENT, source=origin)
    context.event(pod, "Normal", "Started", "Container started", COMPONENT, source=origin)


def config_failed_events(
    context: ControllerContext, pod: Obj, images: NodeImages, failures: dict[str, str]
) -> None:
    """For every container whose configuration cannot be made (a missing ConfigMap or
    Secret): its image's events, then the Warning ``Failed`` the kubelet records when
    ``generateContainerConfig`` fails (``Error: <why>``)."""
    spec_ = pod["spec"]
    for spec in [*(spec_.get("initContainers") or []), *(spec_.get("containers") or [])]:
        if spec["name"] in failures:
            _pulled(context, pod, images, spec)
            message = f"Error: {failures[spec['name']]}"
            origin = container_origin(pod, spec["name"])
            context.event(pod, "Warning", "Failed", message, COMPONENT, source=origin)


def _pulled(context: ControllerContext, pod: Obj, images: NodeImages, spec: Obj) -> None:
    node = str(pod["spec"].get("nodeName") or "")
    image = str(spec.get("image", ""))
    origin = container_origin(pod, spec["name"])
    if images.needs_pull(node, image, pull_policy(spec)):
        pulling = f'Pulling image "{image}"'
        context.event(pod, "Normal", "Pulling", pulling, COMPONENT, source=origin)
        context.event(
            pod,
            "Normal",
            "Pulled",
            f'Successfully pulled image "{image}" in 0s (0s including waiting). Image '
            f"size: 0 bytes. {SIMULATED_PULL}",
            COMPONENT,
            source=origin,
        )
        images.hold(node, image)
    else:
        present = _PRESENT.format(image=image)
        context.event(pod, "Normal", "Pulled", present, COMPONENT, source=origin)


def killing_events(context: ControllerContext, pod: Obj) -> None:
    """Killing for every running container of a pod deleted gracefully: the app
    containers, then the init containers (sidecars), as the kubelet stops them."""
    status_ = pod.get("status") or {}
    statuses = [
        *(status_.get("containerStatuses") or []),
        *(status_.get("initContainerStatuses") or []),
    ]
    for status in statuses:
        if "running" in (status.get("state") or {}):
            message = f"Stopping container {status['name']}"
            origin = container_origin(pod, status["name"])
            context.event(pod, "Normal", "Killing", message, COMPONENT, source=origin)
