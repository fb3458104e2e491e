"""Allocation agreement with kube-scheduler (issue 29, item 5): the same seeded workloads
scheduled by the real kube-scheduler 1.36 and by allot's embedded scheduler, claim by claim.

The rule both follow, and so what is compared: **each trial is one node, and every pod of
a trial is pinned to it** (``nodeSelector`` on its ``allot.dev/pool`` label). Which node
a pod goes to is then decided by the node filters alone, in both; kube-scheduler's node
scoring (which spreads pods, and breaks ties at random) and allot's placement policy
(``--placement first-fit`` or ``pack``, which fill nodes in a fixed order) never meet, so
what is compared is the allocator's choice of devices within a node, which upstream's
structured allocator makes deterministically (pools by name, slices by name, devices in
slice order, the first combination that fits) and allot's port claims to make the same
way. Pods of one trial are created one at a time, each after the previous one was bound
or refused, so both schedulers see the same allocated state for each.

A trial (:func:`trial`, seeded: the same seed gives the same data) is a node of a random
GPU model and count, whole, static MIG or DynamicMIG (shared counters), sometimes with a
node taint and device taints, and three to six pods whose claims come from templates or
are shared ResourceClaims, asking for whole GPUs, MIG profiles, ``firstAvailable``
alternatives, ``allocationMode: All``, ``adminAccess``, with ``matchAttribute`` and
``distinctAttribute`` constraints and tolerations of the device taints. What is compared,
after every pod of every trial has been decided: per claim, allocated or not and the
results (request, driver, pool, device, adminAccess, in order); per pod, bound or not,
and where both refuse, the reasons of the scheduler's message for the trial's node
(``0/N nodes are available: 1 cannot allocate all claims, ...``; the other trials' nodes,
refused by the pin, and kube-scheduler's ``preemption:`` tail are left out). Printed as
``N/M`` for claims and for pods, with what the claims allocated by both use, the reasons
of the pods refused by both, and every difference. Seeds: ``ALLOT_AGREEMENT_SEEDS``
(default 60 trials, about two minutes on a 2-core machine); ``--dump`` prints the trials.
The engines run one after the other, each with every trial on it: the real one from
``make kube``'s binaries (without them this benchmark says so and stops; etcd without
fsync), the embedded one as ``allot up`` builds it, in this process. Run by ``make
bench``; the fixed seed set of ``tests/e2e/test_allocation_agreement.py`` must agree fully.
"""

from __future__ import annotations

import json
import logging
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from allot.apiserver.server import ServerThread
from allot.driver import catalog
from allot.driver.fleet import expand, parse_fleet
from allot.driver.publisher import device_classes, node_object
from allot.driver.slices import DRIVER, node_slices
from allot.kube.client import Client
from allot.kubeengine.binaries import bin_dir, missing_or_wrong
from allot.kubeengine.cluster import start
from allot.kubeengine.components import Options
from allot.platform import build
from allot.types import Obj

NAMESPACE = "agreement"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"
POOL_LABEL = "allot.dev/pool"
NODE_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
DEVICE_TAINT_KEY = "example.com/maintenance"
PIN_REASON = "didn't match Pod's node affinity/selector"
DECIDE_SECONDS = float(os.environ.get("ALLOT_AGREEMENT_DECIDE_SECONDS", "60"))
SETTLE_SECONDS = 3.0
MODELS = ("A100-SXM4-40GB", "A100-SXM4-80GB", "H100-80GB-HBM3", "H200", "L4")
GPU_CLASS, MIG_CLASS = "gpu.nvidia.com", "mig.nvidia.com"


