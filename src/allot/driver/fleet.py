"""Fleet files: node pools the way a cloud describes them, expanded into nodes and GPUs.

```yaml
driver: {version: 580.95.5, cudaVersion: 13.0.0}   # optional
# consumableShares: memory   # in driver: the plugin's --consumable-shares (needs the
#                            # ConsumableShares gate): disabled, memory, unlimited or N
pools:
- name: a100-mig-1g5gb-pool
  nodes: 1
  gpu: A100-SXM4-40GB            # A100-SXM4-40GB, A100-SXM4-80GB, H100-80GB-HBM3, H200, L4
  gpusPerNode: 1
  mig: {profile: 1g.5gb}         # static MIG; or {dynamic: true} for DynamicMIG
  labels: {cloud.google.com/gke-nodepool: a100-mig-1g5gb-pool}
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
- name: gb200-rack-a             # multi-node NVLink: every node in one NVLink clique
  nodes: 2
  gpu: H200
  clique: 2f6d0c0e-6a1b-4c9e-9d3a-5b7e1f0a9c21.1   # nvidia.com/gpu.clique, as GFD writes it
- name: local                    # this machine's real GPUs, through NVML
  local: true
- name: cpu-pool                 # no 'gpu': nodes for ordinary pods, no driver slices
  nodes: 1
```

Without a file, ``allot up`` uses seed 000's two GPU pools (one whole A100, one A100 cut
into seven 1g.5gb slices), both tainted ``nvidia.com/gpu``, plus one untainted CPU node so
that ordinary pods (``kubectl run x --image=busybox``) have somewhere to run. Errors name
the pool and key. Pure apart from ``local`` pools, which
ask NVML through :mod:`allot.driver.nvml`. A fleet with a ``clique`` pool is an MNNVL
fleet: its GPU nodes also get the driver's ComputeDomain half
(:mod:`allot.driver.computedomain`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from allot.driver import catalog, nvml
from allot.driver.gates import valid_shares_option
from allot.driver.gpus import GpuInfo

POOL_KEYS = {"name", "nodes", "gpu", "gpusPerNode", "mig", "labels", "taints", "local", "clique"}
CLIQUE_LABEL = "nvidia.com/gpu.clique"
"""A node's NVLink clique, as GPU Feature Discovery labels it: <ClusterUUID>.<CliqueID>."""
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
MIG_KEYS = {"profile", "dynamic"}
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
DRIVER_KEYS = {"version", "cudaVersion", "consumableShares"}
DEFAULT_DRIVER = {"version": "580.95.5", "cudaVersion": "13.0.0"}
SEED_000_FLEET: dict[str, Any] = {
    "driver": {"version": "550.163.1", "cudaVersion": "12.4.0"},
    "pools": [
        {
            "name": "a100-whole-pool",
            "nodes": 1,
            "gpu": "A100-SXM4-40GB",
            "gpusPerNode": 1,
            "labels": {
                "cloud.google.com/gke-nodepool": "a100-whole-pool",
                "cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
            },
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        },
        {
            "name": "a100-mig-1g5gb-pool",
            "nodes": 1,
            "gpu": "A100-SXM4-40GB",
            "gpusPerNode": 1,
            "mig": {"profile": "1g.5gb"},
            "labels": {
                "cloud.google.com/gke-nodepool": "a100-mig-1g5gb-pool",
                "cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
                "cloud.google.com/gke-gpu-partition-size": "1g.5gb",
            },
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        },
        {
            "name": "cpu-pool",
            "nodes": 1,
            "labels": {"cloud.google.com/gke-nodepool": "cpu-pool"},
        },
    ],
}


class FleetError(ValueError):
    """The fleet file is wrong; the message names the pool and the key."""


@dataclass
class NodeSpec:
    name: str
    pool: str
    labels: dict[str, str]
    taints: list[dict[str, str]]
    gpus: list[GpuInfo]
    dynamic_mig: bool = False
    shares: str = "disabled"  # the driver's --consumable-shares


@dataclass
class Pool:
    name: str
    nodes: int
    gpu: str = ""
    gpus_per_node: int = 1
    mig_profile: str | None = None
    dynamic_mig: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)
    local: bool = False
    clique: str | None = None


