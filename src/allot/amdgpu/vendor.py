"""The AMD GPU DRA driver's fact sheet for allot's vendor-neutral core (:mod:`allot.vendors`).

Driver ``gpu.amd.com`` publishes whole GPUs (``type: amdgpu``) and compute partitions
(``type: amdgpu-partition``, profile in ``partitionProfile``, parent GPU by
``parentPciAddr``). Its CDI specs are ``k8s.gpu.amd.com-gpu_<claim uid>``; a container
gets ``DRA_RESOURCE_DRIVER_NAME=gpu.amd.com`` and its ``/dev/kfd`` and ``/dev/dri`` nodes,
no visibility variable. In allot's simulated runtime an ``amd-smi`` answering ``list``
shows the container's own devices, as in the driver's demo (GPU index, BDF, UUID,
partition). Read by :mod:`allot.vendors`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from allot.amdgpu.slices import DRIVER, PARTITION, WHOLE, device_classes
from allot.vendorfacts import DriverFacts, SmiTool

Devices = Sequence[Mapping[str, str]]


def list_devices(devices: Devices) -> str:
    """What ``amd-smi list`` prints for these devices, numbered from 0 in the container."""
    lines = []
    for index, found in enumerate(devices):
        bus = found.get("pciAddr") or found.get("parentPciAddr", "")
        partition = 0
        if found.get("type") == PARTITION:
            earlier = devices[:index]
            partition = sum(1 for d in earlier if d.get("parentPciAddr") == bus)
        lines += [
            f"GPU: {index}",
            f"    BDF: {bus}",
            f"    UUID: {found.get('uuid', '')}",
            f"    PARTITION_ID: {partition}",
            "",
        ]
    return "".join(line + "\n" for line in lines)


def shim_script(devices: Devices) -> str:
    """A POSIX shell ``amd-smi`` that answers ``list`` for these devices."""
    listing = list_devices(devices) or "No GPUs found.\n"
    return (
        "#!/bin/sh\n"
        "# allot: amd-smi for a simulated workload (only list)\n"
        'case "$1" in\n'
        "  list)\n"
        "    cat <<'ALLOT_EOF'\n"
        f"{listing}"
        "ALLOT_EOF\n"
        "    ;;\n"
        "  *)\n"
        '    echo "allot\'s simulated amd-smi answers only list" >&2\n'
        "    exit 2\n"
        "    ;;\n"
        "esac\n"
    )


GPU = DriverFacts(
    driver=DRIVER,
    vendor="AMD",
    whole_types=frozenset({WHOLE}),
    partition_types=frozenset({PARTITION}),
    partition_word="compute",
    profile_attribute="partitionProfile",
    parent=lambda name, attributes: attributes.get("parentPciAddr", ""),
    model_prefix="AMD_",
    classes=tuple(device_classes()),
    cdi_spec=lambda uid: f"k8s.{DRIVER}-gpu_{uid}",
    environment=lambda devices: {"DRA_RESOURCE_DRIVER_NAME": DRIVER},
    smi=SmiTool("amd-smi", shim_script, list_devices, "amd-smi list"),
)
FACTS: tuple[DriverFacts, ...] = (GPU,)
