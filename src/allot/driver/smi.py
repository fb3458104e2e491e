"""What ``nvidia-smi -L`` prints inside a container that was given some devices.

The process runtime puts a small ``nvidia-smi`` on a simulated workload's ``PATH`` so that
the usual first check (``nvidia-smi -L``) shows the claimed GPU or MIG device, as on a real
node. Whole GPUs are listed as ``GPU <i>: <product> (UUID: GPU-...)``; MIG devices under
their parent GPU as ``  MIG <profile> Device <j>: (UUID: MIG-...)``, numbered from 0 in
the container as the real tool does. Input: the devices' published attributes (plain
strings). Pure; called by ``allot.controllers.runtimes``.
"""

from __future__ import annotations


def list_gpus(devices: list[dict[str, str]]) -> str:
    """The ``nvidia-smi -L`` text for these devices, in the order given."""
    lines: list[str] = []
    parents: dict[str, int] = {}
    mig_count: dict[str, int] = {}
    for device in devices:
        product = device.get("productName", "NVIDIA GPU")
        if device.get("type") == "mig":
            parent = device.get("parentUUID", "")
            if parent not in parents:
                parents[parent] = len(parents)
                lines.append(f"GPU {parents[parent]}: {product} (UUID: {parent})")
            index = mig_count.get(parent, 0)
            mig_count[parent] = index + 1
            profile = device.get("profile", "")
            lines.append(f"  MIG {profile:<11} Device {index:>2}: (UUID: {device.get('uuid')})")
        else:
            uuid = device.get("uuid", "")
            parents.setdefault(uuid, len(parents))
            lines.append(f"GPU {parents[uuid]}: {product} (UUID: {uuid})")
    return "".join(line + "\n" for line in lines)


def shim_script(devices: list[dict[str, str]]) -> str:
    """A POSIX shell ``nvidia-smi`` that answers ``-L``/``--list-gpus`` for these devices."""
    listing = list_gpus(devices) or "No devices found.\n"
    return (
        "#!/bin/sh\n"
        "# allot: nvidia-smi for a simulated workload (only -L / --list-gpus)\n"
        'case "$1" in\n'
        "  -L|--list-gpus)\n"
        "    cat <<'ALLOT_EOF'\n"
        f"{listing}"
        "ALLOT_EOF\n"
        "    ;;\n"
        "  *)\n"
        '    echo "allot\'s simulated nvidia-smi answers only -L (--list-gpus)" >&2\n'
        "    exit 2\n"
        "    ;;\n"
        "esac\n"
    )
