"""The command line and configuration of each real component, as a 1.36 cluster runs them.

The flags follow what kubeadm gives a control plane (and envtest and kwokctl on one
machine), on loopback only: etcd with TLS for clients and peers; kube-apiserver with TLS,
client certificates and a static bearer token for the host's administrator (the same
identity as the embedded engine's ``system:allot:host``), ``Node,RBAC`` authorization,
ServiceAccount token issuance, the admission plugins on by default in 1.36 plus
``NodeRestriction`` (kubeadm's), and the feature gates at their 1.36 defaults (the DRA beta
gates are on; ``resource.k8s.io/v1`` is served without a flag); kube-controller-manager
with every default controller and per-controller ServiceAccount credentials;
kube-scheduler from a KubeSchedulerConfiguration (both at client-go's default request rates,
unless a benchmark lifts them: :attr:`Options.unlimited_client_qps`); kwok managing the
fleet's nodes (label ``allot.dev/pool``) with stages written here: nodes keep the kubelet's
conditions (:data:`allot.driver.publisher.NODE_CONDITIONS`) and their lease, pods become
Running, Jobs' pods succeed after ``job_seconds`` as in the embedded engine's simulated
runtime, deleted pods go. Nothing here starts a process: :mod:`allot.kubeengine.cluster` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from allot.driver.publisher import NODE_CONDITIONS
from allot.kubeengine.pki import FRONT_PROXY_CLIENT, Pair, Pki
from allot.registry.clusters import write_private
from allot.registry.rbac.identity import UserInfo
from allot.types import Obj

SERVICE_CIDR = "10.96.0.0/12"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
ADMISSION_PLUGINS = ("NodeRestriction",)  # on top of 1.36's defaults, as kubeadm enables
POOL_LABEL = "allot.dev/pool"
NODE_HEARTBEAT_SECONDS = 60  # the stage re-posts conditions; the lease is renewed by kwok


@dataclass(frozen=True)
class Ports:
    """The loopback ports of one start: the API server's is the user's, the rest free ones."""

    apiserver: int
    etcd_client: int
    etcd_peer: int
    controller_manager: int
    scheduler: int
    kwok: int


@dataclass(frozen=True)
class Layout:
    """Where the real engine keeps its files inside a data directory."""

    data_dir: Path

    @property
    def root(self) -> Path:
        return self.data_dir / "kube"

    @property
    def etcd(self) -> Path:
        return self.root / "etcd"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def config(self) -> Path:
        return self.root / "config"

    @property
    def pki_dir(self) -> Path:
        return self.data_dir / "pki"

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    def kubeconfig(self, component: str) -> Path:
        return self.config / f"{component}.kubeconfig"


UNLIMITED_QPS, UNLIMITED_BURST = 5000, 10000
"""The client rate of a benchmark's kube-scheduler and kube-controller-manager (kwokctl's
``--disable-qps-limits``); a cluster's default is 50/100 and 20/30 requests per second."""


@dataclass(frozen=True)
class Options:
    """What a start may vary: fsync (tests only), the Jobs' simulated run time, and the
    controllers' client rate limits (lifted for benchmarks only)."""

    unsafe_no_fsync: bool = False
    job_seconds: float = 30.0
    unlimited_client_qps: bool = False


def etcd(layout: Layout, pki: Pki, ports: Ports, options: Options) -> list[str]:
    client = f"https://127.0.0.1:{ports.etcd_client}"
    peer = f"https://127.0.0.1:{ports.etcd_peer}"
    server = pki.etcd_server
    command = [
        "--name=allot",
        f"--data-dir={layout.etcd}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=allot={peer}",
        f"--cert-file={server.cert}",
        f"--key-file={server.key}",
        f"--trusted-ca-file={pki.etcd_ca.cert}",
        "--client-cert-auth=true",
        f"--peer-cert-file={server.cert}",
        f"--peer-key-file={server.key}",
        f"--peer-trusted-ca-file={pki.etcd_ca.cert}",
        "--peer-client-cert-auth=true",
        "--log-level=warn",
    ]
    if options.unsafe_no_fsync:
        command.append("--unsafe-no-fsync")
    return command


@dataclass(frozen=True)
class Storage:
    """Where a kube-apiserver keeps its objects: etcd's client URL, the CA and client
    certificate that open it, and the key prefix (the host's ``/registry``, upstream's
    default; a tenant's its own, :mod:`allot.kubeengine.tenants`)."""

    url: str
    ca: Path
    client: Pair
    prefix: str = "/registry"


def host_storage(pki: Pki, ports: Ports) -> Storage:
    """The host cluster's etcd, as the host's kube-apiserver (and its tenants') open it."""
    url = f"https://127.0.0.1:{ports.etcd_client}"
    return Storage(url, pki.etcd_ca.cert, pki.apiserver_etcd_client)


