"""A request's authorization attributes, as upstream's ``RequestInfoResolver`` finds them.

Resource requests (``/api/v1/...``, ``/apis/<group>/<version>/...``): the verb from the
method (GET ``get``, or ``list`` on a collection, ``watch`` with ``watch=true``; POST
``create``; PUT ``update``; PATCH ``patch``; DELETE ``delete``, or ``deletecollection`` on
a collection), the namespace, resource, subresource and name from the path; a namespace's
own path names it as both namespace and name (and ``namespaces/<n>/status`` and
``/finalize`` are its subresources); a list or watch with the field selector
``metadata.name=<n>`` is about ``<n>``. Anything else is a non-resource request: the path
below the cluster prefix and the method in lower case. Called by
:class:`~allot.apiserver.app.ApiServer` before it serves a request.
"""

from __future__ import annotations

from starlette.requests import Request

from allot.registry.rbac.identity import UserInfo
from allot.registry.rbac.rules import Attributes

NAMESPACE_SUBRESOURCES = ("status", "finalize")
ITEM_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
COLLECTION_VERBS = {**ITEM_VERBS, "GET": "list", "HEAD": "list", "DELETE": "deletecollection"}


def attributes(request: Request, user: UserInfo, cluster: str) -> Attributes:
    params = request.path_params
    if "plural" not in params:
        path = request.url.path.removeprefix(f"/clusters/{cluster}") or "/"
        return Attributes(user, request.method.lower(), resource_request=False, path=path)
    namespace = params.get("namespace") or ""
    resource, name = params["plural"], params.get("name") or ""
    subresource = params.get("subresource") or ""
    if namespace and not name and resource in NAMESPACE_SUBRESOURCES:
        resource, name, subresource = "namespaces", namespace, resource
    elif not namespace and resource == "namespaces" and name:
        namespace = name
    query = request.query_params
    verbs = ITEM_VERBS if name else COLLECTION_VERBS
    verb = verbs.get(request.method, request.method.lower())
    if verb in ("get", "list") and query.get("watch") in ("true", "1"):
        verb = "watch"
    if not name and verb in ("list", "watch"):
        name = _named_by_selector(query.get("fieldSelector") or "")
    return Attributes(
        user,
        verb,
        namespace=namespace,
        api_group=params.get("group", ""),
        api_version=params.get("version", ""),
        resource=resource,
        subresource=subresource,
        name=name,
    )


def _named_by_selector(selector: str) -> str:
    """The name a ``metadata.name=<n>`` (or ``==``) field selector picks, else ''."""
    for requirement in selector.split(","):
        for operator in ("==", "="):
            key, found, value = requirement.partition(operator)
            if found and key.strip() == "metadata.name" and "!" not in key:
                return value.strip()
    return ""
