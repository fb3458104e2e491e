"""Creating and deleting a controller's pods as upstream's ``RealPodControl`` does, with its
Events, and the slow start of a batch of creations (``slowStartBatch``).

A created pod is reported on its owner as ``Normal SuccessfulCreate`` ``Created pod:
<name>``, a refusal as ``Warning FailedCreate`` ``Error creating: <the API error>``;
deletions as ``SuccessfulDelete``/``FailedDelete``. Used by the ReplicaSet (and
ReplicationController) and daemon set controllers.
"""

from __future__ import annotations

from collections.abc import Callable

from allot.controllers.context import ControllerContext
from allot.statuses import to_status
from allot.types import Obj


def create_pod(context: ControllerContext, owner: Obj, pod: Obj, manager: str) -> str | None:
    """Create ``pod`` for ``owner``; the API's message when it was refused."""
    try:
        created = context.create("Pod", pod, manager)
    except Exception as err:  # every refusal is reported, as upstream's pod control
        message = to_status(err).message or str(err)
        context.event(owner, "Warning", "FailedCreate", f"Error creating: {message}", manager)
        return message
    name = created["metadata"]["name"]
    context.event(owner, "Normal", "SuccessfulCreate", f"Created pod: {name}", manager)
    return None


def delete_pod(context: ControllerContext, owner: Obj, pod: Obj, manager: str) -> str | None:
    """Delete ``owner``'s ``pod``; the API's message when it was refused."""
    name = pod["metadata"]["name"]
    try:
        context.delete("Pod", pod["metadata"].get("namespace") or "", name)
    except Exception as err:
        message = to_status(err).message or str(err)
        context.event(owner, "Warning", "FailedDelete", f"Error deleting: {message}", manager)
        return message
    context.event(owner, "Normal", "SuccessfulDelete", f"Deleted pod: {name}", manager)
    return None


def slow_start(count: int, create: Callable[[int], str | None]) -> str | None:
    """Call ``create(i)`` for ``i`` in ``range(count)`` in batches of 1, 2, 4, ..., stopping
    after the first batch with a refusal; that refusal's message, or None."""
    batch, done = 1, 0
    while done < count:
        size = min(batch, count - done)
        errors = [e for e in (create(done + i) for i in range(size)) if e]
        if errors:
            return errors[0]
        done += size
        batch *= 2
    return None
