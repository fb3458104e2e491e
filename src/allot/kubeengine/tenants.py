"""Tenant control planes on the real engine: a kube-apiserver and a kube-controller-manager
per tenant, on loopback, as vCluster builds a virtual cluster's control plane.

``allot tenant create NAME`` on a data directory of ``allot up --engine kubernetes``
records the tenant (the Tenant document its values files define, validated as the
embedded engine's API server validates it) in ``kube/tenants/NAME/tenant.json``
(:func:`request_create`). The running ``allot up`` owns the processes: each turn of its
watch loop (:meth:`TenantPlanes.reconcile`, on its main thread, so that the components'
parent-death signal follows allot) starts what a recorded tenant lacks without waiting on
it, so that tenants start side by side. A tenant has:

* its own storage: the host's etcd under the key prefix ``/tenants/NAME`` (the host keeps
  ``/registry``), opened with the host's etcd client certificate;
* its own certificates (:func:`allot.kubeengine.pki.ensure_tenant`), ServiceAccount
  issuer (``https://NAME.tenant-NAME.svc``, where vCluster's Service would answer) and
  signing key, and administrator token (``tokens.json``, user ``system:allot:NAME``);
* its own loopback port, kept across restarts while it is free, and its kubeconfig in
  ``kubeconfigs/NAME.yaml`` (context ``allot-NAME``), as the embedded engine writes it;
* kube-controller-manager with vCluster's controller list; no scheduler and no nodes;
* on the host: the namespace ``tenant-NAME`` labelled ``allot.dev/tenant``, its entitlement
  params, the shared ValidatingAdmissionPolicies with its bindings, and its ResourceQuota
  (:mod:`allot.tenancy.entitlement`: the objects the embedded engine's tenant controller
  and ``allot render`` make), its params following the host's DeviceClasses (read again
  every few seconds: a class relabelled into or out of the entitlement is usable, or
  refused by the policies, from then on);
* in its own API server, once ready: the same claims policy, bound to every namespace of
  the tenant's cluster, with the same params in its ``allot-system``
  (:func:`allot.tenancy.entitlement.tenant_side_binding`), so a claim for a class outside
  the entitlement is refused in the tenant's own request with the host's message.

The up process writes each tenant's ``status.json``: the Tenant status (phase ``Pending``,
``Ready`` or ``Unhealthy``, server, namespace, entitled classes, a Ready condition) and
the PIDs. A component that exits makes the tenant Unhealthy, naming the component, its
exit and its log's last lines, and stops the tenant's other processes; the host and the
other tenants go on, and the next ``allot up`` starts it again on the same storage.
``allot tenant delete`` marks the tenant (``deleting``); up stops its processes by PID,
deletes its etcd keys (DeleteRange over the prefix, through etcd's JSON gateway), its host
objects, token, kubeconfig and directory. Called by :mod:`allot.cli.kubeup` (the planes)
and :mod:`allot.cli.tenant` (requests and records).
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import shutil
import ssl
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from allot.api.tenancy import Tenant
from allot.apiserver.server import bind, free_port
from allot.kube.client import Client
from allot.kube.errors import KubeError, KubeNotFound
from allot.kubeengine import components, pki
from allot.kubeengine.cluster import RealCluster, default_account, healthy, trust
from allot.kubeengine.components import Layout, Role
from allot.kubeengine.processes import ComponentFailed, Supervisor
from allot.kubeengine.tenantsync import RealTenantSync
from allot.registry import kubeconfigs
from allot.registry.clusters import Tokens
from allot.registry.kubeconfigs import own_context
from allot.registry.rbac.identity import cluster_admin
from allot.tenancy import entitlement
from allot.tenancy.names import PLATFORM_NAMESPACE, host_namespace
from allot.types import Obj, rfc3339, utc_now

TENANTS_DIR = "tenants"
PREFIX_ROOT = "/tenants"
PENDING, READY, UNHEALTHY = "Pending", "Ready", "Unhealthy"
MANAGER = "allot-tenant-controller"  # the field manager of the host objects, as embedded
STAGE_COMPONENTS = {"apiserver": "kube-apiserver", "manager": "kube-controller-manager"}
ENTITLEMENT_SECONDS = 5.0  # how often the host's DeviceClasses are read again
START_SECONDS = 180.0  # a cold kube-apiserver on a busy 2-core machine takes a while
ETCD_SECONDS = 30.0


class TenantRecordError(Exception):
    """A tenant request the records refuse (one exists, none exists)."""


@dataclass(frozen=True)
class TenantLayout(Layout):
    """Where one tenant's files live: ``kube/tenants/NAME`` of the data directory."""

    name: str = ""

    @property
    def root(self) -> Path:
        return self.data_dir / "kube" / TENANTS_DIR / self.name

    @property
    def pki_dir(self) -> Path:
        return self.root / "pki"

    @property
    def record(self) -> Path:
        return self.root / "tenant.json"

    @property
    def status_file(self) -> Path:
        return self.root / "status.json"

    @property
    def ports_file(self) -> Path:
        return self.root / "ports.json"

    @property
    def deleting(self) -> Path:
        return self.root / "deleting"

    @property
    def kubeconfig_path(self) -> Path:
        return self.data_dir / "kubeconfigs" / f"{self.name}.yaml"


