"""The node agent: the kubelet's part for the platform's nodes.

For every pod bound to a node, the agent asks the driver to prepare the pod's claims (a
CDI-like spec per claim under ``<data-dir>/cdi``), hands the containers to the runtime
(``allot.controllers.runtimes``: simulated, or real local processes with their devices'
environment), records the kubelet's ``Pulling``/``Pulled``/``Created``/``Started`` events
(an image pulled once per node) and container and image ids
(:mod:`allot.controllers.lifecycle`; ``Killing`` when a running pod is deleted), moves the
pod to ``Running`` with ready containers, ``Ready`` and ``ContainersReady`` conditions,
and when the containers exit to ``Succeeded`` or ``Failed`` with their exit codes. A
container that exits and waits for its restart back-off is reported as the kubelet does:
waiting with ``CrashLoopBackOff``, unready (so is the pod), its run in ``lastState``, a
Warning ``BackOff`` event; started again, running and ready with its start's events. A
container that cannot start fails the pod with ``ContainerCannotRun`` and a Warning event.
A pod's init containers run first, one at a time, then its app containers, and each step
is reported as the kubelet does (``allot.controllers.initcontainers``: ``PodInitializing``,
``initContainerStatuses``, the ``Initialized`` condition); a failed one fails the pod under
``restartPolicy: Never`` and crash-loops otherwise; native sidecars run beside the app
containers. Pods without init containers skip all of it.
A container whose ``env``/``envFrom`` names a ConfigMap or Secret (or a key of one) that
does not exist keeps the pod ``Pending``, the container waiting with
``CreateContainerConfigError`` and the kubelet's message and Warning ``Failed`` event,
until the object appears in the namespace (ConfigMap and Secret events wake the pod); a
tenant pod's twin names the twins the tenant sync makes of them (``<name>.<namespace>``).
Claims are unprepared when the pod finishes or is deleted. Deleting a running pod is
graceful, as with the kubelet: the API server only marks it (``deletionTimestamp``), the
agent has the runtime end every process of it (SIGTERM, the deletion's grace period, then
SIGKILL to the whole tree; a later delete with a shorter one shortens it), and only then
deletes the object for good; a pod removed at once (a forced delete, a pod on a node gone)
has its processes ended all the same. The runtime's ``holds`` tells the resourceclaim
controller which pods may still use their devices. A removed pod's logs and working
directories go with it. With the driver's ``PassthroughSupport`` gate, preparing a GPU
hides its VFIO twin (and the reverse) until unprepare (``allot.controllers.passthrough``); a
pod allocated the hidden twin is refused as the driver refuses it and tried again when a
slice changes. A ComputeDomain channel (``compute-domain.nvidia.com``) is prepared only once
its node's IMEX daemon is ready in the domain's status; until then the pod stays Pending
with the plugin's refusal as its event, and tries again when a ComputeDomain changes.
Built by ``allot.platform``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Hashable, Mapping
from pathlib import Path

from allot.api import claims as claims_api
from allot.api.quantity import Quantity
from allot.controllers import initcontainers, lifecycle
from allot.controllers.computedomains import DomainLookup, Origin, host_origin
from allot.controllers.context import ControllerContext
from allot.controllers.envsources import ContainerConfigError, SourceLookup, names_sources
from allot.controllers.localstorage import EVICTED
from allot.controllers.passthrough import PassthroughTwins
from allot.controllers.runtimes import (
    ContainerSetup,
    ContainerStartError,
    Reports,
    Runtime,
    container_environment,
    is_sidecar,
)
from allot.controllers.sharing import SharingApplier, SharingError
from allot.driver import passthrough, sharing
from allot.driver.catalog import created_mig_uuid
from allot.driver.computedomain import RESOURCE as COMPUTE_DOMAINS
from allot.driver.configs import DRIVER, DriverConfigError, configs_for_results
from allot.driver.gates import PASSTHROUGH, enabled
from allot.store import WatchEvent
from allot.store.errors import Conflict
from allot.types import Obj, rfc3339

MANAGER = "allot-node-agent"
CONFIG_ERROR = "CreateContainerConfigError"
CRASH_LOOP = "CrashLoopBackOff"
SOURCES = {"configmaps": "ConfigMap", "secrets": "Secret"}  # what env and envFrom name
SLICES = "resourceslices.resource.k8s.io"


class PrepareError(Exception):
    """The driver refused to prepare a claim's devices; the message is the kubelet's."""


class DevicePreparer:
    """The driver's prepare/unprepare: one JSON spec per claim, listing its devices, and
    the claim's sharing (its MPS daemons, time-slices: ``sharing``) while it is prepared."""

    def __init__(self, directory: Path, applier: SharingApplier | None = None) -> None:
        self.directory = directory
        self.sharing = applier or SharingApplier(directory.parent / "mps")
        self._made = False  # the directory exists (made once, not on every claim)
        # per prepared claim's uid: its shared devices' configs (consumable shares)
        self._shared: dict[str, dict[tuple[str, str], object]] = {}

    def apply_sharing(self, claim: Obj, plan: sharing.ClaimSharing) -> list[str]:
        """Carry out the claim's sharing plan; the lines to record. A shared device (a
        result with a ``shareID``) already prepared for another claim with another config
        is refused, as the driver refuses it (DriverConfigError); SharingError when a step
        fails on this machine."""
        uid = str(claim["metadata"]["uid"])
        mine = {
            (str(r.get("pool")), str(r.get("device"))): plan.configs.get(str(r.get("device")))
            for r in _results(claim)
            if r.get("shareID") and r.get("driver") == DRIVER and not r.get("adminAccess")
        }
        for other, theirs in self._shared.items():
            for device, config in mine.items():
                if other != uid and device in theirs and theirs[device] != config:
                    raise DriverConfigError(
                        f"unable to prepare claim {uid}: requested device {device[1]} has "
                        f"conflicting configuration with already prepared claim {other}"
                    )
        self._shared[uid] = mine
        return self.sharing.apply(uid, plan)

    def prepare(self, claim: Obj, node: str) -> list[Obj]:
        devices = [
            {
                "request": r.get("request"),
                "driver": r.get("driver"),
                "pool": r.get("pool"),
                "device": r.get("device"),
                "cdiDevice": f"k8s.{r.get('driver')}/claim="
                f"{claim['metadata']['uid']}-{r.get('device')}",
            }
            for r in _results(claim)
            if r.get("pool")
        ]
        if not self._made:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._made = True
        path = self.directory / f"k8s.gpu.nvidia.com-claim_{claim['metadata']['uid']}.json"
        path.write_text(
            json.dumps(
                {
                    "claim": claim["metadata"]["name"],
                    "namespace": claim["metadata"].get("namespace"),
                    "node": node,
                    "devices": devices,
                },
                indent=2,
            )
        )
        return devices

    def unprepare(self, claim_uid: str) -> None:
        path = self.directory / f"k8s.gpu.nvidia.com-claim_{claim_uid}.json"
        path.unlink(missing_ok=True)
        self._shared.pop(claim_uid, None)
        self.sharing.release(claim_uid)


