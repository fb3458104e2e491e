"""The clusters one data directory holds: the host and each tenant's, their tokens.

A :class:`Registry` is the write path without HTTP: the store, the bearer tokens, the
admission chain (assembled explicitly, once, by whoever builds the platform) and the
:class:`~allot.registry.handlers.Handlers` every write goes through, whether it comes from a
client over HTTPS (:mod:`allot.apiserver`) or from a controller
(:mod:`allot.controllers.context`). Adding a cluster creates its token and its system
namespaces; removing one forgets its objects, token, kubeconfig and admission audit. Built
by :func:`allot.platform.build` (and bare, by tests and ``allot cluster``'s mirror).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from allot.api.scheduling_v1 import system_classes
from allot.api.storage_v1 import default_storage_class
from allot.registry import kubeconfigs
from allot.registry.admission import AdmissionChain, AdmissionHook
from allot.registry.admissionaudit import AdmissionAudit
from allot.registry.classwarnings import CatalogueWarnings
from allot.registry.crds import CustomResources
from allot.registry.defaultclasses import DefaultIngressClassAdmission, DefaultStorageClassAdmission
from allot.registry.handlers import Handlers
from allot.registry.policies import PolicyAdmission
from allot.registry.priority import PriorityAdmission
from allot.registry.quota import QuotaAdmission
from allot.registry.rbac import bootstrap
from allot.registry.rbac.authorizer import RbacAuthorizer
from allot.registry.rbac.escalation import EscalationCheck
from allot.registry.rbac.identity import UserInfo
from allot.registry.rbac.rules import Attributes
from allot.registry.rbac.satokens import ServiceAccountTokens
from allot.registry.resources import by_kind
from allot.registry.storageprotection import StorageProtectionAdmission
from allot.store import Store
from allot.store.errors import StoreError
from allot.types import Clock, utc_now

HOST_CLUSTER = "host"
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


STORE_FILE = "state.db"
"""The embedded engine's store in its data directory (what marks a directory as its)."""


