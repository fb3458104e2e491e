"""API models: strict wire decoding, camelCase, omitted empties and JSON round trips."""

from __future__ import annotations

import datetime as dt
import json
import types
import typing
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from allot.api import core_v1 as corev1
from allot.api import kinds, tenancy
from allot.api import meta as metav1
from allot.api import resource_v1 as resourceapi
from allot.api.base import ApiModel
from allot.api.errors import StrictDecodingError, UnknownKindError
from allot.api.quantity import Quantity
from tests.conftest import EXAMPLES, load_yaml_documents

TOP_LEVEL = [info.model for info in kinds.KINDS] + [
    metav1.Status,
    resourceapi.ResourceClaimList,
    resourceapi.ResourceSliceList,
    corev1.PodList,
]
QUANTITIES = st.sampled_from(["1", "100m", "40Gi", "81559Mi", "1536Mi", "6G", "1e3", "-5"])
TIMES = st.datetimes(
    min_value=dt.datetime(2020, 1, 1), max_value=dt.datetime(2030, 1, 1), timezones=st.just(dt.UTC)
).map(lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ"))
WORDS = st.text(alphabet="abcdefghij-.", min_size=1, max_size=8)


def _strategy_for(annotation: Any, depth: int) -> st.SearchStrategy[Any]:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _strategy_for(args[0], depth)
    if origin in (typing.Union, types.UnionType):
        return _strategy_for(next(a for a in args if a is not type(None)), depth)
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is list:
        return st.lists(_strategy_for(args[0], depth + 1), max_size=2 if depth < 4 else 0)
    if origin is dict:
        return st.dictionaries(
            WORDS, _strategy_for(args[1], depth + 1), max_size=2 if depth < 4 else 0
        )
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return wire_strategy(annotation, depth + 1)
    simple: dict[Any, st.SearchStrategy[Any]] = {
        str: WORDS,
        int: st.integers(-(2**40), 2**40),
        bool: st.booleans(),
        Quantity: QUANTITIES,
        dt.datetime: TIMES,
    }
    if annotation in simple:
        return simple[annotation]
    return st.dictionaries(WORDS, st.integers(0, 9), max_size=2)  # Any: a JSON object


def wire_strategy(model: type[BaseModel], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Random wire documents for ``model``: any subset of its fields, camelCase keys."""
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, info in model.model_fields.items():
        if depth > 5 and typing.get_origin(info.annotation) is not typing.Literal:
            continue
        key = info.alias or name
        optional[key] = _strategy_for(info.annotation, depth)
    return st.fixed_dictionaries({}, optional=optional)


@pytest.mark.parametrize("model", TOP_LEVEL, ids=lambda m: m.__name__)
def test_every_model_survives_a_json_round_trip(model: type[ApiModel]) -> None:
    @given(wire_strategy(model))
    def round_trip(document: dict[str, Any]) -> None:
        decoded = model.model_validate(document)
        wire = decoded.to_wire()
        again = model.model_validate(json.loads(json.dumps(wire)))
        assert again.to_wire() == wire
        assert again == decoded

    round_trip()


FIXTURES = sorted(EXAMPLES.glob("nvidia/*.yaml")) + sorted(EXAMPLES.glob("seeds/00[034]*.yaml"))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_published_objects_decode_and_re_encode_identically(path: Any) -> None:
    for document in load_yaml_documents(path):
        if "kind" not in document:
            continue
        obj = kinds.decode(document)
        wire = obj.to_wire()
        # The published quantities are already canonical, so the output is identical.
        assert wire == document


def test_camel_case_and_omitted_empties() -> None:
    result = resourceapi.DeviceRequestAllocationResult(
        request="gpu",
        driver="gpu.nvidia.com",
        pool="node-1",
        device="gpu-0",
        share_id="2f3c0a5e-1d4b-4b8e-9e0a-0c8f7b6a5d4c",
    )
    assert result.to_wire() == {
        "request": "gpu",
        "driver": "gpu.nvidia.com",
        "pool": "node-1",
        "device": "gpu-0",
        "shareID": "2f3c0a5e-1d4b-4b8e-9e0a-0c8f7b6a5d4c",
    }
    attribute = resourceapi.DeviceAttribute.model_validate({"int": 3})
    assert attribute.int_ == 3
    assert attribute.to_wire() == {"int": 3}


def test_maps_are_written_with_sorted_keys() -> None:
    device = resourceapi.Device.model_validate(
        {"name": "d", "attributes": {"zeta": {"int": 1}, "alpha": {"int": 2}}}
    )
    assert list(device.to_wire()["attributes"]) == ["alpha", "zeta"]


def test_quantities_are_written_canonically() -> None:
    capacity = resourceapi.DeviceCapacity.model_validate({"value": "1.5Gi"})
    assert capacity.to_wire() == {"value": "1536Mi"}
    assert resourceapi.DeviceCapacity.model_validate({"value": 1024}).to_wire() == {"value": "1024"}


def test_unknown_fields_are_reported_with_their_paths_and_v1beta1_hint() -> None:
    document = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "deviceClassName": "x", "count": 2}]},
            "foo": 1,
        },
    }
    with pytest.raises(StrictDecodingError) as caught:
        kinds.decode(document)
    assert str(caught.value) == (
        'ResourceClaim in version "v1" cannot be handled as a ResourceClaim: strict decoding '
        'error: unknown field "spec.devices.requests[0].deviceClassName", unknown field '
        '"spec.devices.requests[0].count", unknown field "spec.foo"'
    )
    assert caught.value.hints == [
        "spec.devices.requests[0] has the v1beta1 shape: in resource.k8s.io/v1, move "
        "deviceClassName, count under spec.devices.requests[0].exactly (or list alternatives "
        "under spec.devices.requests[0].firstAvailable)"
    ]


def test_wrong_types_name_the_field() -> None:
    document = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "x", "count": "two"}}]
            }
        },
    }
    with pytest.raises(StrictDecodingError) as caught:
        kinds.decode(document)
    assert caught.value.problems == [
        "json: cannot unmarshal string into Go struct field "
        "ResourceClaim.spec.devices.requests[0].exactly.count of type int64"
    ]


def test_a_value_that_cannot_be_decoded_is_not_a_strict_decoding_error() -> None:
    """kube-apiserver's decoder stops at the first value of the wrong type (``kubectl patch
    deploy web -p '{"spec":{"replicas":"x"}}'``), before its strict checks: the message
    has no ``strict decoding error:``, which only unknown or duplicate fields get."""
    document = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "unknown": 1},
        "spec": {"replicas": "x"},
    }
    with pytest.raises(StrictDecodingError) as caught:
        kinds.decode(document)
    assert str(caught.value) == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
        "unmarshal string into Go struct field Deployment.spec.replicas of type int64"
    )
    del document["spec"]
    with pytest.raises(StrictDecodingError) as caught:
        kinds.decode(document)
    assert str(caught.value) == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding '
        'error: unknown field "metadata.unknown"'
    )


def test_bad_quantity_is_a_decoding_error() -> None:
    document = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {"devices": [{"name": "d", "capacity": {"memory": {"value": "80GB"}}}]},
    }
    with pytest.raises(StrictDecodingError, match="quantities must match the regular"):
        kinds.decode(document)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"apiVersion": "resource.k8s.io/v1beta3", "kind": "ResourceClaim"},
            'no matches for kind "ResourceClaim" in version "resource.k8s.io/v1beta3"',
        ),
        (
            {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim"},
            "allot serves resource.k8s.io/v1 only",
        ),
        ({"kind": "Pod"}, "Object 'apiVersion' is missing"),
        ({"apiVersion": "v1"}, "Object 'Kind' is missing"),
    ],
)
def test_unknown_or_missing_kinds(document: dict[str, Any], message: str) -> None:
    with pytest.raises(UnknownKindError, match=message):
        kinds.decode(document)


def _subclasses(model: type[ApiModel]) -> list[type[ApiModel]]:
    found = []
    for sub in model.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_every_model_builds_its_deferred_schema() -> None:
    """Models build their validators on first use (``defer_build``, for start-up): a
    definition pydantic cannot build must still fail here, not on a user's first request."""
    from allot.api import admission_v1, apiextensions_v1, tenancy  # noqa: F401  (all kinds)

    models = _subclasses(ApiModel)
    assert len(models) > 100
    for model in models:
        model.model_rebuild()
        assert model.__pydantic_complete__, model.__name__


@pytest.mark.parametrize("info", kinds.KINDS, ids=lambda info: info.kind)
def test_each_built_in_kind_names_its_model_and_is_found_from_it(info: kinds.KindInfo) -> None:
    assert isinstance(info.model_source, str)  # imported on first use, not with the table
    assert info.model.__name__ == info.kind
    assert info.model.__module__.startswith("allot.api.")
    sample = info.model.model_construct()
    assert kinds.kind_info(sample) is info
    assert kinds.lookup(info.api_version, info.kind) is info


def test_the_table_spells_the_tenancy_group_as_the_tenancy_models_do() -> None:
    assert (kinds.TENANCY_GROUP, kinds.TENANCY_VERSION) == (
        tenancy.TENANCY_GROUP,
        tenancy.TENANCY_VERSION,
    )


def test_a_model_outside_the_table_has_no_kind_info() -> None:
    with pytest.raises(KeyError):
        kinds.kind_info(metav1.Status())