@dataclass(frozen=True)
class Role:
    """How one kube-apiserver differs by role: the host's, or a tenant's, as vCluster runs
    a virtual cluster's (RBAC alone, no nodes of its own so neither the Node authorizer nor
    NodeRestriction, no endpoints reconciler for its ``kubernetes`` Service)."""

    issuer: str = SERVICE_ACCOUNT_ISSUER
    tenant: bool = False


HOST = Role()


def apiserver(
    layout: Layout, pki: Pki, port: int, storage: Storage, role: Role = HOST
) -> list[str]:
    command = [
        f"--etcd-servers={storage.url}",
        f"--etcd-cafile={storage.ca}",
        f"--etcd-certfile={storage.client.cert}",
        f"--etcd-keyfile={storage.client.key}",
        f"--etcd-prefix={storage.prefix}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={pki.apiserver.cert}",
        f"--tls-private-key-file={pki.apiserver.key}",
        f"--client-ca-file={pki.ca.cert}",
        f"--token-auth-file={layout.config / 'tokens.csv'}",
        f"--service-account-issuer={role.issuer}",
        f"--service-account-key-file={pki.service_account_public_key}",
        f"--service-account-signing-key-file={pki.service_account_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        f"--cert-dir={layout.root / 'certs'}",
        f"--requestheader-client-ca-file={pki.front_proxy_ca.cert}",
        f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki.front_proxy_client.cert}",
        f"--proxy-client-key-file={pki.front_proxy_client.key}",
    ]
    if role.tenant:
        return [*command, "--authorization-mode=RBAC", "--endpoint-reconciler-type=none"]
    return [
        *command,
        "--authorization-mode=Node,RBAC",
        f"--enable-admission-plugins={','.join(ADMISSION_PLUGINS)}",
    ]


TENANT_CONTROLLERS = (
    "*,-nodeipam,-nodelifecycle,-persistentvolume-binder,-attachdetach,"
    "-persistentvolume-expander,-cloud-node-lifecycle,-ttl"
)
"""vCluster's controller list for a virtual cluster's kube-controller-manager: every
default controller but those that act on nodes and volumes the tenant does not own."""


def controller_manager(
    layout: Layout, pki: Pki, port: int, options: Options, controllers: str = "*"
) -> list[str]:
    kubeconfig = layout.kubeconfig("kube-controller-manager")
    serving = pki.serving("kube-controller-manager")
    limits = (
        [f"--kube-api-qps={UNLIMITED_QPS}", f"--kube-api-burst={UNLIMITED_BURST}"]
        if options.unlimited_client_qps
        else []
    )
    return [
        *limits,
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={serving.cert}",
        f"--tls-private-key-file={serving.key}",
        "--leader-elect=false",
        f"--controllers={controllers}",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={pki.service_account_key}",
        f"--root-ca-file={pki.ca.cert}",
        f"--cluster-signing-cert-file={pki.ca.cert}",
        f"--cluster-signing-key-file={pki.ca.key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
    ]


def scheduler(layout: Layout, pki: Pki, ports: Ports) -> list[str]:
    kubeconfig = layout.kubeconfig("kube-scheduler")
    serving = pki.serving("kube-scheduler")
    return [
        f"--config={layout.config / 'kube-scheduler.yaml'}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.scheduler}",
        f"--tls-cert-file={serving.cert}",
        f"--tls-private-key-file={serving.key}",
    ]


def kwok(layout: Layout, ports: Ports) -> list[str]:
    return [
        f"--kubeconfig={layout.kubeconfig('kwok')}",
        f"--config={layout.config / 'kwok.yaml'}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-label-selector={POOL_LABEL}",
        f"--server-address=127.0.0.1:{ports.kwok}",
        "--node-ip=127.0.0.1",
    ]


def write_configs(
    layout: Layout, pki: Pki, ports: Ports, admin: UserInfo, token: str, options: Options
) -> None:
    """The files the components read: their kubeconfigs, the token file, their configs."""
    server = f"https://127.0.0.1:{ports.apiserver}"
    write_access(layout, pki, server, ("kube-controller-manager", "kube-scheduler", "kwok"))
    write_token_file(layout, admin, token)
    connection: Obj = {"kubeconfig": str(layout.kubeconfig("kube-scheduler"))}
    if options.unlimited_client_qps:
        connection.update(qps=UNLIMITED_QPS, burst=UNLIMITED_BURST)
    scheduler_config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": connection,
        "leaderElection": {"leaderElect": False},
    }
    (layout.config / "kube-scheduler.yaml").write_text(yaml.safe_dump(scheduler_config))
    stages = kwok_stages(options.job_seconds)
    (layout.config / "kwok.yaml").write_text(yaml.safe_dump_all(stages, sort_keys=False))


