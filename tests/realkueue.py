"""Kueue for the real-engine tests: ``make kube``'s Kueue run against a real control plane.

``running_kueue(kube, root, configuration)`` does what Kueue's install does, on loopback:
its CRDs (those with a conversion webhook, as its kustomization patches them, pointed at
``https://127.0.0.1:<port>/convert``), its webhook configurations for its own kinds and for
pods (the only integration enabled here; the others' webhooks would refuse every Job or
Deployment while nothing serves them) pointed at the same URL, a serving certificate with
the IP SAN 127.0.0.1 (``internalCertManagement`` off, the CA given as ``caBundle``), and
the controller itself with the host's kubeconfig, configured by ``configuration`` (allot's
rendered ``kueue/configuration.yaml``) plus the operational settings. It yields once
Kueue's ``/readyz`` answers and its webhooks serve, and stops it by PID. Where ``make
kube`` built no Kueue, ``KUEUE_MISSING`` says why and the tests skip.
"""

from __future__ import annotations

import base64
import copy
import http.client
import shutil
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.apiserver.security import LOOPBACK_NAMES, certificate_pem, issue, key_pem, new_ca
from allot.apiserver.server import free_port
from allot.kubeengine.binaries import KUEUE, bin_dir, kueue_manifests, kueue_problem
from allot.kubeengine.processes import Supervisor
from tests.realkube import MISSING, RealKube

KUEUE_MISSING = (
    MISSING
    or (
        f"Kueue in {bin_dir()}: {problem} (run `make kube`)"
        if (problem := kueue_problem(bin_dir()))
        else None
    )
    or (None if shutil.which("bwrap") else "no bubblewrap (apt-get install bubblewrap)")
)
needs_kueue = pytest.mark.skipif(KUEUE_MISSING is not None, reason=KUEUE_MISSING or "")
NAMESPACE = "kueue-system"
METRICS_CERTS = "/etc/kueue/metrics/certs"
READY_SECONDS = 120.0


def _documents(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _conversion_crds(manifests: Path) -> set[str]:
    """The CRDs Kueue's kustomization gives a conversion webhook (its enabled patches)."""
    kustomization = yaml.safe_load((manifests / "crd" / "kustomization.yaml").read_text())
    patched = [manifests / "crd" / p["path"] for p in kustomization.get("patches") or []]
    return {d["metadata"]["name"] for path in patched for d in _documents(path)}


def crds(manifests: Path, url: str, ca_bundle: str) -> list[Any]:
    converted = _conversion_crds(manifests)
    found = []
    for path in sorted((manifests / "crd" / "bases").glob("*.yaml")):
        for crd in _documents(path):
            if crd["metadata"]["name"] in converted:
                crd["spec"]["conversion"] = {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": {"url": f"{url}/convert", "caBundle": ca_bundle},
                        "conversionReviewVersions": ["v1"],
                    },
                }
            found.append(crd)
    return found


def _served_here(webhook: Any) -> bool:
    path = webhook["clientConfig"]["service"]["path"]
    return "-kueue-x-k8s-io-" in path or path.endswith("--v1-pod")


def webhooks(manifests: Path, url: str, ca_bundle: str) -> list[Any]:
    """Kueue's webhook configurations for its kinds and pods, by URL; the pod webhooks
    skip kube-system and kueue-system, as its kustomization says."""
    outside = {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["kube-system", NAMESPACE],
            }
        ]
    }
    configurations = []
    for configuration in _documents(manifests / "webhook" / "manifests.yaml"):
        kept = []
        for webhook in configuration["webhooks"]:
            if not _served_here(webhook):
                continue
            hook = copy.deepcopy(webhook)
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"{url}{path}", "caBundle": ca_bundle}
            if path.endswith("--v1-pod"):
                hook["namespaceSelector"] = outside
            kept.append(hook)
        name = f"kueue-{configuration['metadata']['name']}"
        configurations.append({**configuration, "metadata": {"name": name}, "webhooks": kept})
    return configurations


