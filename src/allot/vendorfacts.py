"""What a DRA driver's devices mean, as data: the fact sheet each vendor package fills in.

:class:`DriverFacts` is written once per driver in that vendor's own package (the NVIDIA
driver in :mod:`allot.driver`, the AMD driver in :mod:`allot.amdgpu`) and collected by
:mod:`allot.vendors`, which the vendor-neutral core reads; :func:`node_slice` is the
ResourceSlice every vendor's kubelet plugin publishes alike. Pure; no vendor here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from allot.types import Obj

DRIVER_KEY = "allot.dev/driver"
"""Added to a prepared device's attribute strings (never published): whose device it is."""
Devices = Sequence[Mapping[str, str]]
"""Prepared devices: each its published string attributes (plus ``DRIVER_KEY``)."""


@dataclass(frozen=True)
class SmiTool:
    """The vendor's command-line tool a simulated container finds on its ``PATH``."""

    name: str  # the executable's name
    script: Callable[[Devices], str]  # the shell script that answers for these devices
    listing: Callable[[Devices], str]  # what the tool lists for them (the log shows it)
    command: str  # the listing command, as the log names it
    sharing: Callable[[Devices, Mapping[str, str]], str] = lambda devices, environment: ""
    """(devices, the container's environment) -> what the log adds about their sharing."""


@dataclass(frozen=True)
class DriverFacts:
    driver: str
    vendor: str  # the vendor's name, as its own documents write it
    whole_types: frozenset[str] = frozenset()
    partition_types: frozenset[str] = frozenset()
    other_types: frozenset[str] = frozenset()  # devices that are no GPU (a channel, a daemon)
    partition_word: str = ""  # what the vendor calls its partitions (a prefix: "X partitions")
    profile_attribute: str = ""  # names a partition's profile
    parent: Callable[[str, Mapping[str, str]], str] = lambda name, attributes: ""
    """(device name, string attributes) -> the name of the GPU a partition is cut from."""
    model_prefix: str = ""  # dropped from ``productName`` where room is short
    classes: tuple[Obj, ...] = ()  # the DeviceClasses the driver's chart installs
    cdi_spec: Callable[[str], str] = lambda uid: ""  # claim UID -> transient CDI spec name
    environment: Callable[[Devices], dict[str, str]] = lambda devices: {}
    prepared: Callable[[str, dict[str, str]], dict[str, str]] = lambda name, attrs: attrs
    """(device name, published strings) -> what the container sees once it is prepared."""
    smi: SmiTool | None = None
    gates: tuple[str, ...] = field(default=())  # the driver's feature gates

    def kind(self, device_type: str) -> str:
        """``whole``, ``partition``, ``other`` (not a GPU: a channel, a daemon)."""
        if device_type in self.partition_types:
            return "partition"
        if device_type in self.other_types:
            return "other"
        if device_type in self.whole_types or not (
            self.whole_types or self.partition_types or self.other_types
        ):
            return "whole"
        return "other"


def node_slice(driver: str, node: str, node_uid: str, prefix: str, count: int, spec: Obj) -> Obj:
    """A node-local ResourceSlice of ``driver``, as its kubelet plugin publishes it: owned by
    the Node, its pool the node's (``count`` slices), named from ``prefix``, ``spec`` added
    (its devices, counters)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "generateName": prefix,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid,
                 "controller": True}
            ],
        },
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"generation": 1, "name": node, "resourceSliceCount": count},
            **spec,
        },
    }  # fmt: skip