def write_private(path: Path, data: bytes) -> None:
    """Write a file only its owner may read (tokens, keys, kubeconfigs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


class Registry:
    """One data directory: the store, the tokens, the clusters and the admission chain."""

    def __init__(self, data_dir: Path, *, clock: Clock = utc_now) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        data_dir.chmod(0o700)  # tokens, kubeconfigs, the store, logs: the owner's alone
        self.data_dir = data_dir
        self.logs_dir = data_dir / "logs"
        self.clock = clock
        self.store = Store(data_dir / STORE_FILE, clock=clock)
        self.tokens = Tokens(data_dir / "tokens.json")
        self.service_account_tokens = ServiceAccountTokens(
            data_dir / "serviceaccount-tokens.json", clock
        )
        self.authorizer = RbacAuthorizer(self.store)
        self.escalation = EscalationCheck(self.authorizer)
        self.url: str | None = None  # https://host:port once served
        self.admission = AdmissionChain(namespace_labels=self._namespace_labels)
        self.handlers = Handlers(self.store, self.admission, clock)
        self.admission_audit = AdmissionAudit(data_dir / "audit" / "admission", clock)
        self.policies = PolicyAdmission(
            self.store, audit=self.admission_audit.record, checker=self._policy_check
        )
        # the platform adds tenants' pending objects
        self.quota = QuotaAdmission(self.store, clock=clock)
        self.catalogue_warnings = CatalogueWarnings(self.store, self.admission.compiler)
        self.priority = PriorityAdmission(self.store)
        self.default_classes: list[AdmissionHook] = [
            DefaultStorageClassAdmission(self.store),
            DefaultIngressClassAdmission(self.store),
            StorageProtectionAdmission(),
        ]
        self.admission.assemble([*self.mutating_plugins(), *self.standard_plugins()])
        self.add_cluster(HOST_CLUSTER)
        for cluster in self.store.clusters():  # tenants' default roles, as each start does
            bootstrap.ensure(self.store, cluster)
        self.custom_resources = CustomResources(self.store)

    def _policy_check(
        self, cluster: str, user: dict[str, Any], asked: dict[str, str]
    ) -> tuple[bool, str]:
        """The RBAC answer to an admission policy's ``authorizer`` check."""
        who = UserInfo(str(user.get("username") or ""), groups=tuple(user.get("groups") or ()))
        if "path" in asked:
            attributes = Attributes(who, asked["verb"], resource_request=False, path=asked["path"])
        else:
            attributes = Attributes(
                who,
                asked["verb"],
                namespace=asked.get("namespace", ""),
                api_group=asked.get("group", ""),
                resource=asked.get("resource", ""),
                subresource=asked.get("subresource", ""),
                name=asked.get("name", ""),
            )
        decision = self.authorizer.authorize(cluster, attributes)
        return decision.allowed, decision.reason

    def mutating_plugins(self) -> list[AdmissionHook]:
        """The plugins that complete a new object (Priority, DefaultStorageClass,
        DefaultIngressClass, StorageObjectInUseProtection): first in every chain, as
        upstream runs mutating admission before validating admission."""
        return [self.priority, *self.default_classes]

    def standard_plugins(self) -> list[AdmissionHook]:
        """The plugins every cluster has: RBAC's escalation check (upstream's RBAC
        storage, before validating admission), ValidatingAdmissionPolicy, ResourceQuota
        and the catalogue's warnings, in that order."""
        return [self.escalation, self.policies, self.quota, self.catalogue_warnings]

    def assemble(self, plugins: Sequence[AdmissionHook]) -> None:
        """Replace the admission chain's plugins (run in the order given)."""
        self.admission.assemble(plugins)

    def close(self) -> None:
        self.custom_resources.close()
        self.store.close()

    # ---------------------------------------------------------------- clusters
    def add_cluster(self, name: str) -> str:
        token = self.tokens.ensure(name)
        namespaces = by_kind("Namespace").store
        fresh = not self.store.namespace_exists(name, SYSTEM_NAMESPACES[0])
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
        self._create_system_priority_classes(name)
        if fresh:  # a new cluster, as kind makes one: a deleted class stays deleted
            self.store.create(name, by_kind("StorageClass").store, default_storage_class())
        bootstrap.ensure(self.store, name)
        return token

    def _create_system_priority_classes(self, cluster: str) -> None:
        """``system-node-critical`` and ``system-cluster-critical``, as the API server's
        start-up hook creates them in every cluster (kept if they exist)."""
        classes = by_kind("PriorityClass").store
        existing, _ = self.store.list_objects(cluster, classes, shared=True)
        names = {c["metadata"]["name"] for c in existing}
        for priority_class in system_classes():
            if priority_class["metadata"]["name"] not in names:
                self.store.create(cluster, classes, priority_class)

    def remove_cluster(self, name: str) -> None:
        """Forget a virtual cluster: its objects, its token, its kubeconfig and what its
        policies wrote to the admission audit."""
        self.store.drop_cluster(name)
        self.custom_resources.forget_cluster(name)  # its CRDs went with its objects
        self.tokens.remove(name)
        self.service_account_tokens.forget_cluster(name)
        self.authorizer.forget(name)
        self.admission_audit.forget(name)
        (self.data_dir / "kubeconfigs" / f"{name}.yaml").unlink(missing_ok=True)

    def cluster_of_token(self, token: str) -> str | None:
        """The cluster a bearer token belongs to: a cluster's own token, or an unexpired
        ServiceAccount token (``kubectl proxy`` routes the API's root paths by it)."""
        owner = self.tokens.cluster_for(token)
        if owner is not None:
            return owner
        record = self.service_account_tokens.lookup(token)
        return record.cluster if record is not None else None

    def write_kubeconfig(self, cluster: str) -> tuple[Path, list[str]]:
        """(Re)write a cluster's kubeconfig, keeping what the user added to it (see
        :mod:`allot.registry.kubeconfigs`); the server's URL must be known. Returns the
        file and what the console should say about the rewrite."""
        if self.url is None:
            raise RuntimeError("a kubeconfig needs the server's URL: serve the registry first")
        self.tokens.ensure(cluster)
        tokens = {c: self.tokens.ensure(c) for c in self.tokens.clusters()}
        credentials = kubeconfigs.Credentials(self.url, self.data_dir / "pki" / "ca.crt", tokens)
        path = self.data_dir / "kubeconfigs" / f"{cluster}.yaml"
        return path, kubeconfigs.write(path, cluster, credentials).notes

    def _namespace_labels(self, cluster: str, namespace: str) -> dict[str, str] | None:
        try:
            obj = self.store.get(cluster, by_kind("Namespace").store, "", namespace)
        except StoreError:
            return None
        labels: dict[str, str] = obj["metadata"].get("labels") or {}
        return labels

    # ------------------------------------------------------------ storage
    def bound_storage(self, cluster: str, history: int | None, audit: int | None) -> None:
        """What a cluster may keep beside its objects: the bytes of its watch history and
        of each of its admission audit files (None: the defaults)."""
        self.store.bound_history(cluster, history)
        self.admission_audit.bound(cluster, audit)

    def retained_bytes(self, cluster: str) -> int:
        """What a cluster keeps beside its objects' bodies: its watch history and its
        admission audit (counted against a tenant's storage quota)."""
        return self.store.retained_history(cluster) + self.admission_audit.size(cluster)


class Tokens:
    """Bearer tokens per cluster, persisted in ``tokens.json`` (mode 0600)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tokens: dict[str, str] = {}
        if path.exists():
            self._tokens = json.loads(path.read_text())

    def ensure(self, cluster: str) -> str:
        token = self._tokens.get(cluster)
        if token is None:
            token = secrets.token_urlsafe(32)
            self._tokens[cluster] = token
            write_private(self.path, json.dumps(self._tokens, indent=2).encode())
        return token

    def cluster_for(self, token: str) -> str | None:
        """The cluster of a token; every known token is compared, in constant time."""
        found = None
        for cluster, known in self._tokens.items():
            if secrets.compare_digest(known.encode(), token.encode()):
                found = cluster
        return found

    def clusters(self) -> list[str]:
        return sorted(self._tokens)

    def remove(self, cluster: str) -> None:
        if self._tokens.pop(cluster, None) is not None:
            write_private(self.path, json.dumps(self._tokens, indent=2).encode())
