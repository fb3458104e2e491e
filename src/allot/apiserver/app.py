"""The ASGI application: clusters under ``/clusters/<name>``, authentication, routing.

Every request names its cluster in the URL prefix; its bearer token must belong to that
cluster (401 without a valid token, 403 with another cluster's). Below the prefix starlette
routes the Kubernetes paths: ``/version``, discovery, ``/openapi/v3``, resource REST with
Tables, watches and pod logs, and ``selfsubjectaccessreviews``. Reads and writes go to the
:class:`~allot.registry.clusters.Registry` (the write path lives there, not here); this
module only turns HTTP into registry calls and results into responses. Every failure
becomes a ``metav1.Status`` through :func:`allot.statuses.to_status`, so clients never see
a bare 500. Built by :func:`allot.platform.build` (or bare, by tests), served by uvicorn
(:mod:`allot.apiserver.server`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route

from allot.api.documents import encode_document
from allot.api.errors import ApiError
from allot.apiserver import (
    authn,
    discovery,
    openapi,
    podlogs,
    protobuf,
    queries,
    requestinfo,
    reviews,
    tables,
)
from allot.apiserver.errors import (
    STREAMING_SUBRESOURCES,
    MethodNotAllowed,
    NotFoundPath,
    RequestTooLarge,
    StreamingNotServed,
)
from allot.apiserver.watches import (
    DEFAULT_TIMEOUT_SECONDS,
    EventLines,
    WatchRequest,
    WatchSlots,
    WatchStream,
)
from allot.registry import HOST_CLUSTER, bodies, selectors
from allot.registry.admission import warning_header
from allot.registry.clusters import Registry
from allot.registry.errors import BadRequest, UnsupportedMediaType
from allot.registry.handlers import Handlers, WriteOptions, WriteResult
from allot.registry.listing import ListOptions
from allot.registry.rbac.identity import UserInfo
from allot.registry.requests import Target, resolve_target
from allot.registry.resources import all_resources
from allot.statuses import InvalidObjectError, RequestError, to_status, without_hints
from allot.store.errors import StoreError
from allot.types import Obj

LOG = logging.getLogger("allot.apiserver")
MAX_BODY_BYTES = 3 * 1024 * 1024
OFF_LOOP_BYTES = 64 * 1024  # bodies larger than this are decoded in a worker thread
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
Decoded = TypeVar("Decoded")
Found = TypeVar("Found")
ClusterEndpoint = Callable[[Request, str], Awaitable[Response]]
REVIEWS = frozenset(
    {
        ("authorization.k8s.io", "v1", "selfsubjectaccessreviews"),
        ("authorization.k8s.io", "v1", "subjectaccessreviews"),
        ("authorization.k8s.io", "v1", "selfsubjectrulesreviews"),
        ("authentication.k8s.io", "v1", "selfsubjectreviews"),
    }
)
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection", "*"})


class ApiServer:
    """The HTTP face of a :class:`Registry`: routes, authentication, documents, watches."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.watch_slots = WatchSlots()
        self.stopping = asyncio.Event()
        self.event_lines = EventLines()  # every watch's lines of recent events, made once
        self.startup_hooks: list[Callable[[], Awaitable[None]]] = []
        self.shutdown_hooks: list[Callable[[], Awaitable[None]]] = []
        # GET endpoints beside the Kubernetes API, served for the host's token only
        # (``metrics``, ``allot/v1/...``), and pages outside /clusters (the dashboard)
        self.host_endpoints: dict[str, Callable[[Request], Awaitable[Response]]] = {}
        self.pages: list[BaseRoute] = []
        self.log_source: Callable[[str, str, str], tuple[str, str, str]] = lambda c, ns, n: (
            c,
            ns,
            n,
        )

    @property
    def handlers(self) -> Handlers:
        return self.registry.handlers

    @property
    def clock(self) -> Callable[[], dt.datetime]:
        return self.registry.clock

    # -------------------------------------------------------------- application
    def app(self) -> Starlette:
        return Starlette(
            lifespan=self._lifespan,
            exception_handlers={HTTPException: self._unrouted},
            routes=[
                Route("/healthz", self._health),
                Route("/readyz", self._health),
                Route("/livez", self._health),
                Mount("/clusters/{cluster}", routes=self._cluster_routes()),
                *self.pages,
                Route("/{path:path}", self._outside, methods=METHODS),
            ],
        )

    def _cluster_routes(self) -> list[BaseRoute]:
        """Every path below ``/clusters/<name>``; each authenticates before it serves."""
        documents = [
            # the official Python client asks for ``/version/``, ``/api/`` and ``/apis/``,
            # which kube-apiserver serves like the paths without the slash
            *((path, self._version) for path in ("/version", "/version/")),
            *((path, self._groups) for path in ("/api", "/api/", "/apis", "/apis/")),
            ("/api/{version}", self._core_resources),
            ("/apis/{group}", self._group),
            ("/apis/{group}/{version}", self._group_resources),
            ("/openapi/v2", self._openapi_v2),
            ("/openapi/v3", self._openapi_index),
            ("/openapi/v3/api/{version}", self._openapi_document),
            ("/openapi/v3/apis/{group}/{version}", self._openapi_document),
        ]
        resources = [
            prefix + rest
            for prefix in ("/api/{version}", "/apis/{group}/{version}")
            for rest in (
                "/namespaces/{namespace}/{plural}/{name}/{subresource}",
                "/namespaces/{namespace}/{plural}/{name}",
                "/namespaces/{namespace}/{plural}",
                "/{plural}/{name}/{subresource}",
                "/{plural}/{name}",
                "/{plural}",
            )
        ]
        return [
            *(Route(path, self._health) for path in ("/healthz", "/readyz", "/livez")),
            *(Route(path, self._guarded(serve), methods=METHODS) for path, serve in documents),
            *(Route(path, self._guarded(self._resource), methods=METHODS) for path in resources),
            Route("/{path:path}", self._guarded(self._other), methods=METHODS),
        ]

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

    def _guarded(self, serve: ClusterEndpoint) -> Callable[[Request], Awaitable[Response]]:
        """``serve`` behind the cluster's token, every failure answered as a Status."""

        async def endpoint(request: Request) -> Response:
            cluster = request.path_params["cluster"]
            try:
                self._authenticate(request, cluster)
                response = await serve(request, cluster)
            except (RequestError, StoreError, ApiError, InvalidObjectError) as err:
                response = _status_response(err)
            except Exception as err:  # a bug: logged with its traceback, answered as a Status
                LOG.exception(
                    "internal error serving %s %s on cluster %s",
                    request.method,
                    request.url.path,
                    cluster,
                )
                response = _status_response(err)
            # no answer leaves before the writes it may tell of are committed
            try:
                await self.registry.store.committed()
            except StoreError as err:  # lost (a full disk): the answer told of phantoms
                response = _status_response(err)
            return response

        return endpoint

    def _authenticate(self, request: Request, cluster: str) -> UserInfo:
        """The request's user (its token, then impersonation), authorized for what it
        asks; ``system:masters`` (a cluster's own token) skips RBAC altogether."""
        user = authn.authenticate(self.registry, request.headers, cluster)
        user = authn.impersonate(self.registry, request.headers, cluster, user)
        request.state.user = user
        if not user.privileged:
            attributes = requestinfo.attributes(request, user, cluster)
            decision = self.registry.authorizer.authorize(cluster, attributes)
            if not decision.allowed:
                raise authn.ForbiddenRequest(attributes, decision.reason)
        return user

    async def _other(self, request: Request, cluster: str) -> Response:
        """The host's endpoints beside the Kubernetes API (``metrics``, ``allot/v1/...``);
        any other path is not found."""
        endpoint = self.host_endpoints.get(request.path_params["path"].strip("/"))
        if endpoint is None or cluster != HOST_CLUSTER:
            raise NotFoundPath()
        if request.method != "GET":
            raise MethodNotAllowed(request.method)
        return await endpoint(request)

    # ---------------------------------------------------------------- documents
    async def _version(self, request: Request, cluster: str) -> Response:
        _only_get(request)
        return JSONResponse(discovery.VERSION_INFO)

    async def _groups(self, request: Request, cluster: str) -> Response:
        """``/api`` and ``/apis``: aggregated discovery when asked for, else legacy."""
        _only_get(request)
        core = request.url.path.rstrip("/").endswith("/api")
        if discovery.wants_aggregated(request.headers.get("accept", "")):
            return JSONResponse(
                discovery.aggregated(cluster, core=core),
                media_type=discovery.AGGREGATED_CONTENT_TYPE,
            )
        return JSONResponse(discovery.legacy_api() if core else discovery.legacy_groups(cluster))

    async def _core_resources(self, request: Request, cluster: str) -> Response:
        _only_get(request)
        if request.path_params["version"] != "v1":
            raise NotFoundPath()
        return JSONResponse(discovery.legacy_resources(cluster, "", "v1"))

    async def _group(self, request: Request, cluster: str) -> Response:
        _only_get(request)
        return JSONResponse(_found(discovery.legacy_group(cluster, request.path_params["group"])))

    async def _group_resources(self, request: Request, cluster: str) -> Response:
        _only_get(request)
        params = request.path_params
        return JSONResponse(
            _found(discovery.legacy_resources(cluster, params["group"], params["version"]))
        )

    async def _openapi_index(self, request: Request, cluster: str) -> Response:
        _only_get(request)
        return JSONResponse(openapi.index(cluster, f"/clusters/{cluster}"))

    async def _openapi_v2(self, request: Request, cluster: str) -> Response:
        _only_get(request)
        protobuf = "protobuf" in request.headers.get("accept", "")
        media = openapi.V2_PROTOBUF if protobuf else "application/json"
        return Response(openapi.empty_v2(protobuf), media_type=media)

    async def _openapi_document(self, request: Request, cluster: str) -> Response:
        _only_get(request)
        params = request.path_params
        body = _found(openapi.document_bytes(cluster, params.get("group", ""), params["version"]))
        return Response(
            body, media_type="application/json", headers={"Cache-Control": "public, immutable"}
        )

    async def _review(self, request: Request, cluster: str, plural: str) -> Response:
        """``kubectl auth can-i`` (access reviews), ``auth can-i --list`` (rules) and
        ``auth whoami`` (SelfSubjectReview)."""
        user = _requester(request)
        if plural == "selfsubjectreviews":
            await self._body(request, allow_empty=True)
            return JSONResponse(reviews.self_review(user), status_code=201)
        body = await self._body(request)
        if plural == "selfsubjectrulesreviews":
            return JSONResponse(reviews.rules_review(self.registry, cluster, user, body), 201)
        body.setdefault(
            "kind",
            "SelfSubjectAccessReview"
            if plural == "selfsubjectaccessreviews"
            else "SubjectAccessReview",
        )
        answer = reviews.access_review(self.registry, cluster, user, body, self._static_refusal)
        return JSONResponse(answer, status_code=201)

    async def _token(self, request: Request, cluster: str) -> Response:
        """``kubectl create token``: a TokenRequest on ``serviceaccounts/<name>/token``."""
        body = await self._body(request, allow_empty=True)
        params = request.path_params
        answer = reviews.token_request(
            self.registry, cluster, params["namespace"], params["name"], body
        )
        return JSONResponse(answer, status_code=201)

    def _static_refusal(self, cluster: str, attributes: dict[str, Any]) -> str | None:
        if str(attributes.get("verb") or "") not in WRITE_VERBS:
            return None
        group, plural = str(attributes.get("group") or ""), str(attributes.get("resource"))
        for resource in all_resources(cluster):
            if (resource.group, resource.plural) == (group, plural):
                subresource = str(attributes.get("subresource") or "")
                return self.registry.admission.forbids(cluster, resource, subresource)
        return None

    # ---------------------------------------------------------------- resources
    async def _resource(self, request: Request, cluster: str) -> Response:
        params = request.path_params
        group = params.get("group", "")
        review = (group, params["version"], params["plural"])
        if review in REVIEWS:
            if request.method != "POST" or "name" in params:  # create is their only verb
                raise MethodNotAllowed(request.method)
            return await self._review(request, cluster, params["plural"])
        if (
            review == ("", "v1", "serviceaccounts")
            and request.method == "POST"
            and params.get("subresource") == "token"
        ):
            return await self._token(request, cluster)
        target = resolve_target(
            cluster,
            group,
            params["version"],
            params.get("namespace"),
            params["plural"],
            params.get("name"),
            params.get("subresource", ""),
        )
        if target is None:
            if params["plural"] == "pods" and params.get("subresource") in STREAMING_SUBRESOURCES:
                raise StreamingNotServed(params["subresource"])
            raise NotFoundPath()
        queries.check(
            request.method,
            request.query_params,
            request.query_params.getlist("dryRun"),
            request.headers.get("content-type", "").split(";")[0].strip(),
        )
        if target.name is None:
            return await self._collection(request, cluster, target)
        return await self._item(request, cluster, target)

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
            body = await self._body(request, allow_empty=True)
            options = queries.delete_options(body, request.query_params)
            queries.check_delete_options(options)
            return self._delete_collection(request, cluster, target, options)
        raise MethodNotAllowed(method)

    def _list(self, request: Request, cluster: str, target: Target) -> Response:
        options = _list_options(request)
        if not _wants_table(request) and not options.filtered:
            return self._list_serialized(cluster, target)
        page = self.handlers.list_page(cluster, target, options)
        if _wants_table(request):
            return JSONResponse(
                tables.table(
                    target.resource,
                    page.items,
                    self.clock(),
                    include_object=request.query_params.get("includeObject", "Metadata"),
                    resource_version=str(page.resource_version),
                    continue_token=page.continue_token,
                )
            )
        metadata: Obj = {"resourceVersion": str(page.resource_version)}
        if page.continue_token:
            metadata["continue"] = page.continue_token
        return JSONResponse(
            {
                "kind": f"{target.resource.kind}List",
                "apiVersion": target.resource.api_version,
                "metadata": metadata,
                "items": page.items,
            }
        )

    def _list_serialized(self, cluster: str, target: Target) -> Response:
        """An unfiltered list assembled from the stored JSON texts (no re-encoding)."""
        bodies, rv = self.registry.store.list_serialized(
            cluster, target.resource.store, target.namespace
        )
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
        label_text, field_text = query.get("labelSelector"), query.get("fieldSelector")
        label = selectors.label_selector(label_text)
        field = selectors.field_selector(field_text, target.resource.store.key)
        timeout = float(query.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)
        watch = WatchRequest(
            cluster=cluster,
            resource=target.resource,
            namespace=target.namespace,
            matches=_both(label, field, label_text, field_text),
            resource_version=query.get("resourceVersion"),
            send_initial_events=query.get("sendInitialEvents") == "true",
            allow_bookmarks=query.get("allowWatchBookmarks") == "true",
            timeout_seconds=timeout,
            as_table=_wants_table(request),
            include_object=query.get("includeObject", "Metadata"),
            selects=bool(label_text or field_text),
        )
        stream = WatchStream(
            self.registry.store, watch, self.clock, self.stopping, self.event_lines
        )
        self.watch_slots.take(cluster)
        lines = self.watch_slots.held(cluster, stream.stream())
        return StreamingResponse(lines, media_type="application/json")

    def _delete_collection(
        self, request: Request, cluster: str, target: Target, options: Obj
    ) -> Response:
        deleted = self.handlers.delete_collection(
            cluster,
            target,
            _list_options(request),
            options,
            _dry_run(request),
            _user(request),
        )
        return JSONResponse(
            {
                "kind": f"{target.resource.kind}List",
                "apiVersion": target.resource.api_version,
                "metadata": {"resourceVersion": str(self.registry.store.current_rv())},
                "items": deleted,
            }
        )

    # -------------------------------------------------------------------- items
    async def _item(self, request: Request, cluster: str, target: Target) -> Response:
        method = request.method
        if target.subresource == "binding":
            if method != "POST":
                raise MethodNotAllowed(method)
            self.handlers.bind(cluster, target, await self._body(request), user=_user(request))
            return _created()
        if target.subresource == "eviction":
            if method != "POST":
                raise MethodNotAllowed(method)
            return await self._evict(request, cluster, target)
        if target.subresource == "log":
            if method != "GET":
                raise MethodNotAllowed(method)
            return await self._log(request, cluster, target)
        if target.subresource == "scale":
            return await self._scale(request, cluster, target)
        if method == "GET":
            obj = self.handlers.get(cluster, target)
            if _wants_table(request):
                return JSONResponse(
                    tables.table(
                        target.resource,
                        [obj],
                        self.clock(),
                        include_object=request.query_params.get("includeObject", "Metadata"),
                        resource_version=obj["metadata"].get("resourceVersion", ""),
                    )
                )
            return _json_response(obj)
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
            body = await self._body(request, allow_empty=True)
            options = queries.delete_options(body, request.query_params)
            queries.check_delete_options(options)
            dry_run = _dry_run(request)
            obj = self.handlers.delete(cluster, target, options, dry_run, user=_user(request))
            return JSONResponse(_deleted(target, obj))
        raise MethodNotAllowed(method)

    async def _evict(self, request: Request, cluster: str, target: Target) -> Response:
        """``POST pods/<name>/eviction`` (``kubectl drain``): a success Status, 201."""
        body = await self._body(request)
        options = body.get("deleteOptions")
        if isinstance(options, dict):
            queries.check_delete_options(options)
        self.handlers.evict(cluster, target, body, _dry_run(request), user=_user(request))
        return _created()

    async def _scale(self, request: Request, cluster: str, target: Target) -> Response:
        """``autoscaling/v1`` Scale of a Deployment, ReplicaSet or StatefulSet."""
        method = request.method
        if method == "GET":
            return JSONResponse(self.handlers.get_scale(cluster, target))
        options = self._write_options(request)
        if method == "PUT":
            body = await self._body(request)
            return self._written(self.handlers.update_scale(cluster, target, body, options), 200)
        if method == "PATCH":
            raw = await self._raw_body(request)
            content_type = request.headers.get("content-type", "")
            result = self.handlers.patch_scale(cluster, target, content_type, raw, options)
            return self._written(result, 200)
        raise MethodNotAllowed(method)

    async def _log(self, request: Request, cluster: str, target: Target) -> Response:
        """``pods/<name>/log``: as the kubelet serves it (:mod:`allot.apiserver.podlogs`),
        whole, ``tailLines``, ``limitBytes``, lines since a time (``sinceSeconds``,
        ``sinceTime``) with their times (``timestamps``), the run before
        (``previous=true``) or, with ``follow=true``, streamed while the container runs."""
        pod = self.handlers.get(cluster, target)
        # the runtimes stamp their logs with the machine's time (allot.controllers.logtimes)
        times = podlogs.requested_times(request.query_params, target.name or "", time.time_ns())
        source, namespace, name = self.log_source(
            cluster, target.namespace or "", target.name or ""
        )
        spec = pod.get("spec") or {}
        containers = [c.get("name") for c in spec.get("containers") or []]
        container = request.query_params.get("container") or (containers[0] if containers else "")
        init_containers = [c.get("name") for c in spec.get("initContainers") or []]
        if container not in containers and container not in init_containers:
            raise BadRequest(f"container {container} is not valid for pod {target.name}")
        directory = self.registry.logs_dir / source / namespace / name
        status = podlogs.container_status(pod, container)
        previous = _flag(request, "previous")
        path, refused = podlogs.locate(directory, container, status, target.name or "", previous)
        if refused is not None:
            raise BadRequest(refused)
        lines = _count_query(request, "tailLines")
        limit = _count_query(request, "limitBytes")  # 0 was refused above
        if previous or not _flag(request, "follow"):  # a previous run has ended
            return Response(podlogs.read(path, lines, limit, times), media_type="text/plain")
        run = str((status or {}).get("containerID") or "")
        running = partial(self._still_running, cluster, target, container, run)
        stream = podlogs.follow(path, lines, running, self.stopping, times)
        return StreamingResponse(podlogs.limited(stream, limit), media_type="text/plain")

    def _still_running(self, cluster: str, target: Target, container: str, run: str) -> bool:
        """Whether the run of the container whose log is followed goes on: the pod is
        there and the container runs with the same id."""
        try:
            pod = self.handlers.get(cluster, target)
        except (RequestError, StoreError):  # deleted
            return False
        status = podlogs.container_status(pod, container) or {}
        return "running" in (status.get("state") or {}) and status.get("containerID") == run

    # ---------------------------------------------------------------- plumbing
    async def _raw_body(self, request: Request) -> bytes:
        length = request.headers.get("content-length")
        if length is not None and bodies.is_count(length) and int(length) > MAX_BODY_BYTES:
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
            field_manager=query.get("fieldManager")
            or _manager_from_user_agent(request.headers.get("user-agent", "")),
            field_validation=query.get("fieldValidation", "Warn"),
            dry_run=_dry_run(request),
            force=query.get("force") == "true",
            user=_user(request),
            groups=_requester(request).groups,
        )

    @staticmethod
    def _written(result: WriteResult, code: int) -> Response:
        response = _json_response(result.object, code)
        for name, value in warning_header(result.warnings):
            response.headers.append(name, value)  # one header per warning, as kube-apiserver
        return response


