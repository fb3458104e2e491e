"""What ``nvidia-smi -L`` and ``-q`` print inside a container that was given some devices.

The process runtime puts a small ``nvidia-smi`` on a simulated workload's ``PATH`` so that
the usual first check (``nvidia-smi -L``) shows the claimed GPU or MIG device, as on a real
node. Whole GPUs are listed as ``GPU <i>: <product> (UUID: GPU-...)``; MIG devices under
their parent GPU as ``  MIG <profile> Device <j>: (UUID: MIG-...)``, numbered from 0 in
the container as the real tool does. ``-q`` shows a subset of the real query: product,
UUID and compute mode (``Exclusive_Process`` under MPS, as the driver sets it), then what
the driver's sharing did to the simulated device, in sections marked as allot's: the
time-slice, the MPS daemon and its limits, the memory share of a device shared by
capacity. Input: the devices' published attributes (plain strings) with the sharing the
node agent adds (``allot.driver.sharing``). Pure; called by ``allot.controllers.runtimes``.
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


SHARING_FIELDS = (
    ("timeslice", "Compute Policy (allot, simulated)", "Timeslice"),
    ("mpsDaemon", "MPS (allot, simulated)", "Control Daemon"),
    ("activeThreadPercentage", "", "Active Thread Percentage"),
    ("pinnedMemoryLimit", "", "Pinned Device Memory Limit"),
    ("memoryShare", "Consumable Capacity (allot, simulated)", "Memory Share"),
)


def _field(name: str, value: str, indent: int = 4) -> str:
    return f"{' ' * indent}{name:<{42 - indent}}: {value}"


def query(devices: list[dict[str, str]]) -> str:
    """The ``nvidia-smi -q`` subset for these devices (see the module's docstring)."""
    lines = [
        "==============NVSMI LOG==============",
        "",
        _field("Attached GPUs", str(len(devices)), 0),
    ]
    for device in devices:
        bus = device.get("resource.kubernetes.io/pciBusID", "")
        lines.append(f"GPU {bus}".rstrip())
        lines.append(_field("Product Name", device.get("productName", "NVIDIA GPU")))
        if device.get("type") == "mig":
            lines.append(_field("MIG Device", f"{device.get('profile', '')} {device.get('uuid')}"))
            lines.append(_field("GPU UUID", device.get("parentUUID", "")))
        else:
            lines.append(_field("GPU UUID", device.get("uuid", "")))
        mode = "Exclusive_Process" if device.get("sharing") == "MPS" else "Default"
        lines.append(_field("Compute Mode", mode))
        for key, section, name in SHARING_FIELDS:
            if device.get(key):
                if section:
                    lines.append(f"    {section}")
                lines.append(_field(name, device[key], 8))
    return "".join(line + "\n" for line in lines)


def has_sharing(devices: list[dict[str, str]]) -> bool:
    return any(device.get(key) for device in devices for key, _, _ in SHARING_FIELDS)


def shim_script(devices: list[dict[str, str]]) -> str:
    """A POSIX shell ``nvidia-smi`` that answers ``-L``/``--list-gpus`` and ``-q``/``--query``
    for these devices."""
    listing = list_gpus(devices) or "No devices found.\n"
    return (
        "#!/bin/sh\n"
        "# allot: nvidia-smi for a simulated workload (only -L and -q)\n"
        'case "$1" in\n'
        "  -L|--list-gpus)\n"
        "    cat <<'ALLOT_EOF'\n"
        f"{listing}"
        "ALLOT_EOF\n"
        "    ;;\n"
        "  -q|--query)\n"
        "    cat <<'ALLOT_EOF'\n"
        f"{query(devices)}"
        "ALLOT_EOF\n"
        "    ;;\n"
        "  *)\n"
        '    echo "allot\'s simulated nvidia-smi answers only -L and -q" >&2\n'
        "    exit 2\n"
        "    ;;\n"
        "esac\n"
    )
