"""The ASGI application: clusters under ``/clusters/<name>``, authentication, routing.

Every request names its cluster in the URL prefix; its bearer token must belong to that
cluster (401 without a valid token, 403 with another cluster's). Below the prefix the
Kubernetes paths are served: ``/version``, discovery, ``/openapi/v3``, resource REST with
Tables, watches and pod logs, and ``selfsubjectaccessreviews``. Every failure becomes a
``metav1.Status`` through :func:`allot.statuses.to_status`, so clients never see a bare
500. Built by :class:`ApiServer`, served by uvicorn (``allot up``) or in tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from allot.api.errors import ApiError
from allot.apiserver import bodies, discovery, openapi, protobuf, queries, selectors, tables
from allot.apiserver.admission import AdmissionChain, AdmissionHook, warning_header
from allot.apiserver.classwarnings import CatalogueWarnings
from allot.apiserver.crds import CustomResources
from allot.apiserver.errors import (
    BadRequest,
    Forbidden,
    MethodNotAllowed,
    NotFoundPath,
    RequestTooLarge,
    Unauthorized,
    UnsupportedMediaType,
)
from allot.apiserver.handlers import Handlers, WriteOptions, WriteResult
from allot.apiserver.policies import PolicyAdmission
from allot.apiserver.quota import QuotaAdmission
from allot.apiserver.requests import Target, parse_resource_path
from allot.apiserver.resources import by_kind
from allot.apiserver.security import HOST_CLUSTER, Tokens
from allot.apiserver.watches import (
    DEFAULT_TIMEOUT_SECONDS,
    WatchRequest,
    WatchSlots,
    WatchStream,
)
from allot.statuses import InvalidObjectError, RequestError, to_status
from allot.store import Store
from allot.store.errors import StoreError

LOG = logging.getLogger("allot.apiserver")
MAX_BODY_BYTES = 3 * 1024 * 1024
OFF_LOOP_BYTES = 64 * 1024  # bodies larger than this are decoded in a worker thread
Decoded = TypeVar("Decoded")
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
ADMISSION_AUDIT_MAX_BYTES = 8 * 1024 * 1024  # per file; the previous file is kept
Obj = dict[str, Any]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class ApiServer:
    """One data directory: the store, the tokens, the clusters and the HTTP application."""

    def __init__(
        self,
        data_dir: Path,
        *,
        clock: Callable[[], dt.datetime] = _now,
        hooks: list[AdmissionHook] | None = None,
    ) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        data_dir.chmod(0o700)  # tokens, kubeconfigs, the store, logs: the owner's alone
        self.data_dir = data_dir
        self.clock = clock
        self.store = Store(data_dir / "state.db", clock=clock)
        self.tokens = Tokens(data_dir / "tokens.json")
        self.quota = QuotaAdmission(self.store)  # the platform adds tenants' pending objects
        self.admission = AdmissionChain(
            namespace_labels=self._namespace_labels,
            hooks=[
                *(hooks or []),
                PolicyAdmission(self.store, audit=self._record_policy_audit),
                self.quota,
            ],
        )
        self.admission.hooks.append(CatalogueWarnings(self.store, self.admission.compiler))
        self.handlers = Handlers(self.store, self.admission, clock)
        self.watch_slots = WatchSlots()
        self.logs_dir = data_dir / "logs"
        self.stopping = asyncio.Event()
        self.startup_hooks: list[Callable[[], Awaitable[None]]] = []
        self.shutdown_hooks: list[Callable[[], Awaitable[None]]] = []
        self.controllers: Any = None  # the ControllerManager, when the platform adds one
        self.operations: Any = None  # allot.ops.service.Operations, when the platform adds it
        self.url: str | None = None  # https://host:port once served
        # GET endpoints beside the Kubernetes API, served for the host's token only
        # (``metrics``, ``allot/v1/...``), and pages outside /clusters (the dashboard)
        self.host_endpoints: dict[str, Callable[[Request], Awaitable[Response]]] = {}
        self.pages: list[Route] = []
        self.log_source: Callable[[str, str, str], tuple[str, str, str]] = lambda c, ns, n: (
            c,
            ns,
            n,
        )
        self.add_cluster(HOST_CLUSTER)
        self.custom_resources = CustomResources(self.store)

    # ---------------------------------------------------------------- clusters
    def add_cluster(self, name: str) -> str:
        token = self.tokens.ensure(name)
        namespaces = by_kind("Namespace").store
        for namespace in SYSTEM_NAMESPACES:
            if not self.store.namespace_exists(name, namespace):
                self.store.create(
                    name,
                    namespaces,
                    {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": namespace},
                        "spec": {"finalizers": ["kubernetes"]},
                        "status": {"phase": "Active"},
                    },
                )
        return token

    def _record_policy_audit(self, record: dict[str, Any]) -> None:
        """``validationActions: [Audit]`` failures, one JSON line each (append-only). Any
        cluster's policies write here, tenants' too, so the file is capped: past
        ``ADMISSION_AUDIT_MAX_BYTES`` it becomes ``admission.jsonl.1`` (the one before
        that is dropped), at most twice the cap on disk."""
        log = self.data_dir / "audit" / "admission.jsonl"
        log.parent.mkdir(exist_ok=True)
        stamped = {"time": self.clock().isoformat(), **record}
        with contextlib.suppress(FileNotFoundError):
            if log.stat().st_size >= ADMISSION_AUDIT_MAX_BYTES:
                log.replace(log.with_name("admission.jsonl.1"))
        with log.open("a") as sink:
            sink.write(json.dumps(stamped, sort_keys=True) + "\n")

    def _forget_policy_audit(self, cluster: str) -> None:
        """Drop a removed cluster's records from the admission audit files."""
        for log in (self.data_dir / "audit").glob("admission.jsonl*"):
            kept = [
                line
                for line in log.read_text().splitlines(keepends=True)
                if json.loads(line).get("cluster") != cluster
            ]
            log.write_text("".join(kept))

    def remove_cluster(self, name: str) -> None:
        """Forget a virtual cluster: its objects, its token, its kubeconfig and what its
        policies wrote to the admission audit."""
        self.store.drop_cluster(name)
        self.tokens.remove(name)
        self._forget_policy_audit(name)
        (self.data_dir / "kubeconfigs" / f"{name}.yaml").unlink(missing_ok=True)

    def _namespace_labels(self, cluster: str, namespace: str) -> dict[str, str] | None:
        try:
            obj = self.store.get(cluster, by_kind("Namespace").store, "", namespace)
        except StoreError:
            return None
        labels: dict[str, str] = obj["metadata"].get("labels") or {}
        return labels

    # -------------------------------------------------------------- application
    def app(self) -> Starlette:
        methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        return Starlette(
            lifespan=self._lifespan,
            exception_handlers={HTTPException: self._unrouted},
            routes=[
                Route("/healthz", self._health),
                Route("/readyz", self._health),
                Route("/livez", self._health),
                Route("/clusters/{cluster}/{path:path}", self._entry, methods=methods),
                *self.pages,
                Route("/{path:path}", self._outside, methods=methods),
            ],
        )

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Start the background work (controllers) with the server, stop it with it."""
        for hook in self.startup_hooks:
            await hook()
        try:
            yield
        finally:
            self.stopping.set()
            for hook in self.shutdown_hooks:
                await hook()
            self.custom_resources.close()

    async def _health(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def _unrouted(self, request: Request, err: Exception) -> Response:
        """Starlette's own refusals (a path no route matches, such as one with a newline in
        it, or a method a route does not take) answered as a Status, not as plain text."""
        if isinstance(err, HTTPException) and err.status_code == 405:
            return _status_response(MethodNotAllowed(request.method))
        return _status_response(NotFoundPath())

    async def _outside(self, request: Request) -> Response:
        return _status_response(NotFoundPath())

    async def _entry(self, request: Request) -> Response:
        cluster = request.path_params["cluster"]
        try:
            self._authenticate(request, cluster)
            return await self._dispatch(request, cluster, request.path_params["path"])
        except (RequestError, StoreError, ApiError, InvalidObjectError) as err:
            return _status_response(err)
        except Exception as err:  # a bug: logged with its traceback, answered as a Status
            LOG.exception(
                "internal error serving %s %s on cluster %s",
                request.method,
                request.url.path,
                cluster,
            )
            return _status_response(err)

    def _authenticate(self, request: Request, cluster: str) -> None:
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else ""
        owner = self.tokens.cluster_for(token) if token else None
        if owner is None:
            raise Unauthorized()
        if owner != cluster:
            raise Forbidden(
                f'clusters "{cluster}" is forbidden: User "{_user(owner)}" '
                f"cannot access cluster {cluster!r} with this token"
            )

    async def _dispatch(self, request: Request, cluster: str, path: str) -> Response:
        segments = [s for s in path.split("/") if s]
        method = request.method
        prefix = f"/clusters/{cluster}"
        endpoint = self.host_endpoints.get("/".join(segments))
        if endpoint is not None and cluster == HOST_CLUSTER:
            if method != "GET":
                raise MethodNotAllowed(method)
            return await endpoint(request)
        if method == "GET":
            document = self._static_document(segments, request, prefix)
            if document is not None:
                return document
        if (
            segments[:4] == ["apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews"]
            and method == "POST"
        ):
            return await self._access_review(request)
        target = parse_resource_path(segments)
        if target is None:
            raise NotFoundPath()
        queries.check(
            method,
            request.query_params,
            request.query_params.getlist("dryRun"),
            request.headers.get("content-type", "").split(";")[0].strip(),
        )
        if target.name is None:
            return await self._collection(request, cluster, target)
        return await self._item(request, cluster, target)

    def _static_document(
        self, segments: list[str], request: Request, prefix: str
    ) -> Response | None:
        accept = request.headers.get("accept", "")
        if segments == ["version"]:
            return JSONResponse(discovery.VERSION_INFO)
        if segments in (["api"], ["apis"]):
            if discovery.wants_aggregated(accept):
                return JSONResponse(
                    discovery.aggregated(core=segments == ["api"]),
                    media_type=discovery.AGGREGATED_CONTENT_TYPE,
                )
            return JSONResponse(
                discovery.legacy_api() if segments == ["api"] else discovery.legacy_groups()
            )
        if segments == ["api", "v1"]:
            return JSONResponse(discovery.legacy_resources("", "v1"))
        if len(segments) == 2 and segments[0] == "apis":
            group = discovery.legacy_group(segments[1])
            if group is None:
                raise NotFoundPath()
            return JSONResponse(group)
        if len(segments) == 3 and segments[0] == "apis":
            document = discovery.legacy_resources(segments[1], segments[2])
            if document is None:
                raise NotFoundPath()
            return JSONResponse(document)
        if segments[:2] == ["openapi", "v3"]:
            return self._openapi(segments[2:], prefix)
        if segments[:1] == ["openapi"]:
            raise NotFoundPath()
        return None

    @staticmethod
    def _openapi(rest: list[str], prefix: str) -> Response:
        if not rest:
            return JSONResponse(openapi.index(prefix))
        if rest[0] == "api" and len(rest) == 2:
            body = openapi.document_bytes("", rest[1])
        elif rest[0] == "apis" and len(rest) == 3:
            body = openapi.document_bytes(rest[1], rest[2])
        else:
            body = None
        if body is None:
            raise NotFoundPath()
        return Response(
            body, media_type="application/json", headers={"Cache-Control": "public, immutable"}
        )

    async def _access_review(self, request: Request) -> Response:
        body = await self._body(request)
        review = {
            **body,
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "status": {"allowed": True, "reason": "the cluster's token holds every permission"},
        }
        return JSONResponse(review, status_code=201)

    # -------------------------------------------------------------- collections
    async def _collection(self, request: Request, cluster: str, target: Target) -> Response:
        method = request.method
        if method == "GET":
            if request.query_params.get("watch") in ("true", "1"):
                return self._watch(request, cluster, target)
            return self._list(request, cluster, target)
        if method == "POST":
            if target.namespace is None and target.resource.namespaced:
                raise MethodNotAllowed("POST")
            result = self.handlers.create(
                cluster, target, await self._body(request), self._write_options(request)
            )
            return self._written(result, 201)
        if method == "DELETE":
            return self._delete_collection(request, cluster, target)
        raise MethodNotAllowed(method)

    def _selected(self, request: Request, cluster: str, target: Target) -> tuple[list[Obj], int]:
        query = request.query_params
        items, rv = self.store.list_objects(
            cluster, target.resource.store, target.namespace, shared=True
        )
        label = selectors.label_selector(query.get("labelSelector"))
        field = selectors.field_selector(query.get("fieldSelector"), target.resource.store.key)
        return [o for o in items if label(o) and field(o)], rv

    def _list(self, request: Request, cluster: str, target: Target) -> Response:
        query = request.query_params
        if not _wants_table(request) and not any(
            query.get(k) for k in ("labelSelector", "fieldSelector", "limit", "continue")
        ):
            return self._list_serialized(cluster, target)
        items, rv = self._selected(request, cluster, target)
        items, continue_token = _paginate(items, request.query_params)
        if _wants_table(request):
            return JSONResponse(
                tables.table(
                    target.resource.plural,
                    items,
                    self.clock(),
                    include_object=request.query_params.get("includeObject", "Metadata"),
                    resource_version=str(rv),
                    continue_token=continue_token,
                    custom_columns=target.resource.columns,
                )
            )
        metadata: Obj = {"resourceVersion": str(rv)}
        if continue_token:
            metadata["continue"] = continue_token
        return JSONResponse(
            {
                "kind": f"{target.resource.kind}List",
                "apiVersion": target.resource.api_version,
                "metadata": metadata,
                "items": items,
            }
        )

    def _list_serialized(self, cluster: str, target: Target) -> Response:
        """An unfiltered list assembled from the stored JSON texts (no re-encoding)."""
        bodies, rv = self.store.list_serialized(cluster, target.resource.store, target.namespace)
        head = json.dumps(
            {
                "kind": f"{target.resource.kind}List",
                "apiVersion": target.resource.api_version,
                "metadata": {"resourceVersion": str(rv)},
            }
        )[:-1]
        payload = head + ',"items":[' + ",".join(bodies) + "]}"
        return Response(payload.encode(), media_type="application/json")

    def _watch(self, request: Request, cluster: str, target: Target) -> Response:
        query = request.query_params
        label = selectors.label_selector(query.get("labelSelector"))
        field = selectors.field_selector(query.get("fieldSelector"), target.resource.store.key)
        timeout = float(query.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)
        watch = WatchRequest(
            cluster=cluster,
            resource=target.resource,
            namespace=target.namespace,
            matches=lambda o: label(o) and field(o),
            resource_version=query.get("resourceVersion"),
            send_initial_events=query.get("sendInitialEvents") == "true",
            allow_bookmarks=query.get("allowWatchBookmarks") == "true",
            timeout_seconds=timeout,
            as_table=_wants_table(request),
            include_object=query.get("includeObject", "Metadata"),
        )
        stream = WatchStream(self.store, watch, self.clock, self.stopping)
        self.watch_slots.take(cluster)
        lines = self.watch_slots.held(cluster, stream.stream())
        return StreamingResponse(lines, media_type="application/json")

    def _delete_collection(self, request: Request, cluster: str, target: Target) -> Response:
        items, _ = self._selected(request, cluster, target)
        deleted = []
        for item in items:
            metadata = item["metadata"]
            item_target = Target(target.resource, metadata.get("namespace"), metadata["name"], "")
            deleted.append(
                self.handlers.delete(
                    cluster, item_target, {}, _dry_run(request), user=_user(cluster)
                )
            )
        return JSONResponse(
            {
                "kind": f"{target.resource.kind}List",
                "apiVersion": target.resource.api_version,
                "metadata": {"resourceVersion": str(self.store.current_rv())},
                "items": deleted,
            }
        )

    # -------------------------------------------------------------------- items
    async def _item(self, request: Request, cluster: str, target: Target) -> Response:
        method = request.method
        if target.subresource == "binding":
            if method != "POST":
                raise MethodNotAllowed(method)
            self.handlers.bind(cluster, target, await self._body(request), user=_user(cluster))
            return JSONResponse(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "code": 201,
                },
                status_code=201,
            )
        if target.subresource == "log":
            if method != "GET":
                raise MethodNotAllowed(method)
            return await self._log(request, cluster, target)
        if method == "GET":
            obj = self.handlers.get(cluster, target)
            if _wants_table(request):
                return JSONResponse(
                    tables.table(
                        target.resource.plural,
                        [obj],
                        self.clock(),
                        include_object=request.query_params.get("includeObject", "Metadata"),
                        resource_version=obj["metadata"].get("resourceVersion", ""),
                        custom_columns=target.resource.columns,
                    )
                )
            return JSONResponse(obj)
        if method == "PUT":
            result = self.handlers.update(
                cluster, target, await self._body(request), self._write_options(request)
            )
            return self._written(result, 200)
        if method == "PATCH":
            raw = await self._raw_body(request)
            result = self.handlers.patch(
                cluster,
                target,
                request.headers.get("content-type", ""),
                raw,
                self._write_options(request),
            )
            return self._written(result, 201 if result.created else 200)
        if method == "DELETE":
            options = await self._body(request, allow_empty=True)
            queries.check_delete_options(options)
            obj = self.handlers.delete(
                cluster, target, options, _dry_run(request), user=_user(cluster)
            )
            return JSONResponse(obj)
        raise MethodNotAllowed(method)

    async def _log(self, request: Request, cluster: str, target: Target) -> Response:
        pod = self.handlers.get(cluster, target)
        cluster, namespace, name = self.log_source(
            cluster, target.namespace or "", target.name or ""
        )
        containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
        container = request.query_params.get("container") or (containers[0] if containers else "")
        if container not in containers:
            raise BadRequest(f"container {container} is not valid for pod {target.name}")
        path = self.logs_dir / cluster / namespace / name / f"{container}.log"
        if not path.exists():
            raise BadRequest(
                f'container "{container}" in pod "{target.name}" is waiting to '
                "start: ContainerCreating"
            )
        text = path.read_text(errors="replace")
        tail = request.query_params.get("tailLines")
        if tail is not None and queries.is_count(tail):
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-int(tail) :]) if int(tail) else ""
        return PlainTextResponse(text)

    # ---------------------------------------------------------------- plumbing
    async def _raw_body(self, request: Request) -> bytes:
        length = request.headers.get("content-length")
        if length is not None and queries.is_count(length) and int(length) > MAX_BODY_BYTES:
            raise RequestTooLarge(f"Request entity too large: limit is {MAX_BODY_BYTES}")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise RequestTooLarge(f"Request entity too large: limit is {MAX_BODY_BYTES}")
        return body

    async def _body(self, request: Request, *, allow_empty: bool = False) -> Obj:
        raw = await self._raw_body(request)
        if not raw.strip():
            if allow_empty:
                return {}
            raise BadRequest("the request body is empty")
        content_type = request.headers.get("content-type", "application/json").split(";")[0]
        if content_type == "application/vnd.kubernetes.protobuf":
            try:
                return await _off_loop_if_large(protobuf.decode, raw)
            except protobuf.ProtobufUnsupported as err:
                raise UnsupportedMediaType(str(err)) from None
            except protobuf.ProtobufError as err:  # not a message: the client's error
                raise BadRequest(str(err)) from None
        if content_type not in ("application/json", "", "application/yaml", "*/*"):
            raise UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json, application/yaml, "
                "application/vnd.kubernetes.protobuf"
            )
        body = await _off_loop_if_large(bodies.decode_json, raw)
        if not isinstance(body, dict):
            raise BadRequest("the body of the request must be a JSON object")
        return body

    @staticmethod
    def _write_options(request: Request) -> WriteOptions:
        query = request.query_params
        return WriteOptions(
            field_manager=query.get("fieldManager", ""),
            field_validation=query.get("fieldValidation", "Warn"),
            dry_run=_dry_run(request),
            force=query.get("force") == "true",
            user=_user(request.path_params["cluster"]),
        )

    @staticmethod
    def _written(result: WriteResult, code: int) -> Response:
        response = JSONResponse(result.object, status_code=code)
        for name, value in warning_header(result.warnings):
            response.headers.append(name, value)  # one header per warning, as kube-apiserver
        return response


def _status_response(err: Exception) -> Response:
    status = to_status(err)
    return JSONResponse(status.to_wire(), status_code=status.code or 500)


def _user(cluster: str) -> str:
    """The user a cluster's token authenticates as (one full-rights token per cluster)."""
    return f"system:allot:{cluster}"


def _wants_table(request: Request) -> bool:
    return "as=Table" in request.headers.get("accept", "")


def _dry_run(request: Request) -> bool:
    return request.query_params.get("dryRun") == "All"


def _paginate(items: list[Obj], query: Any) -> tuple[list[Obj], str]:
    limit_text = query.get("limit")
    start = 0
    token = query.get("continue")
    if token:
        if not queries.is_count(token):
            raise BadRequest("continue key is not valid: illegal base64 data")
        start = int(token)
    if not limit_text or not queries.is_count(limit_text) or int(limit_text) <= 0:
        return items[start:], ""
    end = start + int(limit_text)
    return items[start:end], str(end) if end < len(items) else ""


async def _off_loop_if_large(decode: Callable[[bytes], Decoded], raw: bytes) -> Decoded:
    """Decode a body; one over :data:`OFF_LOOP_BYTES` in a worker thread, so a client
    sending megabytes does not hold up every other request while it is parsed."""
    if len(raw) <= OFF_LOOP_BYTES:
        return decode(raw)
    return await asyncio.to_thread(decode, raw)
