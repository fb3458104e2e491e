"""TLS material in the data directory: the CA and the loopback server certificate.

On first start the server creates a CA and a server certificate for ``127.0.0.1`` and
``localhost`` (subjectAltName); the key is written with mode 0600. Bearer tokens and
kubeconfigs are the registry's (:mod:`allot.registry.clusters`). Called by
:mod:`allot.apiserver.server` when it prepares a data directory; ``new_ca`` and ``issue``
also make the real engine's certificates (:mod:`allot.kubeengine.pki`).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: a process that never serves skips cryptography
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

from allot.registry.clusters import write_private

VALIDITY = dt.timedelta(days=3650)


@dataclass(frozen=True)
class TLSFiles:
    ca_cert: Path
    server_cert: Path
    server_key: Path


def _name(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def new_ca(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed certificate authority: its key and its certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
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
        .sign(key, hashes.SHA256())
    )
    return key, cert


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def issue(
    ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate],
    common_name: str,
    *,
    organizations: Sequence[str] = (),
    names: Sequence[str] = (),
    usages: Sequence[str] = ("server",),
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A key and a certificate signed by ``ca``: subject CN (and O, a Kubernetes user's
    groups), subjectAltNames ``names`` (IP addresses or DNS names), ``usages`` of
    ``server`` and ``client``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca_key, ca_cert = ca
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    key = ec.generate_private_key(ec.SECP256R1())
    purposes = {
        "server": ExtendedKeyUsageOID.SERVER_AUTH,
        "client": ExtendedKeyUsageOID.CLIENT_AUTH,
    }
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organizations))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.ExtendedKeyUsage([purposes[u] for u in usages]), critical=False)
    )
    if names:
        alternatives = [_alternative_name(name) for name in names]
        builder = builder.add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def _alternative_name(name: str) -> x509.GeneralName:
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def certificate_pem(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def ensure_tls(directory: Path) -> TLSFiles:
    files = TLSFiles(directory / "ca.crt", directory / "server.crt", directory / "server.key")
    if files.ca_cert.exists() and files.server_cert.exists() and files.server_key.exists():
        return files
    ca = new_ca("allot-ca")
    server_key, server_cert = issue(ca, "allot-apiserver", names=LOOPBACK_NAMES)
    directory.mkdir(parents=True, exist_ok=True)
    files.ca_cert.write_bytes(certificate_pem(ca[1]))
    files.server_cert.write_bytes(certificate_pem(server_cert))
    write_private(files.server_key, key_pem(server_key))
    return files
