"""The real engine's certificates and keys, made once per data directory as kubeadm lays
them out.

A cluster CA (``pki/ca.crt``, the file the kubeconfigs name, as the embedded engine's)
signs kube-apiserver's serving certificate (loopback and the ``kubernetes`` Service's
names), the client certificates of kube-controller-manager (``system:kube-controller-
manager``), kube-scheduler (``system:kube-scheduler``) and kwok (``system:masters``: it
writes every node's and pod's status), and the two controllers' own serving certificates
(their ``/healthz`` is how the engine knows they are up). etcd has a CA of its own, as in
kubeadm, so that no cluster certificate opens etcd: it signs etcd's serving and peer
certificate and kube-apiserver's etcd client certificate. A front-proxy CA and its
client certificate serve the aggregation layer's request-header authentication (which
kube-controller-manager and kube-scheduler read from the
``extension-apiserver-authentication`` ConfigMap). ServiceAccount tokens are signed
with ``sa.key`` (``sa.pub`` verifies them). Keys are written with mode 0600; files that
exist are kept, so a restart keeps every token and kubeconfig valid. Called by
:mod:`allot.kubeengine.cluster`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from allot.apiserver.security import (
    LOOPBACK_NAMES,
    certificate_pem,
    issue,
    key_pem,
    new_ca,
)
from allot.registry.clusters import write_private

if TYPE_CHECKING:  # imported where used, as in allot.apiserver.security
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

SERVICE_IP = "10.96.0.1"  # the first address of the service range (components.SERVICE_CIDR)
APISERVER_NAMES = (
    *LOOPBACK_NAMES,
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    SERVICE_IP,
)
FRONT_PROXY_CLIENT = "front-proxy-client"
CLIENTS = {
    "kube-controller-manager": ("system:kube-controller-manager", ()),
    "kube-scheduler": ("system:kube-scheduler", ()),
    "kwok": ("kwok", ("system:masters",)),
}
TENANT_CLIENTS = {"kube-controller-manager": CLIENTS["kube-controller-manager"]}


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    directory: Path

    @property
    def ca(self) -> Pair:
        return Pair(self.directory / "ca.crt", self.directory / "ca.key")

    @property
    def apiserver(self) -> Pair:
        return self._pair("apiserver")

    @property
    def etcd_ca(self) -> Pair:
        return Pair(self.directory / "etcd" / "ca.crt", self.directory / "etcd" / "ca.key")

    @property
    def etcd_server(self) -> Pair:
        return Pair(self.directory / "etcd" / "server.crt", self.directory / "etcd" / "server.key")

    @property
    def apiserver_etcd_client(self) -> Pair:
        return self._pair("apiserver-etcd-client")

    @property
    def front_proxy_ca(self) -> Pair:
        return self._pair("front-proxy-ca")

    @property
    def front_proxy_client(self) -> Pair:
        return self._pair("front-proxy-client")

    @property
    def service_account_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def service_account_public_key(self) -> Path:
        return self.directory / "sa.pub"

    def client(self, component: str) -> Pair:
        """The client certificate a component signs in to kube-apiserver with."""
        return self._pair(f"{component}-client")

    def serving(self, component: str) -> Pair:
        """A controller's serving certificate (its /healthz)."""
        return self._pair(f"{component}-serving")

    def _pair(self, name: str) -> Pair:
        return Pair(self.directory / f"{name}.crt", self.directory / f"{name}.key")


def ensure(directory: Path) -> Pki:
    """Make what ``directory`` lacks (everything, the first time); returns the layout."""
    pki = Pki(directory)
    if not all(path.exists() for path in _files(pki, _host_pairs(pki))):
        _make_etcd(pki)
        _make_cluster(pki, CLIENTS, ("kube-controller-manager", "kube-scheduler"))
    return pki


def ensure_tenant(directory: Path) -> Pki:
    """A tenant control plane's own certificates (:mod:`allot.kubeengine.tenants`): its CA,
    kube-apiserver's serving certificate, the front proxy's, kube-controller-manager's client
    and serving certificates and its ServiceAccount signing key; no etcd CA (a tenant's
    kube-apiserver opens the host's etcd with the host's etcd client certificate)."""
    pki = Pki(directory)
    if not all(path.exists() for path in _files(pki, _tenant_pairs(pki))):
        _make_cluster(pki, TENANT_CLIENTS, ("kube-controller-manager",))
    return pki


def _tenant_pairs(pki: Pki) -> list[Pair]:
    pairs = [pki.ca, pki.apiserver, pki.front_proxy_ca, pki.front_proxy_client]
    pairs += [pki.client(name) for name in TENANT_CLIENTS]
    return [*pairs, pki.serving("kube-controller-manager")]


def _host_pairs(pki: Pki) -> list[Pair]:
    pairs = [pki.ca, pki.apiserver, pki.etcd_ca, pki.etcd_server, pki.apiserver_etcd_client]
    pairs += [pki.front_proxy_ca, pki.front_proxy_client]
    pairs += [pki.client(name) for name in CLIENTS]
    pairs += [pki.serving(name) for name in ("kube-controller-manager", "kube-scheduler")]
    return pairs


def _files(pki: Pki, pairs: list[Pair]) -> list[Path]:
    files = [path for pair in pairs for path in (pair.cert, pair.key)]
    return [*files, pki.service_account_key, pki.service_account_public_key]


def _make_etcd(pki: Pki) -> None:
    etcd_ca = new_ca("etcd-ca")
    _write(pki.etcd_ca, etcd_ca)
    _write(
        pki.etcd_server,
        issue(etcd_ca, "etcd", names=LOOPBACK_NAMES, usages=("server", "client")),
    )
    _write(
        pki.apiserver_etcd_client, issue(etcd_ca, "kube-apiserver-etcd-client", usages=("client",))
    )


def _make_cluster(
    pki: Pki, clients: dict[str, tuple[str, tuple[str, ...]]], serving: tuple[str, ...]
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca = new_ca("kubernetes")
    front_proxy_ca = new_ca("front-proxy-ca")
    _write(pki.ca, ca)
    _write(pki.front_proxy_ca, front_proxy_ca)
    _write(pki.front_proxy_client, issue(front_proxy_ca, FRONT_PROXY_CLIENT, usages=("client",)))
    _write(pki.apiserver, issue(ca, "kube-apiserver", names=APISERVER_NAMES))
    for component, (user, groups) in clients.items():
        _write(pki.client(component), issue(ca, user, organizations=groups, usages=("client",)))
    for component in serving:
        _write(pki.serving(component), issue(ca, component, names=LOOPBACK_NAMES))
    signing = ec.generate_private_key(ec.SECP256R1())
    write_private(pki.service_account_key, key_pem(signing))
    pki.service_account_public_key.write_bytes(
        signing.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


def _write(pair: Pair, made: tuple[ec.EllipticCurvePrivateKey, x509.Certificate]) -> None:
    key, cert = made
    pair.cert.parent.mkdir(parents=True, exist_ok=True)
    pair.cert.write_bytes(certificate_pem(cert))
    write_private(pair.key, key_pem(key))