def etcd_prefix(name: str) -> str:
    return f"{PREFIX_ROOT}/{name}"


def issuer(name: str) -> str:
    return f"https://{name}.{host_namespace(name)}.svc"


def _write_json(path: Path, value: object) -> None:
    """Atomically: the CLI reads these files while ``allot up`` writes them."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w") as stream:
        json.dump(value, stream, indent=2)
    os.replace(temporary, path)


def _read_json(path: Path) -> Obj | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


# The requests and records (the CLI's side).


def tenant_names(data_dir: Path) -> list[str]:
    directory = data_dir / "kube" / TENANTS_DIR
    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir() if (p / "tenant.json").exists())


def request_create(data_dir: Path, tenant: Obj) -> None:
    """Record ``tenant`` for the running ``allot up`` to start (TenantRecordError: exists)."""
    layout = TenantLayout(data_dir, tenant["metadata"]["name"])
    if layout.record.exists():
        what = "is being deleted" if layout.deleting.exists() else "already exists"
        raise TenantRecordError(f'tenants.allot.dev "{layout.name}" {what}')
    layout.root.mkdir(parents=True, exist_ok=True)
    stamped = {
        **tenant,
        "metadata": {**tenant["metadata"], "creationTimestamp": rfc3339(utc_now())},
    }
    _write_json(layout.record, stamped)


def request_delete(data_dir: Path, name: str) -> None:
    layout = TenantLayout(data_dir, name)
    if not layout.record.exists():
        raise TenantRecordError(f'tenants.allot.dev "{name}" not found')
    layout.deleting.touch()


def recorded(data_dir: Path, name: str) -> Obj | None:
    """The tenant as ``allot tenant list`` shows it (spec and status), None when absent."""
    layout = TenantLayout(data_dir, name)
    tenant = _read_json(layout.record)
    if tenant is None:
        return None
    written = _read_json(layout.status_file) or {}
    status = dict(written.get("status") or {"phase": PENDING})
    if layout.deleting.exists():
        status["phase"] = "Terminating"
    return {**tenant, "status": status}


def recorded_pids(data_dir: Path, name: str) -> dict[str, int]:
    written = _read_json(TenantLayout(data_dir, name).status_file) or {}
    return {str(k): int(v) for k, v in (written.get("pids") or {}).items()}


# The planes (the up process's side).


@dataclass
class TenantPlane:
    """One tenant's processes and how far its start has come."""

    layout: TenantLayout
    tenant: Tenant
    token: str
    apiserver_port: int
    manager_port: int
    supervisor: Supervisor = field(default_factory=Supervisor)
    stage: str = "apiserver"  # then "manager", READY, UNHEALTHY
    started: float = field(default_factory=time.monotonic)
    entitled: list[str] = field(default_factory=list)
    params: Obj = field(default_factory=dict)  # the entitlement ConfigMap last applied
    condition: tuple[str, str, str] = (PENDING, "Starting", "")  # phase, reason, message

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @cached_property
    def keys(self) -> pki.Pki:
        return pki.ensure_tenant(self.layout.pki_dir)

    @cached_property
    def ca(self) -> ssl.SSLContext:
        return trust(self.keys.ca.cert)