# ------------------------------------------------------------------ the trials (data)
def trial(seed: int) -> Obj:
    """The trial of ``seed``: its node pool, tainted devices, shared claims and pods."""
    rng = random.Random(seed)
    name = f"t{seed:03d}"
    model = catalog.MODELS[rng.choice(MODELS)]
    pool: Obj = {"name": name, "nodes": 1, "gpu": model.key, "gpusPerNode": rng.randint(2, 4)}
    mode = rng.choice(("whole", "static", "dynamic")) if model.profiles else "whole"
    static = rng.choice([p.name for p in model.profiles]) if mode == "static" else None
    if static:
        pool["mig"] = {"profile": static}
    elif mode == "dynamic":
        pool["mig"] = {"dynamic": True}
    if rng.random() < 0.4:
        pool["taints"] = [dict(NODE_TAINT)]
    devices = _device_names(pool)
    tainted = {
        device: rng.choice(("NoSchedule", "NoExecute")) for device in devices if rng.random() < 0.1
    }
    shapes = _Shapes(rng, model, mode, set(tainted.values()), static)
    shared = [
        {"name": f"{name}-shared-{i}", "spec": shapes.claim()} for i in range(rng.randint(0, 2))
    ]
    pods = []
    for index in range(rng.randint(3, 6)):
        claims: list[Obj] = []
        for _ in range(1 if rng.random() < 0.75 else 2):
            unused = [c["name"] for c in shared if {"shared": c["name"]} not in claims]
            if unused and rng.random() < 0.3:  # never one claim twice: see _decided
                claims.append({"shared": rng.choice(unused)})
            else:
                claims.append({"template": shapes.claim()})
        tolerates = "taints" not in pool or rng.random() < 0.9
        pods.append({"name": f"{name}-p{index}", "claims": claims, "toleratesNode": tolerates})
    return {"name": name, "pool": pool, "mode": mode, "taintedDevices": tainted,
            "shared": shared, "pods": pods}  # fmt: skip


def _device_names(pool: Obj) -> list[str]:
    (spec,) = expand(parse_fleet({"pools": [pool]}))
    slices = node_slices(spec.name, "uid", spec.gpus, dynamic_mig=spec.dynamic_mig)
    return [str(d["name"]) for s in slices for d in s["spec"].get("devices") or []]


@dataclass
class _Shapes:
    """Random claim specs that fit the trial's node sometimes, and sometimes not."""

    rng: random.Random
    model: catalog.GpuModel
    mode: str
    effects: set[str]
    """The effects of the node's device taints."""
    static: str | None
    """The profile of a static MIG node, which most MIG requests ask for."""

    def claim(self) -> Obj:
        rng = self.rng
        requests = [self.request("r0")]
        if rng.random() < 0.25:
            requests.append(self.request("r1"))
        devices: Obj = {"requests": requests}
        constraint = self.constraint(requests)
        if constraint is not None:
            devices["constraints"] = [constraint]
        return {"devices": devices}

    def request(self, name: str) -> Obj:
        rng = self.rng
        mig = self.mode != "whole" and rng.random() < 0.7
        roll = rng.random()
        if roll < 0.2 and self.mode != "whole":
            subrequests = [
                {"name": "big", **self.pick(MIG_CLASS, rng.choice(self.profiles()[-3:]))},
                {"name": "small", **self.pick(MIG_CLASS, rng.choice(self.profiles()[:3]))},
            ]
            if rng.random() < 0.4:
                subrequests[0] = {"name": "whole", **self.pick(GPU_CLASS, None)}
            return {"name": name, "firstAvailable": subrequests}
        if roll < 0.27 and self.mode != "dynamic":  # with DynamicMIG's overlaps, never fits
            every = {"deviceClassName": MIG_CLASS if self.mode == "static" else GPU_CLASS}
            return {"name": name, "exactly": {**every, "allocationMode": "All"}}
        if mig:
            ours = self.static if self.static and rng.random() < 0.7 else None
            exactly = self.pick(MIG_CLASS, ours or rng.choice(self.profiles()))
        else:
            exactly = self.pick(GPU_CLASS, None)
        exactly["count"] = rng.choice((1, 1, 1, 2, 3) if mig else (1, 1, 1, 2))
        if rng.random() < 0.08:
            exactly["adminAccess"] = True
        return {"name": name, "exactly": exactly}

    def profiles(self) -> list[str]:
        return [p.name for p in self.model.profiles]

    def pick(self, device_class: str, profile: str | None) -> Obj:
        """A (sub)request's class, selectors and tolerations: a MIG ``profile``, or for
        whole GPUs sometimes a memory size."""
        request: Obj = {"deviceClassName": device_class}
        if profile is not None:
            expression = f"device.attributes['{DRIVER}'].profile == '{profile}'"
            request["selectors"] = [{"cel": {"expression": expression}}]
        elif self.rng.random() < 0.3:
            memory = self.rng.choice(("20Gi", "40Gi", "80Gi"))
            expression = f"device.capacity['{DRIVER}'].memory.compareTo(quantity('{memory}')) >= 0"
            request["selectors"] = [{"cel": {"expression": expression}}]
        if self.effects and self.rng.random() < 0.6:
            request["tolerations"] = [self.toleration()]
        return request

    def toleration(self) -> Obj:
        """One of the tolerations of the device taint. Without an effect only where no
        device is tainted ``NoExecute``: the allocator takes such a device for it, but
        kube-controller-manager's device taint eviction counts only tolerations that
        name ``NoExecute`` and evicts the pod (allot has no such controller: ledger)."""
        choices: list[Obj] = [
            {"key": DEVICE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
            {"key": DEVICE_TAINT_KEY, "operator": "Exists", "effect": "NoExecute"},
            {"key": DEVICE_TAINT_KEY, "value": "fan", "effect": "NoExecute"},
        ]
        if "NoExecute" not in self.effects:
            choices.append({"key": DEVICE_TAINT_KEY, "operator": "Exists"})
        return self.rng.choice(choices)

    def constraint(self, requests: list[Obj]) -> Obj | None:
        roll = self.rng.random()
        if roll > 0.35:
            return None
        attribute = "parentUUID" if self.mode != "whole" and roll < 0.2 else "productName"
        if roll < 0.08:
            return {"distinctAttribute": f"{DRIVER}/uuid"}
        return {
            "requests": [r["name"] for r in requests],
            "matchAttribute": f"{DRIVER}/{attribute}",
        }


# ------------------------------------------------------------- the trials as objects
def node_objects(trial_: Obj, create_node: Callable[[Obj], Obj]) -> list[Obj]:
    """The trial's Node (created with ``create_node``, which answers the stored Node) and
    its driver's ResourceSlices, device taints added (the driver's taint of a device)."""
    (spec,) = expand(parse_fleet({"pools": [trial_["pool"]]}))
    node = create_node(node_object(spec))
    slices = node_slices(spec.name, node["metadata"]["uid"], spec.gpus,
                         dynamic_mig=spec.dynamic_mig)  # fmt: skip
    for slice_ in slices:
        for device in slice_["spec"].get("devices") or []:
            effect = trial_["taintedDevices"].get(device["name"])
            if effect:
                device["taints"] = [{"key": DEVICE_TAINT_KEY, "value": "fan", "effect": effect}]
    return slices


def claim_object(name: str, spec: Obj) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def pod_objects(trial_: Obj, pod: Obj) -> list[Obj]:
    """The pod's claim templates, then the pod, pinned to the trial's node."""
    objects: list[Obj] = []
    entries: list[Obj] = []
    for index, claim in enumerate(pod["claims"]):
        entry = f"c{index}"
        if "shared" in claim:
            entries.append({"name": entry, "resourceClaimName": claim["shared"]})
            continue
        template = f"{pod['name']}-{entry}"
        objects.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": template, "namespace": NAMESPACE},
                "spec": {"spec": claim["template"]},
            }
        )
        entries.append({"name": entry, "resourceClaimTemplateName": template})
    spec: Obj = {
        "nodeSelector": {POOL_LABEL: trial_["name"]},
        "resourceClaims": entries,
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"claims": [{"name": e["name"]} for e in entries]},
            }
        ],
    }
    if pod["toleratesNode"]:
        spec["tolerations"] = [{"key": NODE_TAINT["key"], "operator": "Exists"}]
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod["name"], "namespace": NAMESPACE},
            "spec": spec,
        }
    )
    return objects


