"""The GPU-memory quota on a real cluster: a validating webhook on ``resourceclaims/status``.

A ValidatingAdmissionPolicy cannot enforce ``spec.quota.gpuMemory``: the memory a claim's
devices carry is in the ResourceSlices and what the tenant holds already is in its other
claims, neither of which a policy may read. So ``allot controller`` (the leader) serves
this webhook over HTTPS on 127.0.0.1 and registers it (ValidatingWebhookConfiguration
``allot-gpu-memory-quota``, its CA in ``caBundle``) for the status updates of claims in
tenant namespaces (``allot.dev/tenant``). When kube-scheduler writes an allocation that
would take the tenant's allocated GPU memory past its quota, the write is refused with
the reason (:func:`allot.dra.gpumemory.overrun`, the embedded scheduler's very check), so
the scheduler's PreBind fails, the allocation is not stored, and the pod waits, retried,
with the refusal in its ``FailedScheduling`` Event.

The judgement reads the controller's informer caches (the Tenants, the DRA index) on the
event loop that keeps them; an allocation it admitted counts as held until the cache shows
it (``HELD_SECONDS`` at most), so two allocations admitted before the first one's change
arrives cannot both pass the last of the quota. ``failurePolicy: Fail``: while no leader
serves it (at most a lease duration), tenants' allocations wait rather than overrun.
Used by :mod:`allot.cluster.controller`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from allot.api.tenancy import Tenant
from allot.client.protocol import Client
from allot.dra import gpumemory
from allot.dra.index import DraIndex
from allot.tenancy import entitlement, names
from allot.types import Obj

LOG = logging.getLogger("allot.webhook")
NAME = "allot-gpu-memory-quota"
WEBHOOK = "gpu-memory-quota.allot.dev"
PATH = "/validate/resourceclaims/status"
HELD_SECONDS = 30.0
"""How long an admitted allocation counts as held before the cache shows it (a write
refused later, by another webhook or a conflict, stops counting then)."""
JUDGE_SECONDS = 4.0
"""The most a judgement may wait for the event loop (the registration allows 5 s)."""


class GpuMemoryQuota:
    """The judgement: a claim's new allocation against its tenant's GPU-memory quota."""

    def __init__(self, client: Client, index: DraIndex) -> None:
        self.client = client
        self.index = index
        self._admitted: dict[str, tuple[Obj, float]] = {}

    def judge(self, request: Obj) -> str:
        """Why the status update ``request`` (an AdmissionReview's) must be refused, or ""."""
        claim, old = request.get("object") or {}, request.get("oldObject") or {}
        allocation = (claim.get("status") or {}).get("allocation")
        if request.get("subResource") != "status" or not allocation:
            return ""
        if (old.get("status") or {}).get("allocation"):
            return ""  # allocated before: this update changes something else
        metadata = claim.get("metadata") or {}
        namespace = str(request.get("namespace") or metadata.get("namespace") or "")
        tenant = names.tenant_of_namespace(namespace)
        most = self._limit(tenant) if tenant else None
        if most is None:
            return ""
        key = f"{namespace}/{metadata.get('name', '')}"
        problem = gpumemory.overrun(
            self.index,
            namespace,
            [allocation],
            f"tenant {tenant!r}",
            most,
            besides=key,
            also=self._pending(namespace, key),
        )
        if not problem:
            self._admitted[key] = (allocation, time.monotonic())
        return problem

    def _limit(self, tenant: str) -> Any:
        found = self.client.peek("Tenant", "", tenant)
        if found is None:
            return None
        try:
            return gpumemory.tenant_limit(Tenant.model_validate(found))
        except ValidationError as err:  # the API server's schema let it in: judge nothing
            LOG.warning("tenant %s: not judged, its spec does not decode: %s", tenant, err)
            return None

    def _pending(self, namespace: str, besides: str) -> list[Obj]:
        """Allocations admitted here that the cache does not show yet."""
        now = time.monotonic()
        found: list[Obj] = []
        for key, (allocation, when) in list(self._admitted.items()):
            shown = self.index.claims.get(key)
            if now - when > HELD_SECONDS or (shown is not None and shown.allocation):
                del self._admitted[key]
            elif key != besides and key.split("/", 1)[0] == namespace:
                found.append(allocation)
        return found

    def review(self, body: Obj) -> Obj:
        """The AdmissionReview answering ``body``'s request."""
        request = body.get("request") or {}
        problem = self.judge(request)
        response: Obj = {"uid": request.get("uid", ""), "allowed": not problem}
        if problem:
            name = (request.get("object") or {}).get("metadata", {}).get("name", "")
            message = f'resourceclaims "{name}" is forbidden: {problem}'
            response["status"] = {"code": 403, "reason": "Forbidden", "message": message}
        return {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        }


@dataclass(frozen=True)
class WebhookSettings:
    """Where the webhook serves (``port`` 0: a free one) and its TLS files: a serving
    certificate for 127.0.0.1 and the CA that signed it (``allot controller`` keeps them
    in ``<data-dir>/webhook``, made once, so replicas sharing it register one CA)."""

    port: int
    ca_cert: Path
    server_cert: Path
    server_key: Path


class WebhookServer:
    """:class:`GpuMemoryQuota` over HTTPS on 127.0.0.1, judging on ``loop``, the loop that
    keeps the caches."""

    def __init__(self, quota: GpuMemoryQuota, settings: WebhookSettings) -> None:
        self.quota = quota
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ca_pem = settings.ca_cert.read_bytes()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(settings.server_cert, settings.server_key)
        address = ("127.0.0.1", settings.port)
        self._server = ThreadingHTTPServer(address, _handler(self))
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="allot-webhook", daemon=True
        )

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}{PATH}"

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, body: Obj) -> Obj:
        """Judge on the loop (the caches change there); from a server thread."""
        assert self.loop is not None

        async def judged() -> Obj:
            return self.quota.review(body)

        future = asyncio.run_coroutine_threadsafe(judged(), self.loop)
        return future.result(timeout=JUDGE_SECONDS)

    def configuration(self) -> Obj:
        """The ValidatingWebhookConfiguration that sends tenants' claim status updates here."""
        rule = {
            "apiGroups": ["resource.k8s.io"],
            "apiVersions": ["v1"],
            "operations": ["UPDATE"],
            "resources": ["resourceclaims/status"],
            "scope": "Namespaced",
        }
        selector = {"matchExpressions": [{"key": names.TENANT_LABEL, "operator": "Exists"}]}
        webhook = {
            "name": WEBHOOK,
            "clientConfig": {"url": self.url, "caBundle": base64.b64encode(self.ca_pem).decode()},
            "rules": [rule],
            "namespaceSelector": selector,
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 5,
        }
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": NAME, "labels": dict(entitlement.MANAGED_BY)},
            "webhooks": [webhook],
        }


def _handler(server: WebhookServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path.split("?", 1)[0] != PATH:
                self._reply(404, {"message": f"no webhook at {self.path}"})
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                self._reply(200, server.answer(body))
            except (ValueError, TimeoutError) as err:
                self._reply(400, {"message": f"cannot judge this request: {err}"})

        def _reply(self, code: int, answer: Obj) -> None:
            data = json.dumps(answer).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            LOG.debug(format, *args)

    return Handler