class TenantPlanes:
    """Every recorded tenant's control plane, kept by ``allot up``'s loop."""

    def __init__(self, cluster: RealCluster, sync: RealTenantSync | None = None) -> None:
        self.cluster = cluster
        self.sync = sync
        self.planes: dict[str, TenantPlane] = {}
        self._refreshed = time.monotonic()
        self._said: set[str] = set()

    @property
    def data_dir(self) -> Path:
        return self.cluster.data_dir

    def reconcile(self) -> None:
        """Start new tenants, advance starting ones, notice exits, carry out deletions,
        and every ``ENTITLEMENT_SECONDS`` follow the host's DeviceClasses. A host or etcd
        that does not answer is said once on stderr and tried again on the next turn."""
        for name in tenant_names(self.data_dir):
            try:
                self._reconcile_one(TenantLayout(self.data_dir, name))
            except (KubeError, OSError) as err:
                self._complain(f"tenant {name}: {err}")
        if time.monotonic() - self._refreshed > ENTITLEMENT_SECONDS:
            try:
                self._follow_classes()
            except (KubeError, OSError) as err:
                self._complain(f"tenants' entitlements: {err}")
            self._refreshed = time.monotonic()

    def _reconcile_one(self, layout: TenantLayout) -> None:
        plane = self.planes.get(layout.name)
        if layout.deleting.exists():
            self._delete(layout, plane)
        elif plane is None:
            self.planes[layout.name] = self._start(layout)
        else:
            self._advance(plane)

    def _complain(self, message: str) -> None:
        if message not in self._said:
            self._said.add(message)
            print(f"warning: {message} (retrying)", file=sys.stderr, flush=True)

    def stop(self) -> None:
        for plane in self.planes.values():
            plane.supervisor.stop()
        self.planes.clear()

    def _start(self, layout: TenantLayout) -> TenantPlane:
        record = _read_json(layout.record) or {}
        tenant = Tenant.from_wire(record)
        token = Tokens(self.data_dir / "tokens.json").ensure(layout.name)
        apiserver_port, manager_port = _ports(layout)
        plane = TenantPlane(layout, tenant, token, apiserver_port, manager_port)
        components.write_access(layout, plane.keys, plane.url, ("kube-controller-manager",))
        components.write_token_file(layout, cluster_admin(layout.name), token)
        try:
            plane.entitled = self._host_objects(plane)
        except KubeError as err:
            self._fail(plane, f"the host refused the tenant's objects: {err}")
            return plane
        storage = components.host_storage(self.cluster.keys, self.cluster.ports)
        storage = components.Storage(
            storage.url, storage.ca, storage.client, etcd_prefix(layout.name)
        )
        role = Role(issuer=issuer(layout.name), tenant=True)
        command = components.apiserver(layout, plane.keys, apiserver_port, storage, role)
        self._run(plane, "kube-apiserver", command)
        self._write_status(plane, PENDING, "Starting", "kube-apiserver is starting")
        return plane

    def _run(self, plane: TenantPlane, name: str, arguments: list[str]) -> None:
        binary = str(self.cluster.binaries[name])
        plane.supervisor.start(name, [binary, *arguments], plane.layout.log(name))

    def _advance(self, plane: TenantPlane) -> None:
        if plane.stage == UNHEALTHY:
            return
        try:
            plane.supervisor.check()
        except ComponentFailed as err:
            self._fail(plane, str(err))
            return
        if plane.stage == READY:
            return
        if time.monotonic() - plane.started > START_SECONDS:
            waited = STAGE_COMPONENTS[plane.stage]
            self._fail(plane, f"{waited} did not become ready within {START_SECONDS:.0f}s")
        elif plane.stage == "apiserver" and healthy(
            plane.apiserver_port, "/readyz", plane.ca, plane.token
        ):
            arguments = components.controller_manager(
                plane.layout,
                plane.keys,
                plane.manager_port,
                components.Options(),  # client-go's default request rates
                components.TENANT_CONTROLLERS,
            )
            self._run(plane, "kube-controller-manager", arguments)
            plane.stage = "manager"
        elif (
            plane.stage == "manager"
            and healthy(plane.manager_port, "/healthz", plane.ca)
            and default_account(plane.apiserver_port, plane.ca, plane.token)
        ):
            self._ready(plane)

    def _ready(self, plane: TenantPlane) -> None:
        credentials = kubeconfigs.Credentials(
            plane.url, plane.keys.ca.cert, {plane.layout.name: plane.token}, cluster_paths=False
        )
        kubeconfigs.write(plane.layout.kubeconfig_path, plane.layout.name, credentials)
        self._tenant_side(
            plane,
            [
                _platform_namespace(),
                plane.params,
                entitlement.claims_policy(),
                entitlement.tenant_side_binding(plane.layout.name),
            ],
        )
        plane.stage = READY
        if self.sync is not None:
            self.sync.add(plane.tenant, plane.entitled)
        self._write_status(
            plane, READY, "ControlPlaneReady", "kube-apiserver and kube-controller-manager serve"
        )

    def _tenant_side(self, plane: TenantPlane, objects: list[Obj]) -> None:
        """Apply ``objects`` in the tenant's own API server, as its administrator."""
        client = Client.from_kubeconfig(
            plane.layout.kubeconfig_path, own_context(plane.layout.name)
        )
        try:
            for obj in objects:
                client.apply(obj, MANAGER, force=True)
        finally:
            client.close()

    def _fail(self, plane: TenantPlane, message: str) -> None:
        if self.sync is not None and plane.stage == READY:
            self.sync.remove(plane.layout.name)
        plane.supervisor.stop()
        plane.stage = UNHEALTHY
        self._write_status(plane, UNHEALTHY, "ControlPlaneDown", message)

    def _write_status(self, plane: TenantPlane, phase: str, reason: str, message: str) -> None:
        name = plane.layout.name
        plane.condition = (phase, reason, message)
        status: Obj = {
            "phase": phase,
            "namespace": host_namespace(name),
            "server": plane.url,
            "entitledDeviceClasses": plane.entitled,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if phase == READY else "False",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": rfc3339(utc_now()),
                }
            ],
        }
        _write_json(plane.layout.status_file, {"status": status, "pids": plane.supervisor.pids()})

    def _host_objects(self, plane: TenantPlane) -> list[str]:
        """Apply the tenant's host objects; returns its entitled classes."""
        name = plane.layout.name
        client = self.cluster.client()
        try:
            params = _params(plane, client.list("resource.k8s.io/v1", "DeviceClass"))
            objects = [
                entitlement.namespace(name),
                _platform_namespace(),
                params,
                entitlement.claims_policy(),
                entitlement.pods_policy(),
                entitlement.binding(name, entitlement.CLAIMS_POLICY),
                entitlement.binding(name, entitlement.PODS_POLICY),
            ]
            quota = entitlement.quota(plane.tenant)
            for obj in [*objects, *([quota] if quota else [])]:
                client.apply(obj, MANAGER, force=True)
        finally:
            client.close()
        plane.params = params
        return entitlement.entitled_in_params(params)

    def _follow_classes(self) -> None:
        """New params for the tenants whose entitlement the host's classes changed (the
        policies read them at once: a class that leaves is refused from then on)."""
        planes = [plane for plane in self.planes.values() if plane.stage != UNHEALTHY]
        if not planes:
            return
        client = self.cluster.client()
        try:
            classes = client.list("resource.k8s.io/v1", "DeviceClass")
            for plane in planes:
                params = _params(plane, classes)
                if params == plane.params:
                    continue
                client.apply(params, MANAGER, force=True)
                if plane.stage == READY:
                    self._tenant_side(plane, [params])
                plane.params = params
                plane.entitled = entitlement.entitled_in_params(params)
                if self.sync is not None and plane.stage == READY:
                    self.sync.entitle(plane.tenant, plane.entitled)
                self._write_status(plane, *plane.condition)
        finally:
            client.close()

    def _delete(self, layout: TenantLayout, plane: TenantPlane | None) -> None:
        if self.sync is not None and plane is not None and plane.stage == READY:
            self.sync.remove(layout.name)
        if plane is not None:
            plane.supervisor.stop()
            self.planes.pop(layout.name, None)
        self._delete_storage(layout.name)
        self._delete_host_objects(layout.name)
        Tokens(self.data_dir / "tokens.json").remove(layout.name)
        layout.kubeconfig_path.unlink(missing_ok=True)
        shutil.rmtree(layout.root, ignore_errors=True)

    def _delete_storage(self, name: str) -> None:
        """DeleteRange of every key under the tenant's prefix, through etcd's JSON gateway."""
        prefix = f"{etcd_prefix(name)}/".encode()
        end = prefix[:-1] + bytes([prefix[-1] + 1])
        body = {
            "key": base64.b64encode(prefix).decode(),
            "range_end": base64.b64encode(end).decode(),
        }
        etcd_request(self.cluster.keys, self.cluster.ports.etcd_client, "/v3/kv/deleterange", body)

    def _delete_host_objects(self, name: str) -> None:
        client = self.cluster.client()
        try:
            for api_version, kind, object_name, namespace in (
                ("v1", "Namespace", host_namespace(name), None),
                ("v1", "ConfigMap", entitlement.params_name(name), PLATFORM_NAMESPACE),
                *(
                    (
                        "admissionregistration.k8s.io/v1",
                        "ValidatingAdmissionPolicyBinding",
                        f"{policy}.{name}",
                        None,
                    )
                    for policy in (entitlement.CLAIMS_POLICY, entitlement.PODS_POLICY)
                ),
            ):
                with contextlib.suppress(KubeNotFound):
                    client.delete(api_version, kind, object_name, namespace)
        finally:
            client.close()