# ---------------------------------------------------------------- running the trials
def run(client: Client, trials: list[Obj]) -> Obj:
    """Create every trial's objects on one cluster, pod after pod, and read back what the
    scheduler decided: :func:`outcome`."""
    client.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": NAMESPACE, "labels": {ADMIN_LABEL: "true"}},
        }
    )
    for device_class in device_classes():
        client.create(device_class)
    for trial_ in trials:
        for slice_ in node_objects(trial_, client.create):
            client.create(slice_)
        for shared in trial_["shared"]:
            client.create(claim_object(shared["name"], shared["spec"]))
    time.sleep(SETTLE_SECONDS)  # the scheduler's informers see every node and slice
    for step in range(max(len(t["pods"]) for t in trials)):
        names = []
        for trial_ in trials:
            if step < len(trial_["pods"]):
                for document in pod_objects(trial_, trial_["pods"][step]):
                    client.create(document)
                names.append(trial_["pods"][step]["name"])
        _wait_decided(client, names)
    return outcome(client)


def _decided(pod: Obj) -> bool:
    """Bound, or refused for a reason that a retry would not change (not a claim that
    its controller has yet to create). A pod naming one claim in two entries is never
    decided by kube-scheduler 1.36.3 (its PreBind reserves the claim once per entry, which
    the API server refuses as a duplicate, again and again; allot binds it: ledger), so
    the trials have none."""
    if pod["spec"].get("nodeName"):
        return True
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
            message = condition.get("message") or ""
            return "not found" not in message and "waiting for" not in message
    return False


