"""``allot apply``: the rendered objects onto a cluster, idempotently, and pruning.

Objects go in dependency order (CRDs, namespaces, classes, policies, params, bindings,
quotas, Tenants, the PrometheusRule) by server-side apply under field manager ``allot``;
a CRD it creates or changes is waited for until the server reports it ``Established``, as
Helm waits, so the Tenants after it never meet a kind not served yet (a CRD whose names
another CRD holds never is: the run stops with the server's reason).
Whether an object changes is the server's answer: a dry-run apply (``dryRun=All``, as
``kubectl diff`` asks) compared with the live object, so the server's defaults are no
change and a field allot applied before but no longer renders (a label taken off a
DeviceClass) is one; an unchanged object is left alone (so a second apply changes
nothing). Objects labelled ``app.kubernetes.io/managed-by: allot`` that are
no longer rendered are deleted afterwards, most dependent first, except those of a Tenant
the platform file never applied (see :func:`prunable`). A kind the cluster does
not serve (a PrometheusRule without the Prometheus Operator, Kueue's queues without Kueue)
is reported and skipped, with what to install; any other failure stops the run, and the
report says exactly what was applied before it.
``plan`` computes the same actions without writing, with a unified diff per change, for
``--dry-run``. Uses only :mod:`allot.kube`.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import yaml

from allot.cluster import kueue
from allot.cluster.render import OUTPUT_ORDER
from allot.kube.client import Client
from allot.kube.errors import KubeConflict, KubeError, KubeNotFound
from allot.tenancy import names
from allot.types import Obj

FIELD_MANAGER = "allot"
MANAGED_KEY, MANAGED_VALUE = "app.kubernetes.io/managed-by", "allot"
MANAGED_SELECTOR = f"{MANAGED_KEY}={MANAGED_VALUE}"
TENANT_API = "allot.dev/v1alpha1"
PRUNABLE = [
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("v1", "Namespace"),
    ("resource.k8s.io/v1", "DeviceClass"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
    ("v1", "ConfigMap"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
    ("v1", "ResourceQuota"),
    ("allot.dev/v1alpha1", "Tenant"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
    *((kueue.api_version(), kind) for kind in kueue.KUEUE_KINDS),
]
"""What is pruned; Kueue's kinds in v1beta2, or v1beta1 where that is all the cluster
serves (:func:`list_served`)."""
CRD_API, CRD_KIND = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
ESTABLISH_SECONDS = 60.0
KUEUE_MISSING = (
    "Kueue is not installed: the cluster does not serve {api}; install Kueue {release} or "
    "later and apply again for fair sharing"
)


class ApplyError(Exception):
    """The cluster cannot take the objects; the report so far travels with it."""

    def __init__(self, message: str, report: Report) -> None:
        super().__init__(message)
        self.report = report


@dataclass
class Action:
    verb: str  # create, configure, unchanged, prune, skip
    kind: str
    namespace: str
    name: str
    diff: str = ""
    note: str = ""
    warnings: list[str] = field(default_factory=list)
    """The API server's ``Warning`` headers for this object (kubectl prints each)."""

    def line(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        verb = {"create": "created", "configure": "configured", "prune": "pruned"}.get(
            self.verb, self.verb
        )
        note = f" ({self.note})" if self.note else ""
        return f"{self.kind.lower()}/{where}{self.name} {verb}{note}"


@dataclass
class Report:
    actions: list[Action] = field(default_factory=list)

    def changed(self) -> bool:
        return any(a.verb in ("create", "configure", "prune") for a in self.actions)


def check_cluster(client: Client) -> None:
    """Refuse clusters that cannot run DRA entitlements at all."""
    if not client.serves("resource.k8s.io/v1"):
        raise KubeError(
            "the cluster does not serve resource.k8s.io/v1: DRA is GA from Kubernetes 1.34; "
            "allot's objects need a 1.34+ API server (1.36 recommended)"
        )


def plan(client: Client, objects: list[Obj], prune: bool = True) -> Report:
    """What ``apply`` would do, with diffs; writes nothing."""
    report = Report()
    for obj in objects:
        report.actions.append(_planned(client, obj, report, planning=True))
    if prune:
        report.actions += [
            Action("prune", o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
            for o in _stale(client, objects)
        ]
    return report


def apply(client: Client, objects: list[Obj], prune: bool = True, force: bool = False) -> Report:
    report = Report()
    for obj in objects:
        action = _planned(client, obj, report, force)
        if action.verb in ("create", "configure"):
            try:
                client.apply(obj, FIELD_MANAGER, force=force)
            except KubeError as err:
                raise ApplyError(f"{action.line().rsplit(' ', 1)[0]}: {err}", report) from None
            action.warnings = list(client.warnings)
            if obj["kind"] == CRD_KIND:
                wait_established(client, obj["metadata"]["name"], report)
        report.actions.append(action)
    if prune:
        for stale in reversed(_stale(client, objects)):
            metadata = stale["metadata"]
            note = ""
            try:
                client.delete(
                    stale["apiVersion"], stale["kind"], metadata["name"], metadata.get("namespace")
                )
            except KubeNotFound:
                note = "already removed"  # by its namespace, or by its Tenant's controller
            namespace = metadata.get("namespace", "")
            report.actions.append(
                Action("prune", stale["kind"], namespace, metadata["name"], note=note)
            )
    return report


def wait_established(
    client: Client,
    name: str,
    report: Report,
    seconds: float = ESTABLISH_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Return once the CRD ``name`` is ``Established``; ApplyError when its names are
    refused (``NamesAccepted`` ``False``: it never will be) or after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        live = client.get(CRD_API, CRD_KIND, name)
        conditions = {c.get("type"): c for c in (live.get("status") or {}).get("conditions") or []}
        if (conditions.get("Established") or {}).get("status") == "True":
            return
        naming = conditions.get("NamesAccepted") or {}
        if naming.get("status") == "False":
            why = f"{naming.get('reason')}: {naming.get('message')}"
            raise ApplyError(
                f"customresourcedefinition/{name}: its names are not accepted ({why})", report
            )
        if time.monotonic() > deadline:
            raise ApplyError(
                f"customresourcedefinition/{name}: not Established after {seconds:g} s; see "
                f"kubectl describe crd {name}",
                report,
            )
        sleep(0.1)


def _planned(
    client: Client, obj: Obj, report: Report, force: bool = False, planning: bool = False
) -> Action:
    """What applying ``obj`` does: the server's own answer to a dry-run apply, compared
    with the live object (so a field allot owns that the rendering dropped, a label
    taken off, counts as a change, and the server's defaults do not). ``planning``
    (``--dry-run``): a conflict with another field manager is noted on the action, with
    the change forcing would make, instead of stopping the run."""
    metadata = obj["metadata"]
    namespace, name = metadata.get("namespace", ""), metadata["name"]
    try:
        live = client.get(obj["apiVersion"], obj["kind"], name, namespace or None)
    except KubeNotFound as err:
        if "does not serve" in str(err) or "no matches for kind" in str(err):
            note = _not_served(obj, err)
            return Action("skip", obj["kind"], namespace, name, note=note)
        return Action("create", obj["kind"], namespace, name, diff=_diff({}, obj, name))
    action = Action("configure", obj["kind"], namespace, name)
    try:
        predicted = client.apply(obj, FIELD_MANAGER, force=force, dry_run=True)
    except KubeConflict as err:
        if not planning:
            raise ApplyError(f"{action.line().rsplit(' ', 1)[0]}: {err}", report) from None
        action.note = f"{err}; --force-conflicts takes them over"
        predicted = client.apply(obj, FIELD_MANAGER, force=True, dry_run=True)
    except KubeError as err:
        raise ApplyError(f"{action.line().rsplit(' ', 1)[0]}: {err}", report) from None
    action.warnings = list(client.warnings)
    before, after = _stored(live), _stored(predicted)
    if before == after:
        action.verb = "unchanged"
    else:
        action.diff = _diff(before, after, name)
    return action


def _stale(client: Client, objects: list[Obj]) -> list[Obj]:
    """Live objects of this apply's set that are no longer rendered, in apply order."""
    found = []
    for api_version, kind in PRUNABLE:
        try:
            api_version, items = list_served(client, api_version, kind, selector=MANAGED_SELECTOR)
        except KubeNotFound:
            continue  # not served here: nothing of that kind to prune
        found += [
            {"apiVersion": api_version, "kind": kind, "metadata": item["metadata"]}
            for item in items
        ]
    try:
        tenants = client.list(TENANT_API, "Tenant")
    except KubeNotFound:
        tenants = []  # no Tenant kind: no tenant outside the set either
    return prunable(found, objects, tenants)


def list_served(
    client: Client, api_version: str, kind: str, namespace: str | None = None, selector: str = ""
) -> tuple[str, list[Obj]]:
    """A kind's objects and the version they were listed in: a Kueue kind the cluster does
    not serve in v1beta2 is listed in v1beta1 (Kueue 0.14; 0.16 and later warn on every
    v1beta1 request). KubeNotFound where neither is served. Also for ``allot doctor``."""
    try:
        return api_version, client.list(api_version, kind, namespace, label_selector=selector)
    except KubeNotFound:
        if kind not in kueue.KUEUE_KINDS or api_version != kueue.api_version(kueue.V1BETA2):
            raise
    older = kueue.api_version(kueue.V1BETA1)
    return older, client.list(older, kind, namespace, label_selector=selector)


def _not_served(obj: Obj, err: KubeNotFound) -> str:
    if obj["kind"] not in kueue.KUEUE_KINDS:
        return str(err)
    version = obj["apiVersion"].rpartition("/")[2]
    return KUEUE_MISSING.format(api=obj["apiVersion"], release=kueue.FIRST_RELEASE[version])


def prunable(managed: list[Obj], rendered: list[Obj], live_tenants: list[Obj]) -> list[Obj]:
    """Of the live ``managed`` objects (labelled ``app.kubernetes.io/managed-by=allot``),
    those to prune, in apply order: the ones not ``rendered``, except the objects of a
    Tenant outside this apply's set.

    The set is what the platform file renders, plus the Tenants an earlier apply created
    (labelled ``managed-by``). A Tenant created otherwise (``allot tenant create``,
    ``kubectl apply`` of a Tenant) is not the platform file's: its namespace, params,
    bindings and quota, labelled ``managed-by`` by the tenant controller that made them
    and tied to it by ``allot.dev/tenant`` (or by living in its namespace), are kept, as
    ``kubectl apply --prune --applyset`` prunes only its own set's members. A Tenant of the
    set that is no longer rendered is pruned with all of its objects."""
    wanted = {_key(o) for o in rendered}
    rendered_tenants = {o["metadata"]["name"] for o in rendered if o["kind"] == "Tenant"}
    outside = {
        t["metadata"]["name"]
        for t in live_tenants
        if t["metadata"]["name"] not in rendered_tenants
        and (t["metadata"].get("labels") or {}).get(MANAGED_KEY) != MANAGED_VALUE
    }
    stale = [o for o in managed if _key(o) not in wanted and _tenant_of(o) not in outside]
    return sorted(stale, key=lambda o: OUTPUT_ORDER.index(o["kind"]))


def _key(obj: Obj) -> tuple[str, str, str]:
    metadata = obj["metadata"]
    return obj["kind"], metadata.get("namespace", ""), metadata["name"]


def _tenant_of(obj: Obj) -> str | None:
    """The Tenant an object belongs to: its ``allot.dev/tenant`` label, or the tenant of
    the host namespace it lives in (None: a platform-wide object)."""
    metadata = obj["metadata"]
    labelled = (metadata.get("labels") or {}).get(names.TENANT_LABEL)
    if labelled:
        return str(labelled)
    return names.tenant_of_namespace(metadata.get("namespace", ""))


SERVER_BOOKKEEPING = ("resourceVersion", "generation", "managedFields")


def _stored(obj: Obj) -> Obj:
    """An object as stored, without what every write changes (its resource version,
    generation and field managers' timestamps)."""
    metadata = {k: v for k, v in obj["metadata"].items() if k not in SERVER_BOOKKEEPING}
    return {**obj, "metadata": metadata}


def _diff(live: Obj, desired: Obj, name: str) -> str:
    before = yaml.safe_dump(live, sort_keys=True).splitlines() if live else []
    after = yaml.safe_dump(desired, sort_keys=True).splitlines()
    return "\n".join(
        difflib.unified_diff(before, after, f"live/{name}", f"rendered/{name}", lineterm="")
    )