class NodeAgent:
    """The kubelet's part for the simulated nodes: prepare claims, run, report, clean up."""

    name = "node-agent"
    watches = frozenset({"pods", SLICES, COMPUTE_DOMAINS, *SOURCES})
    """The resources keys_for answers for."""

    def __init__(
        self,
        context: ControllerContext,
        preparer: DevicePreparer,
        runtime: Runtime,
        driver_gates: Mapping[str, bool] | None = None,
        domain_origin: Origin = host_origin,
    ) -> None:
        """``domain_origin``: the cluster and namespace a claim stands for (a tenant's
        twin: the tenant's), to match a ComputeDomain channel with its domain."""
        self.context = context
        self.domain_origin = domain_origin
        self.preparer = preparer
        self.runtime = runtime
        self.driver_gates = dict(driver_gates or {})
        self.twins = (
            PassthroughTwins(context, preparer.directory)
            if enabled(self.driver_gates, PASSTHROUGH)
            else None
        )
        self._twin_refused: set[tuple[str, str]] = set()  # pods whose device a twin hid
        self.domains = DomainLookup(context)
        self._domain_waiting: set[tuple[str, str]] = set()  # pods whose channel waits
        self.images = lifecycle.NodeImages()  # what each node has pulled
        self._published: dict[tuple[str, str], list[Obj]] | None = None  # slices by pool
        self._waiting: dict[str, set[str]] = {}  # pods waiting for a ConfigMap or Secret
        self._initializing: set[str] = set()  # uids of pods whose init containers run
        self._reports = Reports(
            self._finish,
            self._backing_off,
            self._restarted,
            self._init_started,
            self._init_completed,
            self._initialized,
            self._cannot_run,
            self._evicted,
        )

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.resource == COMPUTE_DOMAINS:  # a daemon may be ready now (any cluster)
            return [("pod", namespace, name) for namespace, name in sorted(self._domain_waiting)]
        if event.cluster != self.context.cluster:
            return []
        if event.resource == SLICES:  # a twin shown again: its refused pods try again
            return [("pod", namespace, name) for namespace, name in sorted(self._twin_refused)]
        if event.resource in SOURCES:
            namespace = event.object["metadata"].get("namespace", "")
            return [("pod", namespace, name) for name in sorted(self._waiting.get(namespace, ()))]
        if event.resource != "pods" or event.type == "DELETED":
            return []
        metadata = event.object["metadata"]
        if metadata.get("deletionTimestamp"):
            return [("stop", metadata.get("namespace", ""), metadata["name"])]
        if (event.object.get("spec") or {}).get("nodeName") and (
            event.object.get("status") or {}
        ).get("phase", "Pending") == "Pending":
            return [("pod", metadata.get("namespace", ""), metadata["name"])]
        return []

    def observe(self, event: WatchEvent) -> None:
        """A changed slice: devices are looked up again; a deleted claim: its CDI spec goes;
        a deleted pod (ended gracefully before, or removed at once): its containers stop."""
        if event.cluster != self.context.cluster:
            return
        if event.resource == SLICES:
            self._published = None
        elif event.resource == "resourceclaims.resource.k8s.io" and event.type == "DELETED":
            self._unprepare_claim(event.object["metadata"]["uid"])
        elif event.resource == "pods" and event.type == "DELETED":
            pod = event.object
            self._stop_waiting(pod)
            self._initializing.discard(str(pod["metadata"].get("uid")))
            self.runtime.stop(pod, lambda: self._forget(pod))

    def initial_keys(self) -> list[Hashable]:
        keys: list[Hashable] = []
        for pod in self.context.list("Pod"):
            key = ("pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
            if pod["metadata"].get("deletionTimestamp"):
                keys.append(("stop", key[1], key[2]))
            elif (pod.get("spec") or {}).get("nodeName") and (pod.get("status") or {}).get(
                "phase", "Pending"
            ) == "Pending":
                keys.append(key)
        return keys

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        what, namespace, name = key
        self._twin_refused.discard((namespace, name))  # refused again below if still so
        self._domain_waiting.discard((namespace, name))
        pod = self.context.get("Pod", namespace, name)
        if pod is not None and what == "stop":
            self._initializing.discard(str(pod["metadata"].get("uid")))
            lifecycle.killing_events(self.context, pod)
            self.runtime.stop(pod, lambda: self._remove(pod))
            return
        if (
            pod is None
            or pod["metadata"].get("deletionTimestamp")
            or (pod.get("status") or {}).get("phase", "Pending") != "Pending"
            or pod["metadata"].get("uid") in self._initializing
        ):
            if pod is not None:
                self._stop_waiting(pod)
            return
        node = pod["spec"].get("nodeName")
        claims = self._claims(pod)
        published = (
            self._published_of(_pools_of(claims))
            if any(_configured(c) for c in claims) or self.runtime.wants_devices or self.twins
            else {}
        )
        try:
            for claim in claims:
                self._check_channel(claim, node, (namespace, name))
                self._check_twins(claim, published, (namespace, name))
            plans = {c["metadata"]["uid"]: self._sharing_of(c, published) for c in claims}
        except PrepareError as err:
            self._refused(pod, err)
            return  # the pod stays Pending, as with a driver that refuses to prepare
        lookup = self._lookup(pod)
        failures = _config_errors(pod, lookup)
        if failures:
            self._wait_for_config(pod, claims, failures)
            return
        self._stop_waiting(pod)
        if not self._prepare(pod, claims, plans, node):
            return
        setups = (
            self._setups(pod, claims, published, lookup, plans)
            if self.runtime.wants_devices
            else {}
        )
        if pod["spec"].get("initContainers"):
            self._initialize(pod, setups)
            return
        try:
            self.runtime.launch(pod, setups, self._reports)
        except ContainerStartError as err:
            self._fail_to_start(pod, str(err))
            return
        lifecycle.started_events(self.context, pod, self.images)
        self.context.write_status("Pod", _running(pod, self.context.clock()), MANAGER)

    def _initialize(self, pod: Obj, setups: dict[str, ContainerSetup]) -> None:
        """A pod with init containers: ``Pending``, every container waiting
        ``PodInitializing``, then the runtime runs them in order and reports each step
        (``_init_started``, ``_init_completed``, ``_initialized``)."""
        now = _timestamp(self.context.clock())
        pod.setdefault("status", {}).update(_addresses())
        initcontainers.initializing(pod, now)
        _set_conditions(pod, now)
        self.context.write_status("Pod", pod, MANAGER)
        uid = str(pod["metadata"].get("uid"))
        self._initializing.add(uid)
        try:
            self.runtime.launch(pod, setups, self._reports)
        except ContainerStartError as err:
            self._cannot_run(pod, str(err))

    def _current(self, pod: Obj) -> Obj | None:
        """The pod as stored now, if it is still this pod (not one re-created by name)."""
        latest = self._latest(pod)
        if latest is None or latest["metadata"].get("uid") != pod["metadata"].get("uid"):
            return None
        return latest

    def _init_started(self, pod: Obj, container: str) -> None:
        """An init container (or sidecar) started for the first time: its events, and
        running (a sidecar also ready)."""
        latest = self._current(pod)
        spec = initcontainers.spec_of(pod, container)
        if latest is None or spec is None:
            return
        lifecycle.container_started_events(self.context, latest, self.images, spec)
        now = _timestamp(self.context.clock())
        initcontainers.started(latest, container, now)
        _set_conditions(latest, now)
        self.context.update_status("Pod", latest, MANAGER)

    def _init_completed(self, pod: Obj, container: str) -> None:
        """A regular init container exited 0: terminated ``Completed`` and ready."""
        latest = self._current(pod)
        entry = initcontainers.entry_of(latest, container) if latest is not None else None
        if latest is None or entry is None:
            return
        now = _timestamp(self.context.clock())
        initcontainers.terminated(entry, 0, now)
        entry["ready"] = True
        _set_conditions(latest, now)
        self.context.update_status("Pod", latest, MANAGER)

    def _initialized(self, pod: Obj) -> None:
        """Every init container is done: the app containers started, the pod ``Running``
        (``Ready`` also waits for the sidecars' readiness)."""
        self._initializing.discard(str(pod["metadata"].get("uid")))
        latest = self._current(pod)
        if latest is None:
            return
        lifecycle.started_events(self.context, latest, self.images)
        now_moment = self.context.clock()
        _running(latest, now_moment)
        _set_conditions(latest, _timestamp(now_moment))
        self.context.update_status("Pod", latest, MANAGER)

    def _cannot_run(self, pod: Obj, message: str) -> None:
        """A container of a pod with init containers could not be started."""
        self._initializing.discard(str(pod["metadata"].get("uid")))
        latest = self._current(pod)
        if latest is not None:
            self._fail_to_start(latest, message)

    def _lookup(self, pod: Obj) -> SourceLookup:
        """How the pod's ConfigMaps and Secrets are found: in its namespace (a tenant
        pod's twin names their twins, which the tenant sync makes before the pod's)."""
        namespace = str(pod["metadata"].get("namespace") or "")
        return lambda kind, name: self.context.get(kind, namespace, name)

    def _wait_for_config(self, pod: Obj, claims: list[Obj], failures: dict[str, str]) -> None:
        """The kubelet's answer to a container it cannot configure: the pod stays Pending
        (its sandbox and devices ready), the container waits with the reason, the Warning
        event is recorded; the pod is tried again when a ConfigMap or Secret of its
        namespace changes. A pod already showing these failures is left as it is."""
        namespace, name = pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
        self._waiting.setdefault(namespace, set()).add(name)
        if _shown_config_errors(pod) == failures:
            return  # woken by its own status write, or by an object that changes nothing
        for claim in claims:
            self._prepare_claim(claim, pod["spec"].get("nodeName"))
        lifecycle.config_failed_events(self.context, pod, self.images, failures)
        self.context.write_status(
            "Pod", _waiting_for_config(pod, failures, self.context.clock()), MANAGER
        )

    def _stop_waiting(self, pod: Obj) -> None:
        names = self._waiting.get(pod["metadata"].get("namespace", ""))
        if names is not None:
            names.discard(pod["metadata"]["name"])

    def _published_of(
        self, pools: set[tuple[str, str]]
    ) -> dict[tuple[str, str, str], dict[str, str]]:
        """The published devices of ``pools``, from slices indexed by pool once per change
        of any slice (not a scan of every slice for each pod)."""
        if self._published is None:
            by_pool: dict[tuple[str, str], list[Obj]] = {}
            for slice_ in self.context.scan("ResourceSlice"):
                spec = slice_.get("spec") or {}
                pool = (str(spec.get("driver")), str((spec.get("pool") or {}).get("name")))
                by_pool.setdefault(pool, []).append(slice_)
            self._published = by_pool
        slices = [s for pool in pools for s in self._published.get(pool, [])]
        return _published_devices(slices, pools)

    def _refused(self, pod: Obj, err: PrepareError) -> None:
        origin = lifecycle.pod_origin(pod)
        reason = "FailedPrepareDynamicResources"
        self.context.event(pod, "Warning", reason, str(err), "kubelet", source=origin)

    def _sharing_of(
        self, claim: Obj, published: dict[tuple[str, str, str], dict[str, str]]
    ) -> sharing.ClaimSharing | None:
        """Validate the driver configs that apply to the claim's devices and plan their
        sharing, as the driver's kubelet plugin does before it prepares them (None: a
        claim without configs or shared devices, which the driver prepares as it is)."""
        if not _configured(claim):
            return None
        results = [r for r in _results(claim) if r.get("driver") == DRIVER]
        attributes = {str(r.get("device")): _prepared_attributes(published, r) for r in results}
        types = {name: found.get("type", "gpu") for name, found in attributes.items()}
        dynamic = frozenset(
            str(r.get("device"))
            for r in results
            if (published.get(_result_key(r)) or {}).get("type") == "mig"
            and not (published.get(_result_key(r)) or {}).get("uuid")
        )
        try:
            chosen = configs_for_results(claim, types, self.driver_gates)
            consumed = {}
            for r in results:
                memory = claims_api.consumed_memory(r)
                if memory is not None:
                    consumed[str(r.get("device"))] = memory
            uid = str(claim["metadata"]["uid"])
            return sharing.plan(uid, chosen, attributes, consumed, dynamic)
        except DriverConfigError as err:
            raise _prepare_failed(claim, str(err)) from None

    def _check_channel(self, claim: Obj, node: str, pod: tuple[str, str]) -> None:
        """A ComputeDomain channel: refused in the plugin's words until the domain lists
        the node's daemon as ready (the pod tries again when a domain changes)."""
        refusal = self.domains.channel_refusal(claim, node, self.domain_origin)
        if refusal is not None:
            self._domain_waiting.add(pod)
            raise _prepare_failed(claim, refusal)

    def _check_twins(
        self,
        claim: Obj,
        published: dict[tuple[str, str, str], dict[str, str]],
        pod: tuple[str, str],
    ) -> None:
        """PassthroughSupport: a device whose twin another claim prepared is no longer the
        driver's (its slice no longer has it): refused in the driver's words; the pod tries
        again when a slice changes (the twin unprepared)."""
        if self.twins is None:
            return
        for result in _allocated_devices(claim).get("results") or []:
            if result.get("driver") == DRIVER and _result_key(result) not in published:
                self._twin_refused.add(pod)
                raise _prepare_failed(claim, passthrough.not_found(str(result.get("device"))))

    def _prepare(
        self,
        pod: Obj,
        claims: list[Obj],
        plans: Mapping[str, sharing.ClaimSharing | None],
        node: str,
    ) -> bool:
        """Prepare the pod's claims and apply their sharing; False (a Warning event, the
        pod left Pending) when the driver refuses one."""
        for claim in claims:
            plan = plans.get(claim["metadata"]["uid"])
            try:
                lines = self.preparer.apply_sharing(claim, plan) if plan is not None else []
            except DriverConfigError as err:
                self._refused(pod, PrepareError(_refusal(claim, str(err))))
                return False
            except SharingError as err:
                self._refused(pod, _prepare_failed(claim, str(err)))
                return False
            self._prepare_claim(claim, node)
            origin = lifecycle.pod_origin(pod)
            for line in lines:
                self.context.event(pod, "Normal", "SharingApplied", line, "kubelet", source=origin)
        return True

    def _prepare_claim(self, claim: Obj, node: str) -> None:
        """The driver's prepare of one claim; PassthroughSupport hides its devices' twins."""
        devices = self.preparer.prepare(claim, node)
        if self.twins is not None:
            mine = [str(d["device"]) for d in devices if d.get("driver") == DRIVER]
            self.twins.prepared(claim, node, mine)

    def _unprepare_claim(self, claim_uid: str) -> None:
        self.preparer.unprepare(claim_uid)
        if self.twins is not None:
            self.twins.unprepared(claim_uid)

    def _claims(self, pod: Obj) -> list[Obj]:
        namespace = pod["metadata"].get("namespace", "")
        claims = []
        for name in sorted(set(claims_api.pod_claim_names(pod).values())):
            claim = self.context.get("ResourceClaim", namespace, name)
            if claim is not None:
                claims.append(claim)
        return claims

    def _setups(
        self,
        pod: Obj,
        claims: list[Obj],
        published: dict[tuple[str, str, str], dict[str, str]],
        lookup: SourceLookup | None = None,
        plans: Mapping[str, sharing.ClaimSharing | None] | None = None,
    ) -> dict[str, ContainerSetup]:
        """Per container: the devices of the claims and requests it references (the
        kubelet's ``GetResources``) with their sharing, their variables and the binds of
        their MPS daemons' directories."""
        by_name = {c["metadata"]["name"]: c for c in claims}
        setups = {}
        for container, references in container_requests(pod).items():
            devices, mounts = [], []
            for name, request in references:
                claim = by_name.get(name)
                plan = (plans or {}).get(claim["metadata"]["uid"]) if claim else None
                for r in _results(claim) if claim else []:
                    if not _serves(r, request):
                        continue
                    attributes = _prepared_attributes(published, r)
                    if plan is not None:
                        attributes = {**attributes, **plan.shown.get(str(r.get("device")), {})}
                        daemon = plan.daemon_of(attributes.get("uuid", ""))
                        for mount in self.preparer.sharing.mounts(daemon) if daemon else []:
                            if mount not in mounts:
                                mounts.append(mount)
                    devices.append(attributes)
            gpus = [d for d in devices if d.get("type") != "vfio"]  # VFIO: no CUDA device
            joined = ",".join(d.get("uuid", "") for d in gpus)
            device_env = (
                {"CUDA_VISIBLE_DEVICES": joined, "NVIDIA_VISIBLE_DEVICES": joined}
                if gpus
                else {"NVIDIA_VISIBLE_DEVICES": "void"}  # the driver's VFIO spec
                if devices
                else {}
            )
            device_env.update(sharing.container_environment(devices))
            spec = initcontainers.spec_of(pod, container) or {}
            setups[container] = ContainerSetup(
                container_environment(spec, pod, device_env, lookup), devices, mounts
            )
        return setups

    def _backing_off(
        self, pod: Obj, container: str, restarts: int, exit_code: int, delay: float
    ) -> None:
        """A container exited and waits ``delay`` seconds to be started again: as the
        kubelet reports it, waiting with ``CrashLoopBackOff``, its run in ``lastState``,
        not ready (nor the pod), and a Warning ``BackOff`` event."""
        latest = self._latest(pod)
        if latest is None:
            return
        now = _timestamp(self.context.clock())
        status = latest.setdefault("status", {})
        named = lifecycle.kubelet_pod_name(latest)
        for entry in _entries(status):
            if entry["name"] == container:
                running = (entry.get("state") or {}).get("running") or {}
                entry["restartCount"] = restarts
                entry["lastState"] = {
                    "terminated": {
                        "exitCode": exit_code,
                        "reason": "Completed" if exit_code == 0 else "Error",
                        "startedAt": running.get("startedAt", now),
                        "finishedAt": now,
                        "containerID": entry.get("containerID", ""),
                    }
                }
                message = f"back-off {go_duration(delay)} restarting failed container="
                entry["state"] = {
                    "waiting": {
                        "reason": CRASH_LOOP,
                        "message": f"{message}{container} pod={named}",
                    }
                }
                entry["ready"] = False
                entry["started"] = False
        _set_conditions(latest, now)
        self.context.update_status("Pod", latest, MANAGER)
        self.context.event(
            latest,
            "Warning",
            "BackOff",
            f"Back-off restarting failed container {container} in pod {named}",
            lifecycle.COMPONENT,
            source=lifecycle.container_origin(latest, container),
        )

    def _restarted(self, pod: Obj, container: str, restarts: int) -> None:
        """A container started again after its back-off: running and ready (allot runs
        no probes; a regular init container is ready once it completes), with a new
        container id, and its start's events again."""
        latest = self._latest(pod)
        spec = initcontainers.spec_of(pod, container)
        if latest is None or spec is None:
            return
        now = _timestamp(self.context.clock())
        init_container = any(
            c["name"] == container for c in pod["spec"].get("initContainers") or []
        )
        for status in _entries(latest.get("status") or {}):
            if status["name"] == container:
                status["restartCount"] = restarts
                status["containerID"] = lifecycle.container_id(latest, container, restarts)
                status["state"] = {"running": {"startedAt": now}}
                status["ready"] = not init_container or is_sidecar(spec)
                status["started"] = True
        _set_conditions(latest, now)
        self.context.update_status("Pod", latest, MANAGER)
        lifecycle.container_started_events(self.context, latest, self.images, spec)

    def _latest(self, pod: Obj) -> Obj | None:
        return self.context.get(
            "Pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
        )

    def _fail_to_start(self, pod: Obj, message: str) -> None:
        now = _timestamp(self.context.clock())
        status = pod.setdefault("status", {})
        status["phase"] = "Failed"
        status["message"] = message
        status["reason"] = "ContainerCannotRun"
        if pod["spec"].get("initContainers"):
            status["initContainerStatuses"] = _cannot_run_entries(
                pod, pod["spec"]["initContainers"], message, now
            )
        status["containerStatuses"] = _cannot_run_entries(
            pod, pod["spec"].get("containers") or [], message, now
        )
        self.context.update_status("Pod", pod, MANAGER)
        origin = lifecycle.pod_origin(pod)
        self.context.event(pod, "Warning", "Failed", message, "kubelet", source=origin)
        self._unprepare(pod)

    def _evicted(self, pod: Obj, message: str, exit_codes: dict[str, int]) -> None:
        """The runtime evicted the pod for its local storage and its processes are gone."""
        self._finish(pod, exit_codes, message)

    def _finish(self, pod: Obj, exit_codes: dict[str, int], eviction: str | None = None) -> None:
        """Every app container has exited for good (its sidecars stopped after it), or an
        init container failed and is not restarted (``Never``): ``Succeeded`` when every
        app container exited 0, else ``Failed``, each run terminated with its code. An
        evicted pod (``eviction``: the message) is reported as the kubelet's eviction
        manager does: a Warning ``Evicted`` event with the message, and ``Failed`` with
        reason ``Evicted`` and that message."""
        latest = self.context.get(
            "Pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
        )
        phase = (latest or {}).get("status", {}).get("phase")
        if latest is None or latest["metadata"].get("uid") != pod["metadata"].get("uid"):
            return
        if eviction is not None:
            origin = lifecycle.pod_origin(latest)
            self.context.event(latest, "Warning", EVICTED, eviction, "kubelet", source=origin)
            latest.setdefault("status", {}).update(reason=EVICTED, message=eviction)
        if phase == "Pending" and latest["metadata"].get("uid") in self._initializing:
            self._initializing.discard(latest["metadata"]["uid"])
            self._finish_initializing(latest, exit_codes)
            return
        if phase != "Running":
            return
        now = _timestamp(self.context.clock())
        status = latest["status"]
        apps = [c["name"] for c in latest["spec"].get("containers") or []]
        failed = eviction is not None or any(exit_codes.get(a) for a in apps)
        status["phase"] = "Failed" if failed else "Succeeded"
        for container in _entries(status):
            code = exit_codes.get(container["name"], 0)
            state = container.get("state") or {}
            if "terminated" in state:
                continue  # a completed init container
            if "running" in state and container["name"] not in apps:
                self._sidecar_stopped(latest, container["name"])
            initcontainers.terminated(container, code, now)
        if latest["spec"].get("initContainers"):
            _set_conditions(latest, now)
        else:
            status["conditions"] = [
                {**c, "status": "False"} if c["type"] in ("Ready", "ContainersReady") else c
                for c in status.get("conditions") or []
            ]
        self.context.update_status("Pod", latest, MANAGER)
        self._unprepare(latest)

    def _finish_initializing(self, pod: Obj, exit_codes: dict[str, int]) -> None:
        """An init container failed under ``restartPolicy: Never``: the pod ``Failed``,
        the app containers never started (still waiting ``PodInitializing``)."""
        now = _timestamp(self.context.clock())
        status = pod["status"]
        status["phase"] = "Failed"
        for entry in status.get("initContainerStatuses") or []:
            if entry["name"] in exit_codes and "running" in (entry.get("state") or {}):
                if entry["name"] in initcontainers.sidecar_names(pod):
                    self._sidecar_stopped(pod, entry["name"])
                initcontainers.terminated(entry, exit_codes[entry["name"]], now)
        _set_conditions(pod, now)
        self.context.update_status("Pod", pod, MANAGER)
        self._unprepare(pod)

    def _sidecar_stopped(self, pod: Obj, container: str) -> None:
        """The ``Killing`` event of a sidecar the runtime stopped as the pod finished."""
        message = f"Stopping container {container}"
        origin = lifecycle.container_origin(pod, container)
        self.context.event(pod, "Normal", "Killing", message, lifecycle.COMPONENT, source=origin)

    def _unprepare(self, pod: Obj) -> None:
        """The pod's claims that no other pod still uses are unprepared (the kubelet's
        NodeUnprepareResources: a claim two pods share stays prepared, its MPS daemon
        running, until the last of them is done)."""
        for claim in self._claims(pod):
            if not self._used_by_others(claim, pod):
                self._unprepare_claim(claim["metadata"]["uid"])

    def _used_by_others(self, claim: Obj, pod: Obj) -> bool:
        namespace = pod["metadata"].get("namespace", "")
        for consumer in claims_api.reserved_for(claim):
            if consumer.get("uid") == pod["metadata"].get("uid"):
                continue
            other = self.context.get("Pod", namespace, str(consumer.get("name")))
            if (
                other is not None
                and other["metadata"].get("uid") == consumer.get("uid")
                and (other.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            ):
                return True
        return False

    def _remove(self, pod: Obj) -> None:
        """A deleted pod's processes are gone: remove the object (no grace left), as the
        kubelet confirms a graceful deletion."""
        metadata = pod["metadata"]
        options = {"gracePeriodSeconds": 0, "preconditions": {"uid": metadata.get("uid")}}
        with contextlib.suppress(Conflict):  # another pod of that name by now
            self.context.delete("Pod", metadata.get("namespace", ""), metadata["name"], options)

    def _forget(self, pod: Obj) -> None:
        """A removed pod's processes are gone: its device specs, logs and directories go."""
        if (pod.get("spec") or {}).get("nodeName"):
            self._unprepare(pod)
        self.runtime.forget(pod)


def _timestamp(moment: dt.datetime) -> str:
    return rfc3339(moment)


def _addresses() -> Obj:
    """The addresses a pod on an allot node reports (every node is this machine); new
    lists each time, as each pod's status owns its own."""
    return {
        "hostIP": "127.0.0.1",
        "podIP": "127.0.0.1",
        "podIPs": [{"ip": "127.0.0.1"}],
        "hostIPs": [{"ip": "127.0.0.1"}],
    }


def _running(pod: Obj, now_moment: dt.datetime) -> Obj:
    now = _timestamp(now_moment)
    status = pod.setdefault("status", {})
    status.update(
        {
            "phase": "Running",
            **_addresses(),
            "startTime": status.get("startTime") or now,
            "containerStatuses": [
                {
                    "name": c["name"],
                    "ready": True,
                    "restartCount": 0,
                    "image": c.get("image", ""),
                    "imageID": lifecycle.image_id(c.get("image", "")),
                    "containerID": lifecycle.container_id(pod, c["name"]),
                    "started": True,
                    "state": {"running": {"startedAt": now}},
                }
                for c in pod["spec"].get("containers") or []
            ],
        }
    )
    conditions = {c["type"]: c for c in status.get("conditions") or []}
    for kind in ("Initialized", "ContainersReady", "Ready", "PodScheduled"):
        conditions[kind] = {"type": kind, "status": "True", "lastTransitionTime": now}
    status["conditions"] = list(conditions.values())
    return pod


def go_duration(seconds: float) -> str:
    """A duration as Go's ``time.Duration`` prints it (``1s``, ``1.5s``, ``1m0s``,
    ``1h2m3s``), for the back-off in the kubelet's messages."""
    whole, fraction = divmod(round(seconds * 1000), 1000)
    text = f"{whole % 60}" + (f".{fraction:03d}".rstrip("0") if fraction else "") + "s"
    if whole >= 60:
        text = f"{whole // 60 % 60}m{text}"
    if whole >= 3600:
        text = f"{whole // 3600}h{text}"
    return text


def _set_readiness(pod: Obj, now: str) -> None:
    """``ContainersReady`` and ``Ready`` from the containers' ``ready``, as the kubelet
    works them out: False with ``ContainersNotReady`` naming the unready containers (in
    the spec's order); the transition time kept while the status does not change."""
    status = pod.setdefault("status", {})
    ready = {s["name"]: bool(s.get("ready")) for s in _entries(status)}
    names = [c["name"] for c in pod["spec"].get("containers") or []]
    if pod["spec"].get("initContainers"):  # the sidecars count, first
        names = [*initcontainers.sidecar_names(pod), *names]
    unready = [name for name in names if not ready.get(name, False)]
    value = "False" if unready else "True"
    conditions = {c["type"]: c for c in status.get("conditions") or []}
    for kind in ("ContainersReady", "Ready"):
        before = conditions.get(kind) or {}
        condition = {
            "type": kind,
            "status": value,
            "lastTransitionTime": before.get("lastTransitionTime", now)
            if before.get("status") == value
            else now,
        }
        if unready:
            condition["reason"] = "ContainersNotReady"
            condition["message"] = f"containers with unready status: [{' '.join(unready)}]"
        conditions[kind] = condition
    status["conditions"] = list(conditions.values())


def _set_conditions(pod: Obj, now: str) -> None:
    """The readiness conditions and, for a pod with init containers, ``Initialized``;
    a finished pod with init containers is not ready with ``PodCompleted`` or
    ``PodFailed``, as the kubelet's ``generateContainersReadyConditionForTerminalPhase``."""
    _set_readiness(pod, now)
    if not pod["spec"].get("initContainers"):
        return
    status = pod["status"]
    conditions = {c["type"]: c for c in status.get("conditions") or []}
    conditions["Initialized"] = initcontainers.initialized_condition(pod, now)
    phase = status.get("phase")
    if phase in ("Succeeded", "Failed"):
        reason = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        for kind in ("ContainersReady", "Ready"):
            before = conditions.get(kind) or {}
            since = (
                before.get("lastTransitionTime", now) if before.get("status") == "False" else now
            )
            conditions[kind] = {
                "type": kind,
                "status": "False",
                "reason": reason,
                "lastTransitionTime": since,
            }
    status["conditions"] = list(conditions.values())


def _entries(status: Obj) -> list[Obj]:
    """The container statuses of a pod, app containers' then init containers'."""
    entries = list(status.get("containerStatuses") or [])
    if status.get("initContainerStatuses"):
        entries.extend(status["initContainerStatuses"])
    return entries


def _cannot_run_entries(pod: Obj, containers: list[Obj], message: str, now: str) -> list[Obj]:
    """The statuses of containers of a pod one of which could not be started."""
    return [
        {
            "name": c["name"],
            "ready": False,
            "restartCount": 0,
            "image": c.get("image", ""),
            "imageID": "",
            "containerID": lifecycle.container_id(pod, c["name"]),
            "started": False,
            "state": {
                "terminated": {
                    "exitCode": 128,
                    "reason": "ContainerCannotRun",
                    "message": message,
                    "startedAt": now,
                    "finishedAt": now,
                    "containerID": lifecycle.container_id(pod, c["name"]),
                }
            },
        }
        for c in containers
    ]


def _config_errors(pod: Obj, lookup: SourceLookup) -> dict[str, str]:
    """Per container whose environment cannot be made: the kubelet's message."""
    failures = {}
    spec_ = pod["spec"]
    for spec in [*(spec_.get("initContainers") or []), *(spec_.get("containers") or [])]:
        if not names_sources(spec):
            continue  # literal values and the downward API cannot fail
        try:
            container_environment(spec, pod, {}, lookup)
        except ContainerConfigError as err:
            failures[spec["name"]] = str(err)
    return failures


def _shown_config_errors(pod: Obj) -> dict[str, str]:
    """The configuration failures the pod's status shows now, per container."""
    shown = {}
    for status in _entries(pod.get("status") or {}):
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") == CONFIG_ERROR:
            shown[status["name"]] = str(waiting.get("message", ""))
    return shown


def _waiting_for_config(pod: Obj, failures: dict[str, str], now_moment: dt.datetime) -> Obj:
    """A Pending pod whose failing containers wait with ``CreateContainerConfigError``
    (the others with ``ContainerCreating``: allot starts a pod's containers together)."""
    now = _timestamp(now_moment)
    containers = pod["spec"].get("containers") or []
    status = pod.setdefault("status", {})
    status.update(
        {
            "phase": "Pending",
            **_addresses(),
            "startTime": status.get("startTime") or now,
            "containerStatuses": [
                {
                    "name": c["name"],
                    "ready": False,
                    "restartCount": 0,
                    "image": c.get("image", ""),
                    "imageID": "",
                    "started": False,
                    "state": {"waiting": _waiting_state(failures.get(c["name"]))},
                }
                for c in containers
            ],
        }
    )
    init_containers = pod["spec"].get("initContainers")
    if init_containers:  # every container waits PodInitializing, but those failing
        default = initcontainers.POD_INITIALIZING
        status["initContainerStatuses"] = [
            {**entry, "state": {"waiting": _waiting_state(failures.get(entry["name"]), default)}}
            for entry in map(initcontainers.waiting_entry, init_containers)
        ]
        for entry in status["containerStatuses"]:
            entry["state"] = {"waiting": _waiting_state(failures.get(entry["name"]), default)}
        _set_conditions(pod, now)
        return pod
    conditions = {c["type"]: c for c in status.get("conditions") or []}
    conditions["Initialized"] = {"type": "Initialized", "status": "True", "lastTransitionTime": now}
    status["conditions"] = list(conditions.values())
    _set_readiness(pod, now)  # every container waits: not ready
    return pod


def _waiting_state(message: str | None, default: str = "ContainerCreating") -> Obj:
    if message is None:
        return {"reason": default}
    return {"reason": CONFIG_ERROR, "message": message}


def container_requests(pod: Obj) -> dict[str, list[tuple[str, str | None]]]:
    """Per container (init containers too): the (claim name, request) pairs whose devices
    it gets, as the kubelet's ``GetResources``: each ``resources.claims`` entry naming a
    pod claim, with its ``request`` (None: every device of the claim); and for the claim
    behind extended resources, the requests ``extendedResourceClaimStatus.requestMappings``
    maps to the container for an extended resource it requests (a non-zero amount)."""
    names = claims_api.pod_claim_names(pod)
    extended = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    mappings = extended.get("requestMappings") or []
    result = {}
    spec = pod["spec"]
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        resources = container.get("resources") or {}
        references: list[tuple[str, str | None]] = [
            (names[r["name"]], r.get("request") or None)
            for r in resources.get("claims") or []
            if r.get("name") in names
        ]
        asked = resources.get("requests") or {}
        if "" in names:
            references += [
                (names[""], str(m.get("requestName")))
                for m in mappings
                if m.get("containerName") == container["name"]
                and Quantity.parse(str(asked.get(m.get("resourceName"), 0))).sign() != 0
            ]
        result[container["name"]] = references
    return result


def _serves(result: Obj, request: str | None) -> bool:
    """Whether an allocation result is for ``request`` (None: any): a ``firstAvailable``
    request's result names its subrequest (``<request>/<subrequest>``) and belongs to the
    request, as the driver reports its request names to the kubelet."""
    if request is None:
        return True
    return str(result.get("request") or "").split("/")[0] == request


def _prepared_attributes(
    published: dict[tuple[str, str, str], dict[str, str]], result: Obj
) -> dict[str, str]:
    """The published attributes of an allocated device as the container sees it once
    prepared: a MIG device the driver creates at prepare (DynamicMIG, published without
    ``uuid``) has the UUID NVML gives it; an unpublished device is known by its name."""
    attributes = published.get(_result_key(result))
    if attributes is None:
        return {"uuid": str(result.get("device"))}
    if attributes.get("type") == "mig" and not attributes.get("uuid"):
        uuid = created_mig_uuid(attributes.get("parentUUID", ""), str(result.get("device")))
        attributes = {**attributes, "uuid": uuid}
    return attributes


def _refusal(claim: Obj, message: str) -> str:
    """The kubelet's message of a claim its driver refused to prepare."""
    metadata = claim["metadata"]
    return (
        f"error preparing devices for claim {metadata.get('namespace')}/{metadata['name']}:"
        f"{metadata['uid']}: {message}"
    )


def _configured(claim: Obj) -> bool:
    """Whether the driver has anything to apply: configs, or devices shared by capacity."""
    devices = _allocated_devices(claim)
    return bool(devices.get("config")) or any(r.get("shareID") for r in _results(claim))


def _allocated_devices(claim: Obj) -> Obj:
    """``status.allocation.devices`` of a claim (empty when not allocated)."""
    return dict(((claim.get("status") or {}).get("allocation") or {}).get("devices") or {})


def _results(claim: Obj) -> list[Obj]:
    return list(_allocated_devices(claim).get("results") or [])


def _prepare_failed(claim: Obj, reason: str) -> PrepareError:
    """The kubelet's words for a claim whose devices the driver failed to prepare."""
    return PrepareError(_refusal(claim, f"prepare devices failed: {reason}"))


def _result_key(result: Obj) -> tuple[str, str, str]:
    return (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))


def _pools_of(claims: list[Obj]) -> set[tuple[str, str]]:
    """The (driver, pool) pairs the claims' allocated devices come from."""
    return {(str(r.get("driver")), str(r.get("pool"))) for c in claims for r in _results(c)}


def _published_devices(
    slices: list[Obj], pools: set[tuple[str, str]]
) -> dict[tuple[str, str, str], dict[str, str]]:
    """(driver, pool, device) to the device's string attributes (``uuid``, ``type``,
    ``productName``, ``parentUUID``, ``profile``, ...), for the slices of ``pools``."""
    published: dict[tuple[str, str, str], dict[str, str]] = {}
    for slice_ in slices:
        spec = slice_.get("spec") or {}
        pool = str((spec.get("pool") or {}).get("name"))
        if (str(spec.get("driver")), pool) not in pools:
            continue
        for device in spec.get("devices") or []:
            attributes = {
                name: str(value["string"])
                for name, value in (device.get("attributes") or {}).items()
                if "string" in value
            }
            published[(str(spec.get("driver")), pool, str(device["name"]))] = attributes
    return published
