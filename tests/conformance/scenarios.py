"""The scenario files of ``tests/scenarios`` as corpus suites, so each case is written once.

Each function below reads one file and turns its cases into requests on the host (the
expectations in the file are allot's tests' business; here both servers' answers are
compared with each other):

- ``malformed-requests.yaml``: sent as written, on its ConfigMap ``target`` and CEL policy;
- ``api-escapes.yaml``: the cases a tenant sends with its own token, replayed on the host
  by its administrator (the objects they name do not exist there: 404s, empty lists);
- ``validation.yaml`` and ``workload-validation.yaml``: every object of a kind both serve,
  created with ``dryRun=All`` (an update case creates its old object first, then replaces
  it; a status case replaces ``/status``), in a namespace with the case's labels;
- ``strategic-merge-patch.yaml``: each stored object as a ConfigMap (metadata) or a
  Deployment (a pod spec's lists under ``spec.template.spec``), then the patch;
- ``server-side-apply.yaml``: each step of the ConfigMap, Pod and Deployment cases (apply:
  an apply patch; update: a create or an update with that field manager);
- ``authorization.yaml``: its objects, then each case as the user (impersonated) sending
  the request it describes, or a SubjectAccessReview where the verb is no HTTP method; each
  escalation as the user creating the object.
"""

from __future__ import annotations

import json
from typing import Any

from allot.api.kinds import lookup
from allot.types import Obj
from tests.conformance.corpus import Request, Suite, impersonation, query_pairs
from tests.conftest import SCENARIOS, load_scenarios, load_yaml_documents
from tests.e2e.test_api_escapes import body_of as escape_body
from tests.e2e.test_malformed_requests import iteration_budget, scenario_body


def scenario_suites() -> list[Suite]:
    return [
        malformed_requests(),
        api_escapes(),
        validation("validation.yaml"),
        validation("workload-validation.yaml"),
        strategic_merge_patch(),
        server_side_apply(),
        authorization(),
    ]


def _request(suite: str, name: str, method: str, path: str, **fields: Any) -> Request:
    return Request(id=f"{suite}/{name}", method=method, path=path, **fields)


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


# ------------------------------------------------------------------ malformed requests
def malformed_requests() -> Suite:
    suite = "malformed-requests"
    target = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "target", "namespace": "default"},
        "data": {"a": "1"},
    }
    cases = load_scenarios("malformed-requests.yaml")
    requests = [_as_sent(suite, case, scenario_body(case)) for case in cases]
    return Suite(suite, requests, [target, *iteration_budget()])


# ------------------------------------------------------------------------ api escapes
ESCAPE_KEYS = {"token", "cluster", "rawPath", "header", "cookie"}


def api_escapes() -> Suite:
    suite = "api-escapes"
    cases = [case for case in load_scenarios("api-escapes.yaml") if not ESCAPE_KEYS & set(case)]
    requests = [_as_sent(suite, case, escape_body(case)) for case in cases]
    return Suite(suite, requests)


def _as_sent(suite: str, case: dict[str, Any], body: bytes | None) -> Request:
    """A scenario case that names its method, path, query and media types."""
    query = query_pairs(case.get("query"))
    headers = _headers(case)
    return _request(
        suite, case["name"], case["method"], case["path"], query=query, headers=headers, body=body
    )


