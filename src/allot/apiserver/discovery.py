"""Discovery documents: aggregated v2 (what kubectl 1.37 asks for) and the legacy forms.

The aggregated answer must carry the content type
``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`` and a
``responseKind`` per resource, or kubectl silently sees nothing. The legacy documents
(``/api``, ``/apis``, ``/apis/<g>``, ``/apis/<g>/<v>``, ``/api/v1``) serve ``auth can-i`` and
the Python dynamic client. Each cluster's documents list the built-in kinds and that
cluster's own custom kinds (its CRDs), never another cluster's, and the reviews every
cluster answers without storing them (``authorization.k8s.io/v1`` access and rules
reviews for ``kubectl auth can-i``, ``authentication.k8s.io/v1`` ``selfsubjectreviews`` for
``kubectl auth whoami``; create only, so ``kubectl api-resources`` lists them as upstream's
does). Called by the HTTP handlers.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from allot.registry import resources

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
VERSION_INFO = {
    "major": "1",
    "minor": "36",
    "emulationMajor": "1",
    "emulationMinor": "36",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "35",
    "gitVersion": "v1.36.0",
    "gitCommit": "allot",
    "gitTreeState": "clean",
    "buildDate": "2026-04-22T00:00:00Z",
    "goVersion": "go1.25.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


REVIEWS: tuple[tuple[str, str, str, str], ...] = (
    ("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview"),
    ("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview"),
    ("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview"),
)
"""(group, version, plural, kind) of the reviews :mod:`allot.apiserver.reviews` answers
(create only, never stored)."""


def _review(group: str, version: str, plural: str, kind: str) -> dict[str, Any]:
    return {
        "resource": plural,
        "singularResource": plural.removesuffix("s"),
        "scope": "Cluster",
        "responseKind": {"group": "", "version": "", "kind": kind},
        "verbs": ["create"],
    }


def _group_versions(cluster: str) -> list[tuple[str, str]]:
    """The stored kinds' group versions and the reviews', core first."""
    served = resources.group_versions(cluster)
    for group, version, _, _ in REVIEWS:
        if (group, version) not in served:
            served = [*served, (group, version)]
    return sorted(served, key=lambda gv: (gv[0] != "", gv))


def _review_entries(group: str, version: str) -> list[dict[str, Any]]:
    """The reviews' aggregated entries where their group version is asked for."""
    return [_review(*review) for review in REVIEWS if review[:2] == (group, version)]


def wants_aggregated(accept: str) -> bool:
    return "as=APIGroupDiscoveryList" in accept


def _resource_entry(resource: resources.ServedResource) -> dict[str, Any]:
    # a responseKind names its group and version only where they are not the resource's own
    entry: dict[str, Any] = {
        "resource": resource.plural,
        "singularResource": resource.singular,
        "scope": "Namespaced" if resource.namespaced else "Cluster",
        "responseKind": {"group": "", "version": "", "kind": resource.kind},
        "verbs": resource.verbs,
    }
    if resource.short_names:
        entry["shortNames"] = list(resource.short_names)
    if resource.categories:
        entry["categories"] = list(resource.categories)
    subresources = [
        {
            "subresource": sub,
            "responseKind": subresource_kind(resource.kind, sub),
            "verbs": _subresource_verbs(sub),
        }
        for sub in resource.subresources
    ]
    if subresources:
        entry["subresources"] = subresources
    return entry


def subresource_kind(kind: str, subresource: str) -> dict[str, str]:
    """What a subresource answers with, as upstream's discovery names it."""
    if subresource == "scale":
        return dict(SCALE_KIND)
    if subresource == "eviction":
        return dict(EVICTION_KIND)
    own = {"binding": "Binding", "exec": "PodExecOptions", "attach": "PodAttachOptions",
           "portforward": "PodPortForwardOptions", "proxy": f"{kind}ProxyOptions"}  # fmt: skip
    return {"group": "", "version": "", "kind": own.get(subresource, kind)}


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Upstream's ``storageVersionHash``: the first 8 bytes of SHA-256 of group/version/kind,
    in base64 (clients compare it to notice a storage version change)."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def aggregated(cluster: str, core: bool) -> dict[str, Any]:
    items = []
    for group, version in _group_versions(cluster):
        if (group == "") != core:
            continue
        items.append(
            {
                "metadata": {"name": group} if group else {},
                "versions": [
                    {
                        "version": version,
                        "freshness": "Current",
                        "resources": [
                            _resource_entry(r)
                            for r in resources.in_group_version(group, version, cluster)
                        ]
                        + _review_entries(group, version),
                    }
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def legacy_api() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}
        ],
    }


def _group(group: str, version: str) -> dict[str, Any]:
    gv = {"groupVersion": f"{group}/{version}", "version": version}
    return {"name": group, "versions": [gv], "preferredVersion": gv}


def legacy_groups(cluster: str) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(g, v) for g, v in _group_versions(cluster) if g],
    }


def legacy_group(cluster: str, group: str) -> dict[str, Any] | None:
    for name, version in _group_versions(cluster):
        if name == group and name:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, version)}
    return None


def legacy_resources(cluster: str, group: str, version: str) -> dict[str, Any] | None:
    served = resources.in_group_version(group, version, cluster)
    entries: list[dict[str, Any]] = [
        {
            "name": review["resource"],
            "singularName": review["singularResource"],
            "namespaced": False,
            "kind": review["responseKind"]["kind"],
            "verbs": review["verbs"],
        }
        for review in _review_entries(group, version)
    ]
    if not served and not entries:
        return None
    for resource in served:
        entry: dict[str, Any] = {
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": resource.verbs,
            "storageVersionHash": storage_version_hash(group, version, resource.kind),
        }
        if resource.short_names:
            entry["shortNames"] = list(resource.short_names)
        if resource.categories:
            entry["categories"] = list(resource.categories)
        entries.append(entry)
        for sub in resource.subresources:
            sub_entry = {
                "name": f"{resource.plural}/{sub}",
                "singularName": "",
                "namespaced": resource.namespaced,
                "kind": subresource_kind(resource.kind, sub)["kind"],
                "verbs": _subresource_verbs(sub),
            }
            if sub in ("scale", "eviction"):
                sub_entry.update(SCALE_KIND if sub == "scale" else EVICTION_KIND)
            entries.append(sub_entry)
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    }


SCALE_KIND = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
EVICTION_KIND = {"group": "policy", "version": "v1", "kind": "Eviction"}


def _subresource_verbs(subresource: str) -> list[str]:
    writable = ["get", "patch", "update"]
    verbs = {"status": writable, "scale": writable, "binding": ["create"], "eviction": ["create"]}
    return verbs.get(subresource, ["get"])
