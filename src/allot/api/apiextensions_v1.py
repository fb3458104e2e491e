"""``apiextensions.k8s.io/v1`` CustomResourceDefinition, and the model of custom objects.

The embedded API server serves CRDs generically: a CRD's versions become served kinds whose
objects are :class:`CustomObject` instances (any fields, validated against the version's
``openAPIV3Schema`` by :mod:`allot.validation.schema`). ``custom_model`` builds one model
class per kind and version, carrying its schema. Pure models; used by the kinds table, the
API server's CRD registry and validation.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, create_model

from allot.api.base import ApiModel
from allot.api.meta import ListMeta, ObjectMeta

JsonObject = dict[str, Any]


class CustomResourceDefinitionNames(ApiModel):
    kind: str | None = None
    list_kind: str | None = None
    plural: str | None = None
    singular: str | None = None
    short_names: list[str] | None = None
    categories: list[str] | None = None


class CustomResourceColumnDefinition(ApiModel):
    name: str | None = None
    type: str | None = None
    format: str | None = None
    description: str | None = None
    priority: int | None = None
    json_path: str | None = None


class CustomResourceValidation(ApiModel):
    open_apiv3_schema: JsonObject | None = Field(default=None, alias="openAPIV3Schema")


class CustomResourceDefinitionVersion(ApiModel):
    name: str | None = None
    served: bool | None = None
    storage: bool | None = None
    deprecated: bool | None = None
    deprecation_warning: str | None = None
    schema_: CustomResourceValidation | None = Field(default=None, alias="schema")
    subresources: JsonObject | None = None
    additional_printer_columns: list[CustomResourceColumnDefinition] | None = None
    selectable_fields: list[JsonObject] | None = None


class CustomResourceDefinitionSpec(ApiModel):
    group: str | None = None
    names: CustomResourceDefinitionNames | None = None
    scope: str | None = None
    versions: list[CustomResourceDefinitionVersion] | None = None
    conversion: JsonObject | None = None
    preserve_unknown_fields: bool | None = None


class CustomResourceDefinition(ApiModel):
    api_version: Literal["apiextensions.k8s.io/v1"] = "apiextensions.k8s.io/v1"
    kind: Literal["CustomResourceDefinition"] = "CustomResourceDefinition"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: CustomResourceDefinitionSpec = Field(default_factory=CustomResourceDefinitionSpec)
    status: JsonObject | None = None


class CustomResourceDefinitionList(ApiModel):
    api_version: Literal["apiextensions.k8s.io/v1"] = "apiextensions.k8s.io/v1"
    kind: Literal["CustomResourceDefinitionList"] = "CustomResourceDefinitionList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[CustomResourceDefinition] = Field(default_factory=list)


class CustomObject(ApiModel):
    """An object of a custom kind: metadata typed, everything else as given."""

    model_config = ConfigDict(extra="allow")
    openapi_schema: ClassVar[JsonObject] = {}
    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)


def custom_model(kind: str, version: str, schema: JsonObject) -> type[CustomObject]:
    """A model class for one custom kind and version, carrying its schema."""
    model = create_model(f"{kind}_{version}", __base__=CustomObject)
    model.openapi_schema = schema
    return model