def _serving_certificate(directory: Path) -> tuple[str, Path]:
    """A CA (base64, for ``caBundle``) and Kueue's ``tls.crt``/``tls.key`` for 127.0.0.1."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = new_ca("kueue-webhook-ca")
    key, cert = issue(ca, "kueue-webhook", names=LOOPBACK_NAMES)
    (directory / "tls.crt").write_bytes(certificate_pem(cert))
    (directory / "tls.key").write_bytes(key_pem(key))
    (directory / "ca.crt").write_bytes(certificate_pem(ca[1]))
    return base64.b64encode(certificate_pem(ca[1])).decode(), directory / "ca.crt"


def _config(configuration: Any, certs: Path, ports: dict[str, int]) -> Any:
    """allot's rendered Configuration with what running here needs."""
    return {
        **configuration,
        "namespace": NAMESPACE,
        # the visibility API server reads /visibility/tls.*; not needed here (and the
        # gates cannot also be given on the command line)
        "featureGates": {**(configuration.get("featureGates") or {}), "VisibilityOnDemand": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": ports["webhook"], "host": "127.0.0.1", "certDir": str(certs)},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['health']}"},
        "metrics": {
            **(configuration.get("metrics") or {}),
            "bindAddress": f"127.0.0.1:{ports['metrics']}",
        },
        "leaderElection": {"leaderElect": False},
    }


def _answers(port: int, path: str, tls: ssl.SSLContext | None) -> bool:
    connection: http.client.HTTPConnection = (
        http.client.HTTPSConnection("127.0.0.1", port, timeout=2, context=tls)
        if tls
        else http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    )
    try:
        connection.request("GET", path)
        connection.getresponse().read()
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def _metrics_certificate_at(path: str, certs: Path) -> list[str]:
    """bubblewrap's arguments that show ``certs`` at ``path`` to Kueue alone: with
    ``internalCertManagement`` off, Kueue 0.19 reads its metrics certificate from a fixed
    path (cmd/kueue/main.go) that no test should write. The rest of the machine is seen
    as it is, but for ``/etc``: a fresh one with the files a Go program reads there."""
    arguments = ["bwrap", "--die-with-parent", "--dev-bind", "/", "/", "--tmpfs", "/etc"]
    for kept in ("hosts", "resolv.conf", "ssl", "nsswitch.conf", "passwd", "group"):
        arguments += ["--ro-bind-try", f"/etc/{kept}", f"/etc/{kept}"]
    return [*arguments, "--ro-bind", str(certs), path, "--"]


@contextmanager
def running_kueue(kube: RealKube, root: Path, configuration: Any) -> Iterator[Path]:
    """Kueue installed and running against ``kube`` until exit; yields its log."""
    manifests = kueue_manifests(bin_dir())
    ports = {name: free_port() for name in ("webhook", "health", "metrics")}
    url = f"https://127.0.0.1:{ports['webhook']}"
    ca_bundle, ca_file = _serving_certificate(root / "certs")
    config = root / "kueue.yaml"
    config.write_text(yaml.safe_dump(_config(configuration, root / "certs", ports)))
    kube.kubectl("create", "namespace", NAMESPACE)
    definitions = crds(manifests, url, ca_bundle)  # too large for client-side apply
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(definitions))
    for crd in definitions:
        kube.kubectl("wait", "--for", "condition=established", f"crd/{crd['metadata']['name']}")
    supervisor = Supervisor()
    log = root / "kueue.log"
    command = [
        *_metrics_certificate_at(METRICS_CERTS, root / "certs"),
        str(bin_dir() / KUEUE),
        f"--config={config}",
        f"--kubeconfig={kube.kubeconfig}",
    ]
    try:
        component = supervisor.start(KUEUE, command, log)
        tls = ssl.create_default_context(cafile=str(ca_file))
        supervisor.wait_until(
            component,
            lambda: (
                _answers(ports["health"], "/readyz", None)
                and _answers(ports["webhook"], "/convert", tls)
            ),
            READY_SECONDS,
            every=0.5,
        )
        kube.apply(*webhooks(manifests, url, ca_bundle))
        yield log
    finally:
        supervisor.stop()