def _headers(case: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    pairs = []
    if "contentType" in case:
        pairs.append(("Content-Type", str(case["contentType"])))
    if "accept" in case:
        pairs.append(("Accept", str(case["accept"])))
    return tuple(pairs)


# ------------------------------------------------------------------------- validation
VALIDATION_NAMESPACE = "conf-{suite}"


def validation(file: str) -> Suite:
    """Each case's object created with ``dryRun=All`` (see the module's docstring)."""
    suite = file.removesuffix(".yaml")
    home = VALIDATION_NAMESPACE.format(suite=suite)
    setup: list[Obj] = [_namespace(home)]
    requests = []
    for index, case in enumerate(load_scenarios(file)):
        obj = json.loads(json.dumps(case["object"]))
        if obj["apiVersion"].startswith("allot.dev/"):
            continue  # allot's own kinds: nothing to compare with
        old = case.get("old")
        namespace = home
        if case.get("namespaceLabels"):
            namespace = f"{home}-{index}"
            setup.append(_namespace(namespace, case["namespaceLabels"]))
        for each in (obj, old):
            if each is not None and "namespace" in each.get("metadata", {}):
                each["metadata"]["namespace"] = namespace
        if old is not None:
            old = json.loads(json.dumps(old))
            old["metadata"]["namespace"] = namespace
            old["metadata"]["name"] = obj["metadata"]["name"] = case["name"]
            setup.append(old)
        path = collection(obj)
        method = "POST"
        if old is not None:
            method = "PUT"
            path += f"/{obj['metadata']['name']}"
            if case.get("subresource"):
                path += f"/{case['subresource']}"
        requests.append(
            _request(
                suite,
                case["name"],
                method,
                path,
                query=(("dryRun", "All"),),
                body=_json(obj),
                ignore=("status",) if old is not None and not case.get("subresource") else (),
            )
        )
    return Suite(suite, requests, setup)


def _namespace(name: str, labels: dict[str, str] | None = None) -> Obj:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def collection(obj: Obj) -> str:
    """The path of the collection an object is created in."""
    info = lookup(obj["apiVersion"], obj["kind"])
    group = obj["apiVersion"]
    path = f"/apis/{group}" if "/" in group else f"/api/{group}"
    namespace = (obj.get("metadata") or {}).get("namespace")
    if info.namespaced and namespace:
        path += f"/namespaces/{namespace}"
    return f"{path}/{info.plural}"


# ------------------------------------------------------------ strategic merge patch
SMP_NAMESPACE = "conf-strategic-merge-patch"
POD_SPEC_LISTS = {"containers", "volumes", "initContainers"}


def strategic_merge_patch() -> Suite:
    suite = "strategic-merge-patch"
    setup: list[Obj] = [_namespace(SMP_NAMESPACE)]
    requests = []
    for index, case in enumerate(load_scenarios("strategic-merge-patch.yaml")):
        stored, patch = _smp_target(case["object"], case["patch"], f"smp-{index}")
        setup.append(stored)
        requests.append(
            _request(
                suite,
                case["name"],
                "PATCH",
                f"{collection(stored)}/{stored['metadata']['name']}",
                headers=(("Content-Type", "application/strategic-merge-patch+json"),),
                body=_json(patch),
                ignore=("status",),
            )
        )
    return Suite(suite, requests, setup)


def _smp_target(obj: Obj, patch: Obj, name: str) -> tuple[Obj, Obj]:
    """The case's object as a ConfigMap (only metadata) or a Deployment (a pod spec's lists
    go under ``spec.template.spec``, the patch with them), with what validation needs."""
    metadata = {**(obj.get("metadata") or {}), "name": name, "namespace": SMP_NAMESPACE}
    spec = obj.get("spec")
    if spec is None:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}, patch
    labels = {"app": name}
    pod_spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    deployment_spec = {key: value for key, value in spec.items() if key not in POD_SPEC_LISTS}
    lists = {key: value for key, value in spec.items() if key in POD_SPEC_LISTS}
    if lists:
        pod_spec.update(json.loads(json.dumps(lists)))
        for container in pod_spec["containers"]:
            container.setdefault("image", "busybox")
        patch = {"spec": {"template": {"spec": patch["spec"]}}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            **deployment_spec,
        },
    }
    return deployment, patch


# ------------------------------------------------------------------ server-side apply
SSA_NAMESPACE = "conf-server-side-apply"