def write_access(layout: Layout, pki: Pki, server: str, components: tuple[str, ...]) -> None:
    """Each component's kubeconfig: ``server``, trusted by the CA, with its client cert."""
    layout.config.mkdir(parents=True, exist_ok=True)
    layout.logs.mkdir(parents=True, exist_ok=True)
    for component in components:
        client = pki.client(component)
        config = component_kubeconfig(server, pki.ca.cert, client.cert, client.key)
        write_private(layout.kubeconfig(component), yaml.safe_dump(config).encode())


def write_token_file(layout: Layout, admin: UserInfo, token: str) -> None:
    """kube-apiserver's static token file: the administrator's bearer token."""
    groups = ",".join(group for group in admin.groups if group != "system:authenticated")
    line = f'{token},{admin.name},{admin.name},"{groups}"\n'
    write_private(layout.config / "tokens.csv", line.encode())


def component_kubeconfig(server: str, ca: Path, cert: Path, key: Path) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "allot", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [
            {"name": "allot", "user": {"client-certificate": str(cert), "client-key": str(key)}}
        ],
        "contexts": [{"name": "allot", "context": {"cluster": "allot", "user": "allot"}}],
        "current-context": "allot",
    }


def _stage(name: str, kind: str, selector: list[Obj], next_: Obj, delay_ms: int = 0) -> Obj:
    spec: Obj = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": selector},
    }
    if delay_ms:
        spec["delay"] = {"durationMilliseconds": delay_ms}
    spec["next"] = next_
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": spec,
    }


def _expression(key: str, operator: str, *values: str) -> Obj:
    expression: Obj = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    return expression


READY = '.status.conditions.[] | select( .type == "Ready" ) | .status'
NOT_DELETED = _expression(".metadata.deletionTimestamp", "DoesNotExist")


def _node_status() -> str:
    """The kubelet's conditions, posted now (their transition time kept from creation)."""
    conditions = "".join(
        f"- type: {kind}\n"
        f'  status: "{status}"\n'
        f"  reason: {reason}\n"
        f'  message: "{message}"\n'
        "  lastHeartbeatTime: {{ $now | Quote }}\n"
        "  lastTransitionTime: {{ $since | Quote }}\n"
        for kind, status, reason, message in NODE_CONDITIONS
    )
    return (
        "{{ $now := Now }}\n{{ $since := or .metadata.creationTimestamp $now }}\n"
        f"conditions:\n{conditions}phase: Running\n"
    )


POD_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
POD_RUNNING = (
    "{{ $now := Now }}\nconditions:\n"
    + "".join(
        f'- type: {kind}\n  status: "True"\n  lastTransitionTime: {{{{ $now | Quote }}}}\n'
        for kind in (*POD_CONDITIONS, "PodScheduled")
    )
    + """containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: ""
  ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
hostIP: 127.0.0.1
hostIPs:
- ip: 127.0.0.1
phase: Running
startTime: {{ $now | Quote }}
"""
)
"""A pod on a fleet node, Running with every container started (kwok's template language)."""

POD_SUCCEEDED = """{{ $now := Now }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: ""
  ready: false
  started: false
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      reason: Completed
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
{{ end }}
phase: Succeeded
"""
"""A Job's pod, its containers ended with status 0."""


def kwok_stages(job_seconds: float) -> list[Obj]:
    """How kwok plays the kubelet of the fleet's nodes (see the module's docstring)."""
    return [
        _stage(
            "allot-node-ready",
            "Node",
            [_expression(READY, "NotIn", "True")],
            {"statusTemplate": _node_status()},
        ),
        _stage(
            "allot-node-heartbeat",
            "Node",
            [_expression(READY, "In", "True")],
            {"statusTemplate": _node_status()},
            delay_ms=NODE_HEARTBEAT_SECONDS * 1000,
        ),
        _stage(
            "allot-pod-running",
            "Pod",
            [NOT_DELETED, _expression(".status.phase", "In", "Pending")],
            {"statusTemplate": POD_RUNNING},
        ),
        _stage(
            "allot-job-pod-succeeds",
            "Pod",
            [
                NOT_DELETED,
                _expression(".status.phase", "In", "Running"),
                _expression(".metadata.ownerReferences.[].kind", "In", "Job"),
            ],
            {"statusTemplate": POD_SUCCEEDED},
            delay_ms=int(job_seconds * 1000),
        ),
        _stage(
            "allot-pod-deleted",
            "Pod",
            [_expression(".metadata.deletionTimestamp", "Exists")],
            {"delete": True},
        ),
    ]