def _json_response(obj: Obj, code: int = 200) -> Response:
    """An object as JSON: starlette's JSONResponse's bytes, encoded as the store encodes."""
    return Response(encode_document(obj), status_code=code, media_type="application/json")


def _status_response(err: Exception) -> Response:
    """The error's Status; allot's advice on it goes in ``Warning`` headers (issue 28)."""
    status, advice = without_hints(to_status(err))
    response = JSONResponse(status.to_wire(), status_code=status.code or 500)
    for name, value in warning_header(advice):
        response.headers.append(name, value)
    return response


def _requester(request: Request) -> UserInfo:
    """The user :meth:`ApiServer._authenticate` found for the request."""
    user: UserInfo = request.state.user
    return user


def _user(request: Request) -> str:
    return _requester(request).name


def _flag(request: Request, name: str) -> bool:
    """A boolean query parameter (``true`` or ``1``; the values were checked before)."""
    return request.query_params.get(name, "").lower() in ("true", "1")


def _count_query(request: Request, name: str) -> int | None:
    """A non-negative integer query parameter (None: absent or not a count)."""
    text = request.query_params.get(name)
    return int(text) if text is not None and bodies.is_count(text) else None


def _both(
    label: selectors.Predicate,
    field: selectors.Predicate,
    label_text: str | None,
    field_text: str | None,
) -> selectors.Predicate:
    """The label and field selectors as one predicate (one call when only one is given:
    a watch judges every event, twice with a previous object)."""
    if not field_text:
        return label
    if not label_text:
        return field
    return lambda obj: label(obj) and field(obj)


