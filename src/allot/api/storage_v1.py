"""``storage.k8s.io/v1`` StorageClass, with every field Kubernetes 1.36 defines.

Served in every cluster (short name ``sc``); a new cluster has kind's default class
``standard`` (:func:`default_storage_class`), whose provisioner allot simulates
(:mod:`allot.controllers.volumes`); no provisioner acts on other classes. Served by
:mod:`allot.registry.kinds.storageclasses`, defaulted and validated by
:mod:`allot.validation.storage`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from allot.api.base import ApiModel, SortedMap
from allot.api.meta import ObjectMeta

RECLAIM_POLICIES = ["Delete", "Retain"]
BINDING_MODES = ["Immediate", "WaitForFirstConsumer"]
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"


class TopologySelectorLabelRequirement(ApiModel):
    key: str | None = None
    values: list[str] | None = None


class TopologySelectorTerm(ApiModel):
    match_label_expressions: list[TopologySelectorLabelRequirement] | None = None


class StorageClass(ApiModel):
    api_version: Literal["storage.k8s.io/v1"] = "storage.k8s.io/v1"
    kind: Literal["StorageClass"] = "StorageClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    provisioner: str | None = None
    parameters: SortedMap[str] | None = None
    reclaim_policy: str | None = None
    mount_options: list[str] | None = None
    allow_volume_expansion: bool | None = None
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] | None = None


def default_storage_class() -> dict[str, Any]:
    """kind's default class, as a new cluster gets it: ``standard``, provisioner
    ``rancher.io/local-path``, reclaim ``Delete``, binding ``WaitForFirstConsumer``."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "standard", "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
        "provisioner": "rancher.io/local-path",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