def server_side_apply() -> Suite:
    """The ConfigMap cases, step by step (the other kinds' objects are partial there)."""
    suite = "server-side-apply"
    requests = []
    for index, case in enumerate(load_scenarios("server-side-apply.yaml")):
        steps = case["steps"]
        if case["kind"] != "ConfigMap" or any("set" in step for step in steps):
            continue
        created = False
        for number, step in enumerate(steps, 1):
            request, created = _ssa_step(f"{case['name']} (step {number})", step, index, created)
            requests.append(_request(suite, **request))
    return Suite(suite, requests, [_namespace(SSA_NAMESPACE)])


def _ssa_step(
    name: str, step: dict[str, Any], index: int, created: bool
) -> tuple[dict[str, Any], bool]:
    kind, action = ("apply", step["apply"]) if "apply" in step else ("update", step["update"])
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        **action["object"],
        "metadata": {
            **(action["object"].get("metadata") or {}),
            "name": f"ssa-{index}",
            "namespace": SSA_NAMESPACE,
        },
    }
    path = f"/api/v1/namespaces/{SSA_NAMESPACE}/configmaps"
    query = [("fieldManager", action["manager"])]
    request: dict[str, Any] = {"name": name, "body": _json(obj)}
    if kind == "apply":
        query += [("force", "true")] if action.get("force") else []
        headers = (("Content-Type", "application/apply-patch+yaml"),)
        request.update(method="PATCH", path=f"{path}/ssa-{index}", headers=headers)
    elif created:
        request.update(method="PUT", path=f"{path}/ssa-{index}")
    else:
        request.update(method="POST", path=path)
    request["query"] = tuple(query)
    return request, True


# ---------------------------------------------------------------------- authorization
HTTP_VERBS = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT",
              "patch": "PATCH", "delete": "DELETE"}  # fmt: skip


def authorization() -> Suite:
    suite = "authorization"
    document = load_yaml_documents(SCENARIOS / "authorization.yaml")[0]
    requests = [_authorization_case(suite, case) for case in document["cases"]]
    for case in document["escalations"]:
        who = {"user": case["user"]["name"], "groups": _groups(case["user"])}
        requests.append(
            _request(
                suite,
                case["name"],
                "POST",
                collection(case["object"]),
                headers=tuple(impersonation(who)),
                body=_json(case["object"]),
                query=(("dryRun", "All"),),
            )
        )
    return Suite(suite, requests, list(document["objects"]))


def _groups(user: dict[str, Any]) -> list[str]:
    return list(user.get("groups", ["system:authenticated"]))


def _authorization_case(suite: str, case: dict[str, Any]) -> Request:
    """The request a case describes, as its user; a SubjectAccessReview for other verbs."""
    user, request = case["user"], case["request"]
    who = {"user": user["name"], "groups": _groups(user)}
    if "path" in request:
        headers = tuple(impersonation(who))
        return _request(suite, case["name"], "GET", request["path"], headers=headers)
    verb = request["verb"]
    if verb not in HTTP_VERBS or not _groups(user):
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": user["name"], "groups": _groups(user), "resourceAttributes": request},
        }
        path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
        return _request(suite, case["name"], "POST", path, body=_json(review))
    group = request.get("group", "")
    path = f"/apis/{group}/v1" if group else "/api/v1"
    if request.get("namespace"):
        path += f"/namespaces/{request['namespace']}"
    path += f"/{request['resource']}"
    if verb not in ("list", "watch", "create"):
        path += f"/{request.get('name', '')}"
        if request.get("subresource"):
            path += f"/{request['subresource']}"
    query: tuple[tuple[str, str], ...] = ()
    if verb == "watch":
        query = (("watch", "true"), ("timeoutSeconds", "1"))
    elif verb in ("create", "update", "patch", "delete"):
        query = (("dryRun", "All"),)
    headers = tuple(impersonation(who))
    body = None
    if verb in ("create", "update", "patch"):
        body = b"{}"
        if verb == "patch":
            headers += (("Content-Type", "application/merge-patch+json"),)
    method = HTTP_VERBS[verb]
    return _request(suite, case["name"], method, path, query=query, headers=headers, body=body)
