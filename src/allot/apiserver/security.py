"""TLS material in the data directory: the CA and the loopback server certificate.

On first start the server creates a CA and a server certificate for ``127.0.0.1`` and
``localhost`` (subjectAltName); the key is written with mode 0600. Bearer tokens and
kubeconfigs are the registry's (:mod:`allot.registry.clusters`). Called by
:mod:`allot.apiserver.server` when it prepares a data directory.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: a process that never serves skips cryptography
    from cryptography import x509

from allot.registry.clusters import write_private

VALIDITY = dt.timedelta(days=3650)


@dataclass(frozen=True)
class TLSFiles:
    ca_cert: Path
    server_cert: Path
    server_key: Path


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
    write_private(
        files.server_key,
        server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    return files
