"""Nothing in allot's core names a GPU vendor: vendor facts live in the vendors' packages.

import-linter cannot forbid a word, so this reads the source: outside the vendor packages
(``allot.driver``, NVIDIA's, and ``allot.amdgpu``, AMD's), no identifier and no string
literal that is not a docstring may name NVIDIA, NVML, CUDA, MIG, AMD or ROCm. Docstrings
and comments may, as prose explaining what a vendor does. The seed-000 demo script
(``allot.demo``) narrates NVIDIA's fleet of that seed and is not part of the core; the
registry (``allot.vendors``) imports the vendor packages by name, and names nothing else.
Also: the core reads devices through :mod:`allot.vendors` alike for every driver it knows.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from allot import vendors

SOURCE = Path(__file__).resolve().parents[1] / "src" / "allot"
VENDOR_PACKAGES = {"driver", "amdgpu"}
NOT_CORE = {"demo.py", "vendors.py"}
WORDS = re.compile(
    r"nvidia|nvml|cuda|(?<![a-z])mig(?![a-z])|amd\.com|amdgpu|(?<![a-z])rocm"
    r"|(?<![a-z])amd(?![a-z0-9])",
    re.IGNORECASE,
)


TOKENS = {tokenize.STRING, tokenize.NAME, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
"""Identifiers and strings (Python 3.12 splits f-strings into parts)."""


def _docstring_lines(tree: ast.Module) -> set[int]:
    """The first lines of docstrings: of modules, classes, functions and attributes."""
    return {
        node.value.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def vendor_names(path: Path) -> list[str]:
    text = path.read_text()
    docstrings = _docstring_lines(ast.parse(text))
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in TOKENS:
            continue
        if token.type == tokenize.STRING and token.start[0] in docstrings:
            continue
        if WORDS.search(token.string):
            found.append(f"{path.relative_to(SOURCE)}:{token.start[0]}: {token.string[:80]}")
    return found


def core_modules() -> list[Path]:
    return [
        path
        for path in sorted(SOURCE.rglob("*.py"))
        if path.relative_to(SOURCE).parts[0] not in VENDOR_PACKAGES | NOT_CORE
    ]


def test_the_core_names_no_vendor() -> None:
    found = [line for path in core_modules() for line in vendor_names(path)]
    assert found == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('x = "gpu.nvidia.com"\n', 1),
        ("import allot.driver.nvml\n", 1),
        ('"""The NVIDIA driver, in prose."""\nplatform = "linux/amd64"\n', 0),
        ("def f() -> None:\n    '''MIG in a docstring.'''\n    created_mig_uuid = 1\n", 1),
        ('env = {"CUDA_VISIBLE_DEVICES": "1"}\nprocMount = "Default"\n', 1),
    ],
)
def test_the_check_finds_vendor_names_in_code_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, found: int
) -> None:
    monkeypatch.setattr("tests.test_vendor_neutral.SOURCE", tmp_path)
    module = tmp_path / "module.py"
    module.write_text(source)
    assert len(vendor_names(module)) == found


def test_every_gpu_driver_says_what_its_devices_are() -> None:
    drivers = vendors.gpu_drivers()
    assert drivers
    for facts in drivers:
        assert facts.vendor
        assert facts.whole_types
        assert facts.classes, facts.driver
        assert not facts.whole_types & facts.partition_types
        for device_type in facts.partition_types:
            assert facts.kind(device_type) == "partition"
            assert facts.profile_attribute
    unknown = vendors.facts_for("gpu.example.com")
    assert unknown.kind("anything") == "whole"
    assert vendors.parent_of("gpu.example.com", "gpu-0-mig-1g5gb-19-0", {"type": "mig"}) == ""


def test_class_names_that_look_like_drivers_map_to_their_driver_and_type() -> None:
    types = vendors.class_types()
    for name, (driver, device_type) in types.items():
        assert vendors.facts_for(driver).kind(device_type) in ("whole", "partition", "other")
        assert name in {c["metadata"]["name"] for c in vendors.device_classes()}


def test_a_passthrough_device_is_no_cuda_device() -> None:
    gpu = vendors.prepared("gpu.nvidia.com", "gpu-0", {"type": "gpu", "uuid": "GPU-1"})
    vfio = vendors.prepared("gpu.nvidia.com", "gpu-vfio-1", {"type": "vfio", "uuid": "u-2"})
    assert vendors.container_environment([gpu, vfio]) == {
        "CUDA_VISIBLE_DEVICES": "GPU-1",
        "NVIDIA_VISIBLE_DEVICES": "GPU-1",
    }
    assert vendors.container_environment([vfio]) == {"NVIDIA_VISIBLE_DEVICES": "void"}
    assert vendors.container_environment([]) == {}


def test_a_compute_domain_channel_and_daemon_are_no_gpus() -> None:
    facts = vendors.facts_for("compute-domain.nvidia.com")
    assert facts.kind("channel") == facts.kind("daemon") == "other"
    assert facts not in vendors.gpu_drivers()
    assert vendors.class_types()["compute-domain-daemon.nvidia.com"] == (
        "compute-domain.nvidia.com",
        "daemon",
    )
