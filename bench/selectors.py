"""Selector checks per second: 50,000 devices against 10 class and claim selectors.

Devices are the NVIDIA fixtures' shapes (whole A100/H100, static and dynamic MIG
partitions) varied per copy: UUIDs, bus IDs, driver versions and memory differ, so no two
devices are identical. *Cold* starts with an empty program cache and fresh device views
(activation building included); *warm* re-checks the same views, which is what the
allocator does for devices whose slice did not change. Target (issue 2): warm, all 500,000
checks in under 1 s on one core.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import yaml

from allot.api import resource_v1 as resourceapi
from allot.cel import DeviceView, SelectorCompiler, cost, regex

DEVICES = 50_000
TARGET_WARM_SECONDS = 1.0
FIXTURES = Path(__file__).resolve().parent.parent / "examples" / "nvidia"
SELECTORS = [
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
    "device.driver == 'gpu.nvidia.com'",
    "device.driver == 'mig.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '1g.5gb'",
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"',
    'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.0.0"))',
    'has(device.attributes["gpu.nvidia.com"].profile) && '
    'device.attributes["gpu.nvidia.com"].profile.startsWith("1g")',
    'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.0.0"))',
    '"resource.kubernetes.io" in device.attributes && '
    'device.attributes["resource.kubernetes.io"].pcieRoot != "pci0000:ff"',
]


def _template_devices() -> list[tuple[str, dict[str, Any]]]:
    templates: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document and document.get("kind") == "ResourceSlice":
                driver = document["spec"]["driver"]
                templates += [(driver, d) for d in document["spec"].get("devices", [])]
    return templates


def _varied(template: dict[str, Any], index: int, rng: random.Random) -> dict[str, Any]:
    device: dict[str, Any] = json.loads(json.dumps(template))
    device["name"] = f"{template['name']}-{index}"
    attributes = device.setdefault("attributes", {})
    if "uuid" in attributes:
        attributes["uuid"] = {"string": f"GPU-{rng.getrandbits(128):032x}"}
    if "resource.kubernetes.io/pciBusID" in attributes:
        attributes["resource.kubernetes.io/pciBusID"] = {
            "string": f"0000:{rng.randrange(256):02x}:00.0"
        }
    attributes["driverVersion"] = {"version": f"{rng.choice([535, 550, 570, 580])}.{index % 200}.1"}
    memory = device.get("capacity", {}).get("memory")
    if memory is not None and rng.random() < 0.3:
        memory["value"] = f"{rng.choice([40, 80, 141])}Gi"
    return device


def build_devices(count: int, seed: int = 7) -> list[tuple[str, resourceapi.Device]]:
    rng = random.Random(seed)
    templates = _template_devices()
    devices = []
    for index in range(count):
        driver, template = templates[index % len(templates)]
        devices.append((driver, resourceapi.Device.model_validate(_varied(template, index, rng))))
    return devices


def check_all(compiler: SelectorCompiler, views: list[DeviceView]) -> int:
    selectors = [compiler.compile(s) for s in SELECTORS]
    matched = 0
    for view in views:
        for selector in selectors:
            matched += selector.matches(view)
    return matched


REGEX_PATTERN = "(a+)+$"
REGEX_SELECTOR = f'device.attributes["gpu.nvidia.com"].productName.find("{REGEX_PATTERN}") == ""'
"""Issue 28's worst selector: a backtracking engine doubles its time with each "a"."""
REGEX_TEXT_LENGTHS = (26, 27, 64)


def regex_worst_case() -> None:
    """The worst regex selector's time and Kubernetes cost per device (RE2: linear)."""
    compiler = SelectorCompiler()
    selector = compiler.compile(REGEX_SELECTOR)
    print(f"worst regex selector: {REGEX_SELECTOR}")
    for length in REGEX_TEXT_LENGTHS:
        text = "a" * (length - 1) + "!"
        device = resourceapi.Device.model_validate(
            {"name": "gpu-0", "attributes": {"productName": {"string": text}}}
        )
        view = DeviceView("gpu.nvidia.com", device)
        started = time.perf_counter()
        matched = selector.matches(view)
        elapsed = time.perf_counter() - started
        charged = regex.call_cost(length, len(REGEX_PATTERN))
        print(
            f"  productName of {length} characters: {elapsed * 1e6:,.0f} us, regex cost "
            f"{charged} of the {cost.PER_CALL_LIMIT:,} limit (matched: {matched})"
        )


def main() -> None:
    regex_worst_case()
    print(
        f"selector benchmark: {DEVICES:,} devices x {len(SELECTORS)} selectors "
        f"= {DEVICES * len(SELECTORS):,} checks",
        flush=True,
    )
    started = time.perf_counter()
    devices = build_devices(DEVICES)
    print(
        f"  built {len(devices):,} device models in {time.perf_counter() - started:.2f} s",
        flush=True,
    )
    compiler = SelectorCompiler()
    started = time.perf_counter()
    views = [DeviceView(driver, device) for driver, device in devices]
    cold_matched = check_all(compiler, views)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    warm_matched = check_all(compiler, views)
    warm = time.perf_counter() - started
    if warm_matched != cold_matched:
        raise SystemExit(f"warm and cold results differ: {warm_matched} != {cold_matched}")
    checks = DEVICES * len(SELECTORS)
    print(
        f"  cold (views + programs + evaluation): {cold:.2f} s, "
        f"{checks / cold:,.0f} checks/s, {cold / DEVICES * 1e6:.1f} us per device"
    )
    print(f"  warm (results reused):                 {warm:.3f} s, {checks / warm:,.0f} checks/s")
    print(f"  matches: {warm_matched:,} of {checks:,} checks")
    verdict = "meets" if warm < TARGET_WARM_SECONDS else "misses"
    print(
        f"  target: warm under {TARGET_WARM_SECONDS:.1f} s -> {verdict} it "
        f"(ratio {warm / TARGET_WARM_SECONDS:.2f} of the budget)"
    )


if __name__ == "__main__":
    main()