def _wait_decided(client: Client, names: list[str]) -> None:
    deadline = time.monotonic() + DECIDE_SECONDS
    pending = set(names)
    while pending:
        pods = {p["metadata"]["name"]: p for p in client.list("v1", "Pod", namespace=NAMESPACE)}
        # a pod gone (evicted) is decided too: the comparison shows it absent
        pending = {name for name in pending if name in pods and not _decided(pods[name])}
        if pending and time.monotonic() > deadline:
            raise RuntimeError(f"pods not decided after {DECIDE_SECONDS:.0f}s: {sorted(pending)}")
        time.sleep(0.1)


def outcome(client: Client) -> Obj:
    """Per pod: bound or the refusal's reasons; per claim (a generated one by pod and
    entry): its allocation results, or None."""
    pods: Obj = {}
    claim_names: dict[str, str] = {}
    for pod in client.list("v1", "Pod", namespace=NAMESPACE):
        name = pod["metadata"]["name"]
        pods[name] = "bound" if pod["spec"].get("nodeName") else refusal(pod)
        for status in pod.get("status", {}).get("resourceClaimStatuses") or []:
            if status.get("resourceClaimName"):
                claim_names[status["resourceClaimName"]] = f"{name}/{status['name']}"
    claims: Obj = {}
    for claim in client.list("resource.k8s.io/v1", "ResourceClaim", namespace=NAMESPACE):
        name = claim["metadata"]["name"]
        allocation = (claim.get("status") or {}).get("allocation")
        claims[claim_names.get(name, name)] = _results(allocation)
    return {"pods": pods, "claims": claims}


def _results(allocation: Obj | None) -> list[Obj] | None:
    if allocation is None:
        return None
    keys = ("request", "driver", "pool", "device", "adminAccess")
    return [
        {k: result[k] for k in keys if k in result}
        for result in allocation.get("devices", {}).get("results") or []
    ]


def refusal(pod: Obj) -> list[str]:
    """The reasons the scheduler gave for the trial's own node, sorted, without counts of
    the pinned-out nodes and without kube-scheduler's ``preemption:`` part."""
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition.get("status") == "False":
            return reasons(condition.get("message") or "")
    return ["(not decided)"]


def reasons(message: str) -> list[str]:
    """The filter reasons of the scheduler's message (``0/X nodes are available:
    <reasons>. <PostFilter's message>``) without the nodes the pin refused:
    ``0/5 nodes are available: 1 cannot allocate all claims, 4 node(s) didn't match Pod's
    node affinity/selector. still not schedulable, preemption: ...`` ->
    ``["cannot allocate all claims"]``."""
    if not message.startswith("0/") or ": " not in message:
        return [message]
    head = message.split(": ", 1)[1].split(". ", 1)[0].removesuffix(".")
    found = []
    for part in head.split(", "):
        count, _, reason = part.partition(" ")
        if not count.isdigit():
            found.append(part)
        elif PIN_REASON not in reason:
            found.append(reason)
    return sorted(found)


# ------------------------------------------------------------------- the comparison
@dataclass
class Agreement:
    claims: int = 0
    claims_agreeing: int = 0
    pods: int = 0
    pods_agreeing: int = 0
    allocated: int = 0
    """Claims allocated by both (the rest of the agreeing ones neither allocated)."""
    bound: int = 0
    refusals: Counter[str] = field(default_factory=Counter)
    """For the pods refused by both: how many for each reason."""
    covered: Counter[str] = field(default_factory=Counter)
    """For the claims allocated by both: how many use each feature (:func:`features`)."""
    differences: list[str] = field(default_factory=list)


def compare(trials: list[Obj], real: Obj, allot: Obj) -> Agreement:
    """Claim by claim and pod by pod, what kube-scheduler and allot decided."""
    specs = claim_specs(trials)
    agreement = Agreement()
    for kind in ("claims", "pods"):
        names = sorted(set(real[kind]) | set(allot[kind]))
        same = 0
        for name in names:
            theirs, ours = real[kind].get(name, "(absent)"), allot[kind].get(name, "(absent)")
            if theirs != ours:
                agreement.differences.append(
                    f"{kind[:-1]} {name}: kube-scheduler {json.dumps(theirs)}, "
                    f"allot {json.dumps(ours)}"
                )
                continue
            same += 1
            if kind == "claims" and theirs is not None:
                agreement.allocated += 1
                agreement.covered.update(features(*specs[name]))
            agreement.bound += theirs == "bound"
            if kind == "pods" and theirs != "bound":
                agreement.refusals.update(theirs)
        setattr(agreement, kind, len(names))
        setattr(agreement, f"{kind}_agreeing", same)
    return agreement