def _platform_namespace() -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PLATFORM_NAMESPACE}}


def _params(plane: TenantPlane, classes: list[Obj]) -> Obj:
    """The tenant's entitlement ConfigMap for the host's ``classes``."""
    entitled = entitlement.entitled_classes(plane.tenant, classes)
    forbidden = entitlement.forbidden_extended_names(entitled, classes)
    return entitlement.params(plane.layout.name, entitled, forbidden)


def etcd_request(keys: pki.Pki, port: int, path: str, body: Obj) -> Obj:
    """One call of the host etcd's JSON gateway (``/v3/kv/range``, ``/v3/kv/deleterange``)
    on loopback ``port``, as kube-apiserver opens etcd (``keys``: the host's)."""
    tls = trust(keys.etcd_ca.cert)
    tls.load_cert_chain(keys.apiserver_etcd_client.cert, keys.apiserver_etcd_client.key)
    connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=ETCD_SECONDS, context=tls)
    try:
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = json.loads(response.read() or b"{}")
    finally:
        connection.close()
    if response.status != 200:
        raise KubeError(f"etcd {path}: {response.status} {answer}")
    return answer if isinstance(answer, dict) else {}


def _ports(layout: TenantLayout) -> tuple[int, int]:
    """The tenant's API server and controller-manager ports: the recorded ones while they
    are free (its kubeconfig stays valid across restarts), else new free ones."""
    recorded_ports = _read_json(layout.ports_file) or {}
    chosen: list[int] = []
    for key in ("apiserver", "controllerManager"):
        port = int(recorded_ports.get(key) or 0)
        if not port or not _free(port) or port in chosen:
            port = free_port()
        chosen.append(port)
    _write_json(layout.ports_file, {"apiserver": chosen[0], "controllerManager": chosen[1]})
    return chosen[0], chosen[1]


def _free(port: int) -> bool:
    try:
        bind("127.0.0.1", port).close()
    except OSError:
        return False
    return True