def _wants_table(request: Request) -> bool:
    return "as=Table" in request.headers.get("accept", "")


def _dry_run(request: Request) -> bool:
    return request.query_params.get("dryRun") == "All"


def _created() -> Response:
    """The success ``Status`` a binding or an eviction answers, 201."""
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    return JSONResponse({**status, "code": 201}, status_code=201)


def _deleted(target: Target, obj: Obj) -> Obj:
    """What a delete answers (upstream's ``finalizeDelete``): the object while its deletion
    is pending (finalizers, a grace period) or when its kind returns deleted objects (pods,
    services...), else a success ``Status`` naming it (``details.kind`` is the resource)."""
    metadata = obj["metadata"]
    if metadata.get("deletionTimestamp") or target.resource.returns_deleted_object:
        return obj
    details = {
        "name": metadata.get("name"),
        "kind": target.resource.plural,
        "uid": metadata.get("uid"),
    }
    if target.resource.group:
        details["group"] = target.resource.group
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


def _list_options(request: Request) -> ListOptions:
    query = request.query_params
    return ListOptions(
        label_selector=query.get("labelSelector"),
        field_selector=query.get("fieldSelector"),
        limit=query.get("limit"),
        continue_token=query.get("continue"),
    )


def _only_get(request: Request) -> None:
    """Documents answer GET; another method on their path names no resource (404)."""
    if request.method != "GET":
        raise NotFoundPath()


def _found(document: Found | None) -> Found:
    if document is None:
        raise NotFoundPath()
    return document


async def _off_loop_if_large(decode: Callable[[bytes], Decoded], raw: bytes) -> Decoded:
    """Decode a body; one over :data:`OFF_LOOP_BYTES` in a worker thread, so a client
    sending megabytes does not hold up every other request while it is parsed."""
    if len(raw) <= OFF_LOOP_BYTES:
        return decode(raw)
    return await asyncio.to_thread(decode, raw)


def _manager_from_user_agent(user_agent: str) -> str:
    """The field manager of a write that names none: the User-Agent up to its first
    ``/`` (``kubectl`` for ``kubectl/v1.37.1 (linux/amd64) ...``), printable characters
    only, at most 128, as the API server's ``prefixFromUserAgent``."""
    printable = "".join(c for c in user_agent.split("/")[0] if c.isprintable())
    return printable[:128]
