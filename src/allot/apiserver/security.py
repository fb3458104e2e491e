"""TLS material, bearer tokens and kubeconfigs in the data directory.

On first start the server creates a CA and a server certificate for ``127.0.0.1`` and
``localhost`` (subjectAltName), and one random bearer token per cluster (the host's admin
token, later one per tenant). ``kubeconfig`` renders a file real kubectl and the official
Python client accept unchanged: the cluster URL carries the ``/clusters/<name>`` prefix.
Files holding secrets are written with mode 0600. Called by ``allot up`` and the server.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:  # imported where used: callers wanting only HOST_CLUSTER skip cryptography
    from cryptography import x509

HOST_CLUSTER = "host"
VALIDITY = dt.timedelta(days=3650)


@dataclass(frozen=True)
class TLSFiles:
    ca_cert: Path
    server_cert: Path
    server_key: Path


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def _name(common_name: str) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def ensure_tls(directory: Path) -> TLSFiles:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    files = TLSFiles(directory / "ca.crt", directory / "server.crt", directory / "server.key")
    if files.ca_cert.exists() and files.server_cert.exists() and files.server_key.exists():
        return files
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("allot-ca"))
        .issuer_name(_name("allot-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    names = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("::1")),
    ]
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("allot-apiserver"))
        .issuer_name(ca_cert.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    files.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.server_cert.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    _write_private(
        files.server_key,
        server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    return files


class Tokens:
    """Bearer tokens per cluster, persisted in ``tokens.json`` (mode 0600)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tokens: dict[str, str] = {}
        if path.exists():
            self._tokens = json.loads(path.read_text())

    def ensure(self, cluster: str) -> str:
        token = self._tokens.get(cluster)
        if token is None:
            token = secrets.token_urlsafe(32)
            self._tokens[cluster] = token
            _write_private(self.path, json.dumps(self._tokens, indent=2).encode())
        return token

    def cluster_for(self, token: str) -> str | None:
        """The cluster of a token; every known token is compared, in constant time."""
        found = None
        for cluster, known in self._tokens.items():
            if secrets.compare_digest(known.encode(), token.encode()):
                found = cluster
        return found

    def clusters(self) -> list[str]:
        return sorted(self._tokens)

    def remove(self, cluster: str) -> None:
        if self._tokens.pop(cluster, None) is not None:
            _write_private(self.path, json.dumps(self._tokens, indent=2).encode())


def kubeconfig(cluster: str, server: str, token: str, ca_cert: Path) -> str:
    context = f"allot-{cluster}"
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": context,
        "clusters": [
            {
                "name": context,
                "cluster": {
                    "server": f"{server}/clusters/{cluster}",
                    "certificate-authority": str(ca_cert.resolve()),
                },
            }
        ],
        "users": [{"name": context, "user": {"token": token}}],
        "contexts": [
            {
                "name": context,
                "context": {"cluster": context, "user": context, "namespace": "default"},
            }
        ],
        "preferences": {},
    }
    return yaml.safe_dump(document, sort_keys=False)


def write_kubeconfig(directory: Path, cluster: str, server: str, token: str, ca_cert: Path) -> Path:
    path = directory / "kubeconfigs" / f"{cluster}.yaml"
    _write_private(path, kubeconfig(cluster, server, token, ca_cert).encode())
    return path
