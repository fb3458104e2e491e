"""The node agent's part of PassthroughSupport: hide a prepared GPU's twin, show it again.

With the driver gate on, preparing a claim's ``gpu-N`` removes its VFIO twin from the
node's ResourceSlice (and a ``gpu-vfio-N`` its full GPU) until the claim is unprepared, as
the driver's kubelet plugin re-publishes after each prepare and unprepare. What each
claim hid is recorded beside its device spec (``<cdi>/passthrough_<claim uid>.json``), so a
restarted platform still shows the twins again. A twin still hidden for another claim's
prepared device passes to that claim instead of coming back. Built by the node agent.
"""

from __future__ import annotations

import json
from pathlib import Path

from allot.controllers.context import ControllerContext
from allot.driver import passthrough
from allot.driver.slices import DRIVER
from allot.types import Obj

MANAGER = DRIVER  # the driver's kubelet plugin writes its slices, as its driver name


class PassthroughTwins:
    """Which twins each prepared claim hides, and the slice writes that hide them."""

    def __init__(self, context: ControllerContext, directory: Path) -> None:
        self.context = context
        self.directory = directory

    def _path(self, claim_uid: str) -> Path:
        return self.directory / f"passthrough_{claim_uid}.json"

    def _records(self) -> dict[str, Obj]:
        records = {}
        for path in sorted(self.directory.glob("passthrough_*.json")):
            try:
                records[path.stem.removeprefix("passthrough_")] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
        return records

    def _write(self, claim_uid: str, record: Obj) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._path(claim_uid).write_text(json.dumps(record, indent=2))

    def _node_slices(self, node: str) -> list[Obj]:
        return [
            s
            for s in self.context.scan("ResourceSlice")
            if (s.get("spec") or {}).get("driver") == DRIVER
            and ((s.get("spec") or {}).get("pool") or {}).get("name") == node
        ]

    def prepared(self, claim: Obj, node: str, devices: list[str]) -> None:
        """The claim's ``devices`` on ``node`` are prepared: their twins leave the slice
        (once: a second pod of the claim finds it prepared)."""
        if self._path(str(claim["metadata"]["uid"])).exists():
            return
        slices = self._node_slices(node)
        twins = passthrough.twins_of(slices, devices)
        uid = str(claim["metadata"]["uid"])
        record = {
            "node": node,
            "gpus": passthrough.gpus_of(slices, devices),
            "hidden": [[s, d] for s, d in twins],
        }
        self._write(uid, record)
        self._edit(node, {s: {str(d["name"]) for n, d in twins if n == s} for s, _ in twins})

    def unprepared(self, claim_uid: str) -> None:
        """The claim is unprepared: the twins it hid come back, unless another prepared
        claim's device still needs them hidden (they pass to that claim)."""
        records = self._records()
        record = records.pop(claim_uid, None)
        self._path(claim_uid).unlink(missing_ok=True)
        if not record:
            return
        back: list[tuple[str, Obj]] = []
        for slice_name, device in record.get("hidden") or []:
            keeper = _keeper(records, record["node"], device)
            if keeper is None:
                back.append((slice_name, device))
            else:
                records[keeper].setdefault("hidden", []).append([slice_name, device])
                self._write(keeper, records[keeper])
        for slice_name in sorted({s for s, _ in back}):
            self._restore(slice_name, [d for s, d in back if s == slice_name])

    def _edit(self, node: str, hide: dict[str, set[str]]) -> None:
        for slice_ in self._node_slices(node):
            names = hide.get(str(slice_["metadata"]["name"]))
            if names:
                edited = {**slice_, "spec": passthrough.without(slice_["spec"], names)}
                self.context.update("ResourceSlice", edited, MANAGER)

    def _restore(self, slice_name: str, devices: list[Obj]) -> None:
        slice_ = self.context.get("ResourceSlice", "", slice_name)
        if slice_ is not None:  # gone with its node: nothing to show again
            edited = {**slice_, "spec": passthrough.restored(slice_["spec"], devices)}
            self.context.update("ResourceSlice", edited, MANAGER)


def _keeper(records: dict[str, Obj], node: str, twin: Obj) -> str | None:
    """A prepared claim on ``node`` holding the GPU ``twin`` is the twin of."""
    bus = passthrough.bus_id(twin)
    for uid, record in records.items():
        if record.get("node") == node and bus in (record.get("gpus") or []):
            return uid
    return None