@dataclass
class Fleet:
    pools: list[Pool]
    driver_version: str
    cuda_version: str
    raw: dict[str, Any]
    consumable_shares: str = "disabled"

    @property
    def compute_domains(self) -> bool:
        """Whether the fleet has NVLink cliques (so the ComputeDomain half is published)."""
        return any(p.clique for p in self.pools)

    def pool(self, name: str) -> Pool:
        found = next((p for p in self.pools if p.name == name), None)
        if found is None:
            raise FleetError(f"no pool {name!r} (pools: {', '.join(p.name for p in self.pools)})")
        return found

    def scaled(self, name: str, nodes: int) -> Fleet:
        if nodes < 0:
            raise FleetError("a pool cannot have fewer than 0 nodes")
        self.pool(name)
        raw = copy.deepcopy(self.raw)
        for pool in raw["pools"]:
            if pool["name"] == name:
                pool["nodes"] = nodes
        return parse_fleet(raw)


def parse_fleet(document: Any) -> Fleet:
    if not isinstance(document, dict) or not isinstance(document.get("pools"), list):
        raise FleetError("a fleet is an object with 'pools', a list of node pools")
    unknown = sorted(set(document) - {"pools", "driver", "apiVersion", "kind"})
    if unknown:
        raise FleetError(f"unknown fleet key(s): {', '.join(unknown)}")
    driver = {**DEFAULT_DRIVER, **(document.get("driver") or {})}
    unknown_driver = sorted(set(driver) - DRIVER_KEYS)
    if unknown_driver:
        raise FleetError(
            f"driver: unknown key(s): {', '.join(unknown_driver)} "
            f"(known: {', '.join(sorted(DRIVER_KEYS))})"
        )
    shares = str(driver.get("consumableShares", "disabled"))
    if not valid_shares_option(shares):
        raise FleetError(
            f"driver.consumableShares: {shares!r} is not disabled, memory, unlimited or a "
            "positive number"
        )
    pools = [_pool(index, raw) for index, raw in enumerate(document["pools"])]
    names = [p.name for p in pools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise FleetError(f"duplicate pool name(s): {', '.join(duplicates)}")
    version, cuda = str(driver["version"]), str(driver["cudaVersion"])
    return Fleet(pools, version, cuda, copy.deepcopy(document), shares)


def _pool(index: int, raw: Any) -> Pool:
    where = f"pools[{index}]"
    if not isinstance(raw, dict):
        raise FleetError(f"{where}: a pool must be an object")
    where = f"pools[{index}] ({raw.get('name', '?')})"
    unknown = sorted(set(raw) - POOL_KEYS)
    if unknown:
        raise FleetError(
            f"{where}: unknown key(s): {', '.join(unknown)} (known: {', '.join(sorted(POOL_KEYS))})"
        )
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise FleetError(f"{where}: 'name' is required")
    local = bool(raw.get("local"))
    nodes = raw.get("nodes", 1)
    if not isinstance(nodes, int) or nodes < 0:
        raise FleetError(f"{where}: 'nodes' must be a whole number >= 0")
    pool = Pool(
        name=name,
        nodes=1 if local else nodes,
        local=local,
        labels={str(k): str(v) for k, v in (raw.get("labels") or {}).items()},
        taints=_taints(where, raw.get("taints") or []),
        clique=_clique(where, raw.get("clique")),
    )
    if local:
        return pool
    if "gpu" not in raw:
        return _cpu_pool(where, raw, pool)
    model = catalog.lookup(str(raw.get("gpu", "")))
    if model is None:
        raise FleetError(
            f"{where}: unknown gpu {raw.get('gpu')!r} (known: {', '.join(sorted(catalog.MODELS))})"
        )
    pool.gpu = model.key
    count = raw.get("gpusPerNode", 1)
    if not isinstance(count, int) or not 1 <= count <= 16:
        raise FleetError(f"{where}: 'gpusPerNode' must be between 1 and 16")
    pool.gpus_per_node = count
    _mig(where, raw.get("mig"), pool, model)
    return pool


def _clique(where: str, clique: Any) -> str | None:
    """A pool's NVLink clique: the ``nvidia.com/gpu.clique`` label's value."""
    if clique is None:
        return None
    text = str(clique)
    if not text or len(text) > 63 or not LABEL_VALUE.match(text):
        raise FleetError(
            f"{where}: 'clique' must be a label value (63 characters at most, alphanumerics, "
            f"'-', '_' or '.'), as GPU Feature Discovery writes <ClusterUUID>.<CliqueID>"
        )
    return text


def _cpu_pool(where: str, raw: dict[str, Any], pool: Pool) -> Pool:
    """A pool without GPUs: its nodes get no NVIDIA labels and the driver publishes nothing."""
    extra = sorted({"gpusPerNode", "mig", "clique"} & set(raw))
    if extra:
        raise FleetError(f"{where}: {', '.join(extra)} needs 'gpu' (a pool without 'gpu' has none)")
    pool.gpus_per_node = 0
    return pool


def _mig(where: str, mig: Any, pool: Pool, model: catalog.GpuModel) -> None:
    if mig is None:
        return
    if not isinstance(mig, dict) or set(mig) - MIG_KEYS:
        raise FleetError(f"{where}: 'mig' takes 'profile' (static MIG) or 'dynamic: true'")
    if not model.profiles:
        raise FleetError(f"{where}: {model.key} does not support MIG")
    if mig.get("dynamic") and mig.get("profile"):
        raise FleetError(f"{where}: choose static ('profile') or dynamic MIG, not both")
    if mig.get("dynamic"):
        pool.dynamic_mig = True
        if pool.gpus_per_node > 8:
            raise FleetError(
                f"{where}: DynamicMIG supports at most 8 GPUs per node (8 counter sets per slice)"
            )
    elif mig.get("profile"):
        profile = str(mig["profile"])
        if profile not in {p.name for p in model.profiles}:
            raise FleetError(
                f"{where}: {model.key} has no MIG profile {profile!r} "
                f"(profiles: {', '.join(p.name for p in model.profiles)})"
            )
        pool.mig_profile = profile


def _taints(where: str, taints: Any) -> list[dict[str, str]]:
    if not isinstance(taints, list):
        raise FleetError(f"{where}: 'taints' must be a list")
    result = []
    for taint in taints:
        if (
            not isinstance(taint, dict)
            or not taint.get("key")
            or taint.get("effect") not in TAINT_EFFECTS
        ):
            raise FleetError(
                f"{where}: each taint needs 'key' and 'effect' (one of {', '.join(TAINT_EFFECTS)})"
            )
        result.append({k: str(v) for k, v in taint.items() if k in ("key", "value", "effect")})
    return result


def expand(fleet: Fleet, local_gpus: Callable[[], list[GpuInfo]] | None = None) -> list[NodeSpec]:
    """Every node of the fleet with its GPUs."""
    nodes = []
    for pool in fleet.pools:
        for index in range(pool.nodes):
            name = f"{pool.name}-{index}"
            labels = {"kubernetes.io/hostname": name, "allot.dev/pool": pool.name}
            if pool.local:
                gpus = (local_gpus or _local_gpus)()
            elif not pool.gpu:
                gpus = []
            else:
                gpus = catalog.simulated_gpus(
                    catalog.MODELS[pool.gpu],
                    name,
                    pool.gpus_per_node,
                    driver_version=fleet.driver_version,
                    cuda_version=fleet.cuda_version,
                    mig_profile=pool.mig_profile,
                )
            if gpus:
                labels["nvidia.com/gpu.present"] = "true"
            if pool.clique:
                labels[CLIQUE_LABEL] = pool.clique
            labels.update(pool.labels)
            nodes.append(
                NodeSpec(
                    name,
                    pool.name,
                    labels,
                    pool.taints,
                    gpus,
                    pool.dynamic_mig,
                    fleet.consumable_shares,
                )
            )
    return nodes


def _local_gpus() -> list[GpuInfo]:
    return nvml.gpus_from_probe(nvml.probe_document())