def claim_specs(trials: list[Obj]) -> dict[str, tuple[Obj, Obj, bool]]:
    """Each claim's key in :func:`outcome` -> (its trial, its spec, whether shared)."""
    specs: dict[str, tuple[Obj, Obj, bool]] = {}
    for trial_ in trials:
        for shared in trial_["shared"]:
            specs[shared["name"]] = (trial_, shared["spec"], True)
        for pod in trial_["pods"]:
            for index, claim in enumerate(pod["claims"]):
                if "template" in claim:
                    specs[f"{pod['name']}/c{index}"] = (trial_, claim["template"], False)
    return specs


MODES = {"whole": "whole GPUs", "static": "static MIG", "dynamic": "DynamicMIG counters"}


def features(trial_: Obj, spec: Obj, shared: bool) -> set[str]:
    """What a claim of ``trial_`` exercises: the node's kind, and its spec's features."""
    found = {MODES[trial_["mode"]]}
    if shared:
        found.add("shared claim")
    devices = spec["devices"]
    for constraint in devices.get("constraints") or []:
        found.update(k for k in ("matchAttribute", "distinctAttribute") if k in constraint)
    for request in devices["requests"]:
        chosen = [request["exactly"]] if "exactly" in request else request["firstAvailable"]
        if "firstAvailable" in request:
            found.add("firstAvailable")
        for part in chosen:
            if part.get("allocationMode") == "All":
                found.add("allocationMode All")
            if part.get("adminAccess"):
                found.add("adminAccess")
            if part.get("tolerations") and trial_["taintedDevices"]:
                found.add("device taints tolerated")
            if part.get("count", 1) > 1:
                found.add("several devices")
    return found


# -------------------------------------------------------------------------- engines
@contextmanager
def real_engine(root: Path) -> Iterator[Client]:
    """kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok from ``make
    kube``'s binaries (:func:`allot.kubeengine.cluster.start`), no fleet."""
    cluster = start(root / "real", port=0, options=Options(unsafe_no_fsync=True))
    client = cluster.client()
    try:
        yield client
    finally:
        client.close()
        cluster.stop()


@contextmanager
def embedded_engine(root: Path) -> Iterator[Client]:
    """allot's platform as ``allot up`` builds it (default placement), no fleet."""
    data = root / "embedded"
    with ServerThread(data, api=build(data).server) as server:
        client = Client.from_kubeconfig(server.endpoint.kubeconfigs["host"])
        try:
            yield client
        finally:
            client.close()


def agree(seeds: list[int]) -> Agreement:
    """Run the trials of ``seeds`` on both engines and compare."""
    trials = [trial(seed) for seed in seeds]
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        with real_engine(root) as client:
            real = run(client, trials)
        with embedded_engine(root) as client:
            ours = run(client, trials)
    return compare(trials, real, ours)


def main() -> None:
    # The trials fill their nodes and taint devices on purpose: the platform's alerts
    # (DeviceTainted, DeviceClassLowFree) would bury the figures.
    logging.getLogger("allot.alerts").setLevel(logging.ERROR)
    count = int(os.environ.get("ALLOT_AGREEMENT_SEEDS", "60"))
    print(
        f"allocation agreement with kube-scheduler: {count} seeded trials (one node each, "
        "pods pinned to it), real Kubernetes vs allot's embedded scheduler",
        flush=True,
    )
    problems = missing_or_wrong(bin_dir())
    if problems:
        print(f"  skipped: {'; '.join(problems)} (run `make kube`)")
        return
    started = time.perf_counter()
    result = agree(list(range(count)))
    print(
        f"  claims: {result.claims_agreeing}/{result.claims} agree (allocated or not, and the "
        f"devices; {result.allocated} allocated by both); pods: {result.pods_agreeing}/"
        f"{result.pods} agree (bound, or refused for the same reasons; {result.bound} bound by "
        f"both); {time.perf_counter() - started:.0f} s"
    )
    covered = ", ".join(f"{name} {count}" for name, count in sorted(result.covered.items()))
    print(f"  claims allocated by both, by what they use: {covered}")
    refused = ", ".join(f"{reason} {count}" for reason, count in sorted(result.refusals.items()))
    print(f"  pods refused by both, by reason: {refused}")
    for difference in result.differences:
        print(f"  difference: {difference}")
    if "--dump" in sys.argv:
        print(json.dumps([trial(seed) for seed in range(count)], indent=1))


if __name__ == "__main__":
    main()
