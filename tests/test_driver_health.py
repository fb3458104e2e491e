"""The driver's health check: the cases of tests/scenarios/driver-health.yaml.

Taint cases run health events through the slice edit the driver makes; NVML cases run a
fake NVML module (the calls and constants of nvidia-ml-py the loop uses, answering a
scripted sequence of waits) through :class:`HealthMonitor` and :func:`watch`, so the
decisions are tested without a GPU (the live loop is the same code on pynvml).
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from allot.driver import catalog
from allot.driver.health import HealthEvent, taint_for, tainted, xids_to_skip
from allot.driver.nvmlhealth import FULL_GPU, HealthMonitor, placements, watch

SCENARIOS: dict[str, list[dict[str, Any]]] = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "driver-health.yaml").read_text()
)


def _event(raw: dict[str, Any]) -> HealthEvent:
    return HealthEvent(raw["kind"], tuple(raw["devices"]), raw.get("xid"))


def _texts(device: dict[str, Any]) -> list[str]:
    return [f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in device.get("taints") or []]


@pytest.mark.parametrize("case", SCENARIOS["taints"], ids=[c["name"] for c in SCENARIOS["taints"]])
def test_health_events_become_the_drivers_taints(case: dict[str, Any]) -> None:
    spec: dict[str, Any] = {"devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}
    skipped = xids_to_skip(case.get("ignore", ""))
    republished = []
    for raw in case["events"]:
        event = _event(raw)
        edited = tainted(spec, set(event.devices), taint_for(event, skipped))
        republished.append(edited is not None)
        spec = edited or spec
    assert republished == case["republished"]
    found = {d["name"]: _texts(d) for d in spec["devices"] if d.get("taints")}
    assert found == case["taints"]


class FakeNvmlError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value


ERRORS = {"Timeout": 10, "GpuIsLost": 15, "Unknown": 999}
TYPES = {"XidCriticalError": 0x8, "SingleBitEccError": 0x1, "DoubleBitEccError": 0x2}


class FakeNvml:
    """nvidia-ml-py's event calls, answering the scripted waits; records what is called."""

    NVMLError = FakeNvmlError
    NVML_ERROR_GPU_IS_LOST = ERRORS["GpuIsLost"]
    nvmlEventTypeXidCriticalError = TYPES["XidCriticalError"]  # noqa: N815
    nvmlEventTypeSingleBitEccError = TYPES["SingleBitEccError"]  # noqa: N815
    nvmlEventTypeDoubleBitEccError = TYPES["DoubleBitEccError"]  # noqa: N815

    def __init__(self, waits: list[dict[str, Any]], unregistered: list[str], stop: Any) -> None:
        self.waits = list(waits)
        self.unregistered = set(unregistered)
        self.stop = stop
        self.calls: list[str] = []

    def nvmlInit(self) -> None:  # noqa: N802 (pynvml's names)
        self.calls.append("init")

    def nvmlShutdown(self) -> None:  # noqa: N802 (pynvml's names)
        self.calls.append("shutdown")

    def nvmlEventSetCreate(self) -> str:  # noqa: N802 (pynvml's names)
        return "set"

    def nvmlEventSetFree(self, event_set: str) -> None:  # noqa: N802 (pynvml's names)
        self.calls.append(f"free {event_set}")

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:  # noqa: N802 (pynvml's names)
        return uuid

    def nvmlDeviceGetSupportedEventTypes(self, handle: str) -> int:  # noqa: N802 (pynvml's names)
        if handle in self.unregistered:
            raise FakeNvmlError(3)  # Not Supported
        return 0xF

    def nvmlDeviceRegisterEvents(self, handle: str, mask: int, event_set: str) -> None:  # noqa: N802 (pynvml's names)
        self.calls.append(f"register {handle} {mask:#x}")

    def nvmlDeviceGetUUID(self, handle: str) -> bytes:  # noqa: N802 (pynvml's names)
        if handle == "unreadable":
            raise FakeNvmlError(999)
        return handle.encode()

    def nvmlEventSetWait_v2(self, event_set: str, timeout_ms: int) -> Any:  # noqa: N802 (pynvml's names)
        if not self.waits:
            self.stop.set()
            raise FakeNvmlError(ERRORS["Timeout"])
        wait = self.waits.pop(0)
        if "error" in wait:
            raise FakeNvmlError(ERRORS[wait["error"]])
        return SimpleNamespace(
            device=wait["uuid"],
            eventType=TYPES[wait.get("type", "XidCriticalError")],
            eventData=wait.get("xid", 0),
            gpuInstanceId=wait.get("gi", FULL_GPU),
            computeInstanceId=wait.get("ci", FULL_GPU),
        )


def _devices() -> dict[tuple[str, int, int], str]:
    model = catalog.MODELS["A100-SXM4-40GB"]
    whole, mig = (
        catalog.simulated_gpus(model, "n", 2, driver_version="1.0.0", cuda_version="1.0.0"),
        catalog.simulated_gpus(
            model, "n", 2, driver_version="1.0.0", cuda_version="1.0.0", mig_profile="1g.5gb"
        ),
    )
    gpu_a, gpu_b = whole[0], mig[1]
    gpu_a.uuid, gpu_b.uuid = "GPU-a", "GPU-b"
    gpu_b.mig_instances = gpu_b.mig_instances[:1]
    ids = {gpu_b.mig_instances[0].uuid: (1, 0)}
    return placements([gpu_a, gpu_b], ids.get)


@pytest.mark.parametrize("case", SCENARIOS["nvml"], ids=[c["name"] for c in SCENARIOS["nvml"]])
def test_nvml_events_become_health_events(case: dict[str, Any]) -> None:
    stop = threading.Event()
    nvml = FakeNvml(case["waits"], case.get("unregistered", []), stop)
    published: list[HealthEvent] = []
    watch(HealthMonitor(nvml, _devices()), published.append, stop, timeout_ms=1)
    assert published == [_event(e) for e in case["events"]]
    registered = [c for c in nvml.calls if c.startswith("register")]
    wanted = {"GPU-a", "GPU-b"} - set(case.get("unregistered", []))
    assert registered == [f"register {uuid} 0xb" for uuid in sorted(wanted)]
    assert nvml.calls[0] == "init"
    assert nvml.calls[-2:] == ["free set", "shutdown"]


def test_placements_name_full_gpus_and_static_mig_devices_as_published() -> None:
    assert _devices() == {
        ("GPU-a", FULL_GPU, FULL_GPU): "gpu-0",
        ("GPU-b", 1, 0): "gpu-1-mig-1g5gb-19-0",
    }
