"""A generic object client over the official ``kubernetes`` package.

``Client`` reads and writes wire dicts for the served kinds (by apiVersion and kind), using
``ApiClient.call_api`` so no generated model gets in the way. Connection settings come from
a kubeconfig file. Errors become :mod:`allot.kube.errors` classes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import config as k8sconfig
from kubernetes.client.exceptions import ApiException

from allot.api.errors import UnknownKindError
from allot.api.kinds import lookup
from allot.kube.errors import KubeConflict, KubeError, KubeNotFound
from allot.types import Obj

MESSAGE_LIMIT = 500


class Client:
    def __init__(self, api_client: Any) -> None:
        self._api = api_client
        self._discovered: dict[tuple[str, str], tuple[str, bool]] = {}
        self._streams: set[Any] = set()  # the watch responses being read
        self._cuts = 0  # how many times end_streams was called
        self.warnings: list[str] = []
        """The texts of the last response's ``Warning`` headers (kubectl prints each as
        ``Warning: ...``)."""

    @classmethod
    def from_kubeconfig(cls, path: Path | None = None, context: str | None = None) -> Client:
        """A client for ``path``'s ``context``; without a path, kubectl's rule: the files of
        ``$KUBECONFIG`` merged, else ``~/.kube/config``."""
        if path is not None and not path.is_file():
            raise KubeError(f"cannot load kubeconfig {path}: no such file")
        where = str(path) if path is not None else _default_kubeconfig_text()
        files = str(path) if path is not None else _default_kubeconfig()
        if context is not None and not _has_context(files, context):
            raise KubeError(f'context "{context}" does not exist')  # kubectl's words
        try:
            api_client = k8sconfig.new_client_from_config(  # type: ignore[no-untyped-call]
                files, context=context or _current_context(files)
            )
        except Exception as err:
            raise KubeError(f"cannot load kubeconfig {where}: {err}") from None
        return cls(api_client)

    def close(self) -> None:
        """Close every connection: urllib3's ``clear`` only forgets its pools, whose sockets
        stay open for as long as anything (an error's traceback keeping an answer) holds
        a pool."""
        self.end_streams()
        pools = self._api.rest_client.pool_manager.pools
        for key in list(pools.keys()):
            pool = pools.get(key)
            if pool is not None:
                pool.close()
        self._api.close()

    # ---------------------------------------------------------------- requests
    def _path(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str | None,
        subresource: str = "",
    ) -> str:
        plural, namespaced = self.resource_of(api_version, kind)
        base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        if namespaced and namespace:
            base += f"/namespaces/{namespace}"
        path = f"{base}/{plural}"
        if name:
            path += f"/{name}"
        if subresource:
            path += f"/{subresource}"
        return path

    def resource_of(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) of a kind: allot's own table, else the server's discovery
        (CustomResourceDefinitions, PrometheusRule, ...). KubeNotFound if not served."""
        known = self._discovered.get((api_version, kind))
        if known is not None:
            return known
        try:
            info = lookup(api_version, kind)
            found = (info.plural, info.namespaced)
        except UnknownKindError:
            found = self._discover(api_version, kind)
        self._discovered[(api_version, kind)] = found
        return found

    def _discover(self, api_version: str, kind: str) -> tuple[str, bool]:
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            document = self._call("GET", path)
        except KubeNotFound:
            raise KubeNotFound(
                f'the cluster does not serve {api_version} (no matches for kind "{kind}")', 404
            ) from None
        for resource in document.get("resources") or []:
            if resource.get("kind") == kind and "/" not in resource.get("name", ""):
                return str(resource["name"]), bool(resource.get("namespaced"))
        raise KubeNotFound(f'no matches for kind "{kind}" in version "{api_version}"', 404)

    def serves(self, api_version: str) -> bool:
        """Whether the server serves a group version (``resource.k8s.io/v1``)."""
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            self._call("GET", path)
        except KubeNotFound:
            return False
        return True

    def apply(
        self, obj: Obj, field_manager: str, *, force: bool = False, dry_run: bool = False
    ) -> Obj:
        """Server-side apply of ``obj`` (``application/apply-patch+yaml``); with
        ``dry_run``, the object the server would store, nothing written (``dryRun=All``)."""
        metadata = obj["metadata"]
        path = self._path(
            obj["apiVersion"], obj["kind"], metadata.get("namespace"), metadata["name"]
        )
        query = [("fieldManager", field_manager)] + ([("force", "true")] if force else [])
        query += [("dryRun", "All")] if dry_run else []
        result: Obj = self._call(
            "PATCH", path, json.dumps(obj), query=query, content_type="application/apply-patch+yaml"
        )
        return result

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: list[tuple[str, str]] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        """One request by path; the decoded JSON answer (None when empty). A refusal
        raises a :class:`KubeError` carrying the server's Status (``status_body``)."""
        return self._call(method, path, body, query, content_type)

    def stream(
        self, path: str, query: list[tuple[str, str]], timeout_seconds: float
    ) -> Iterator[dict[str, Any]]:
        """GET a watch: each line of the answer decoded, as it arrives, until the server
        ends it (its ``timeoutSeconds``) or :meth:`end_streams` cuts it (also one that
        was still being opened then)."""
        cuts = self._cuts
        try:
            _, url, headers, _, _ = self._api.param_serialize(
                method="GET",
                resource_path=path,
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response = self._api.call_api(
                "GET", url, header_params=headers, _request_timeout=(10, timeout_seconds + 30)
            )
        except ApiException as err:
            raise _wrap(err.status or 0, err.body, str(err.reason or "")) from None
        except Exception as err:
            raise KubeError(_unreachable(self._api.configuration.host, err)) from None
        raw = response.response
        if not 200 <= response.status < 300:
            raise _wrap(response.status, raw.data, str(response.reason or ""))
        self._streams.add(raw)
        try:
            if cuts != self._cuts:
                return  # cut while it was being opened
            yield from _lines(raw, self._api.configuration.host)
        finally:
            self._streams.discard(raw)
            _done(raw)

    def end_streams(self) -> None:
        """Cut every watch in progress (from another thread: its reader sees the end)."""
        self._cuts += 1
        for raw in list(self._streams):
            with contextlib.suppress(Exception):
                raw.shutdown()

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: list[tuple[str, str]] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        try:
            _, url, headers, payload, _ = self._api.param_serialize(
                method=method,
                resource_path=path,
                query_params=query or [],
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self._api.call_api(method, url, header_params=headers, body=payload)
            response.read()
            _done(response.response)
        except ApiException as err:
            raise _wrap(err.status or 0, err.body, str(err.reason or "")) from None
        except Exception as err:  # connection refused, TLS...
            raise KubeError(_unreachable(self._api.configuration.host, err)) from None
        raw = response.data
        self.warnings = _warnings(response.headers.getlist("Warning"))
        if not 200 <= response.status < 300:
            raise _wrap(response.status, raw, str(response.reason or ""))
        return json.loads(raw) if raw else None

    # ------------------------------------------------------------------- verbs
    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        result: Obj = self._call("GET", self._path(api_version, kind, namespace, name))
        return result

    def get_path(self, path: str, query: list[tuple[str, str]] | None = None) -> Any:
        """GET a JSON document by path (allot's own endpoints, ``/allot/v1/...``)."""
        return self._call("GET", path, query=query)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
    ) -> list[Obj]:
        query = [
            (k, v)
            for k, v in (("labelSelector", label_selector), ("fieldSelector", field_selector))
            if v
        ]
        result = self._call("GET", self._path(api_version, kind, namespace, None), query=query)
        items: list[Obj] = result.get("items") or []
        return items

    def create(self, obj: Obj) -> Obj:
        metadata = obj.get("metadata") or {}
        result: Obj = self._call(
            "POST", self._path(obj["apiVersion"], obj["kind"], metadata.get("namespace"), None), obj
        )
        return result

    def update(self, obj: Obj, subresource: str = "") -> Obj:
        metadata = obj["metadata"]
        path = self._path(
            obj["apiVersion"], obj["kind"], metadata.get("namespace"), metadata["name"], subresource
        )
        result: Obj = self._call("PUT", path, obj)
        return result

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Obj,
        namespace: str | None = None,
        subresource: str = "",
    ) -> Obj:
        path = self._path(api_version, kind, namespace, name, subresource)
        result: Obj = self._call("PATCH", path, patch, content_type="application/merge-patch+json")
        return result

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        self._call(
            "DELETE",
            self._path(api_version, kind, namespace, name),
            {"propagationPolicy": "Background"},
        )


def _default_kubeconfig() -> str:
    """kubectl's default, read when called (the official client reads ``$KUBECONFIG`` once,
    at import): the ``:``-separated files of ``$KUBECONFIG``, which it merges, else
    ``~/.kube/config``."""
    return os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")


def _kubeconfigs(files: str) -> Iterator[dict[str, Any]]:
    """The readable kubeconfig documents of ``files`` (``:``-separated), in order."""
    for name in filter(None, files.split(os.pathsep)):
        try:
            with open(os.path.expanduser(name)) as stream:
                document = yaml.safe_load(stream)
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(document, dict):
            yield document


def _current_context(files: str) -> str | None:
    """The current context as kubectl picks it from merged files: the first file that sets
    one wins (the official client lets the last one win)."""
    for document in _kubeconfigs(files):
        if document.get("current-context"):
            return str(document["current-context"])
    return None


def _has_context(files: str, context: str) -> bool:
    return any(
        isinstance(entry, dict) and entry.get("name") == context
        for document in _kubeconfigs(files)
        for entry in document.get("contexts") or []
    )


def _default_kubeconfig_text() -> str:
    """How kubectl would name the kubeconfig it reads (for error messages)."""
    files = os.environ.get("KUBECONFIG")
    return f"$KUBECONFIG ({files})" if files else "~/.kube/config"


_WARNING = re.compile(r'\d{3} \S+ "((?:[^"\\]|\\.)*)"')


def _warnings(values: list[str]) -> list[str]:
    """The texts of RFC 7234 warning values (``299 - "text"``), several per header allowed;
    the server sends UTF-8 bytes, which the HTTP library reads as Latin-1."""
    found = []
    for value in values:
        for match in _WARNING.finditer(value):
            text = re.sub(r"\\(.)", r"\1", match.group(1))
            with contextlib.suppress(UnicodeError):
                text = text.encode("latin-1").decode("utf-8")
            found.append(text)
    return found


def _done(raw: Any) -> None:
    """A read answer's connection back to the pool (which ``close`` closes) and its file
    closed: a traceback that keeps the answer alive must not keep the socket open."""
    raw.release_conn()
    raw.close()


def _lines(raw: Any, server: str) -> Iterator[dict[str, Any]]:
    """The JSON documents of a streamed answer, one per line."""
    pending = b""
    try:
        for chunk in raw.stream(65536, decode_content=True):
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.strip():
                    yield json.loads(line)
    except (urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError, OSError):
        return  # cut (end_streams), or the server went away: the watch simply ends
    if pending.strip():
        yield json.loads(pending)


def _wrap(status: int, body: Any, fallback: str) -> KubeError:
    message, reason = fallback, ""
    document: Any = None
    try:
        document = json.loads(body or "{}")
        message, reason = document.get("message", message), document.get("reason", "")
    except (TypeError, ValueError, AttributeError):
        document = None
    message = str(message)[:MESSAGE_LIMIT]
    cls = {404: KubeNotFound, 409: KubeConflict}.get(status, KubeError)
    error = cls(message, status, reason)
    error.status_body = document if isinstance(document, dict) else None
    return error


def _unreachable(server: str, err: Exception) -> str:
    """kubectl's words for a server it cannot reach, instead of urllib3's retry chain."""
    reason = getattr(err, "reason", None) or err
    address = server.split("://", 1)[-1].rstrip("/")
    if isinstance(reason, urllib3.exceptions.NewConnectionError) and "refused" in str(reason):
        return (
            f"the connection to the server {address} was refused - did you specify the right "
            "host or port?"
        )
    if isinstance(reason, urllib3.exceptions.SSLError):
        return f"unable to connect to the server {address}: TLS error: {reason}"
    detail = str(reason).split(": ", 1)[-1] if isinstance(reason, Exception) else str(reason)
    return f"unable to connect to the server {address}: {detail}"
