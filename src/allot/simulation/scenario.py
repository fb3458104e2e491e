"""Scenario files for ``allot simulate``: ``{features, objects, steps}`` decoded and checked.

``objects`` are ordinary manifests (DeviceClass, ResourceSlice, ResourceClaim, Node); a claim
with ``status.allocation`` counts as in use. A step is ``{claims: [ns/name, ...], node?,
name?}``; without ``steps`` every unallocated claim is one step, in file order. Problems are
raised as :class:`ScenarioError` naming the object or step. Pure: callers read the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from allot.allocator.requests import claim_label
from allot.api import core_v1_nodes as corev1
from allot.api import kinds
from allot.api import resource_v1 as resourceapi
from allot.api.errors import ApiError, StrictDecodingError
from allot.api.features import FeatureGateError, Features

SCENARIO_KEYS = {"features", "objects", "steps", "description"}
STEP_KEYS = {"claims", "node", "name"}


class ScenarioError(Exception):
    """The scenario file is not usable; the message names the place."""


@dataclass
class Step:
    index: int
    name: str
    claims: list[str]
    node: str | None = None


@dataclass
class Scenario:
    features: Features
    classes: list[resourceapi.DeviceClass] = field(default_factory=list)
    slices: list[resourceapi.ResourceSlice] = field(default_factory=list)
    claims: list[resourceapi.ResourceClaim] = field(default_factory=list)
    nodes: list[corev1.Node] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    def claim(self, label: str) -> resourceapi.ResourceClaim | None:
        return next((c for c in self.claims if claim_label(c) == label), None)


def parse_scenario(document: Any) -> Scenario:
    if not isinstance(document, dict):
        raise ScenarioError(
            "a scenario must be an object with 'objects' (and optionally 'features' and 'steps')"
        )
    unknown = sorted(set(document) - SCENARIO_KEYS)
    if unknown:
        raise ScenarioError(
            f"unknown scenario key(s): {', '.join(unknown)} (expected features, objects, steps)"
        )
    features_raw = document.get("features") or {}
    if not isinstance(features_raw, dict):
        raise ScenarioError("features: must be a mapping of gate names to true or false")
    try:
        features = Features.from_mapping(features_raw)
    except FeatureGateError as err:
        raise ScenarioError(f"features: {err}") from None
    if features.dra_list_type_attributes:
        raise ScenarioError(
            "features: DRAListTypeAttributes (alpha in 1.36) is not supported: kube-scheduler "
            "runs the experimental allocator with it, allot implements the incubating one "
            "(1.36's defaults)\nhint: leave the gate off, or remove it from 'features'"
        )
    scenario = Scenario(features)
    objects = document.get("objects")
    if not isinstance(objects, list):
        raise ScenarioError("'objects' must be a list of manifests")
    for index, obj in enumerate(objects):
        _add_object(scenario, index, obj)
    scenario.steps = _steps(scenario, document.get("steps"))
    return scenario


def _add_object(scenario: Scenario, index: int, document: Any) -> None:
    try:
        obj = kinds.decode(document)
    except ApiError as err:
        advice = err.hints if isinstance(err, StrictDecodingError) else []
        hints = "".join(f"\nhint: {hint}" for hint in advice)
        raise ScenarioError(f"objects[{index}]: {err}{hints}") from None
    if isinstance(obj, resourceapi.DeviceClass):
        scenario.classes.append(obj)
    elif isinstance(obj, resourceapi.ResourceSlice):
        scenario.slices.append(obj)
    elif isinstance(obj, resourceapi.ResourceClaim):
        if obj.metadata.namespace is None:
            obj.metadata.namespace = "default"
        resourceapi.apply_claim_defaults(obj.spec)  # as the API server stores a claim
        scenario.claims.append(obj)
    elif isinstance(obj, corev1.Node):
        scenario.nodes.append(obj)
    else:
        raise ScenarioError(
            f"objects[{index}]: kind {document.get('kind')} is not used by "
            "simulations (DeviceClass, ResourceSlice, ResourceClaim, Node)"
        )


def _steps(scenario: Scenario, raw: Any) -> list[Step]:
    if raw is None:
        pending = [c for c in scenario.claims if c.status is None or c.status.allocation is None]
        return [Step(i, claim_label(c), [claim_label(c)]) for i, c in enumerate(pending)]
    if not isinstance(raw, list):
        raise ScenarioError("'steps' must be a list")
    steps = []
    for index, step in enumerate(raw):
        if (
            not isinstance(step, dict)
            or not isinstance(step.get("claims"), list)
            or not step["claims"]
        ):
            raise ScenarioError(
                f"steps[{index}]: needs 'claims', a non-empty list of namespace/name"
            )
        unknown = sorted(set(step) - STEP_KEYS)
        if unknown:
            raise ScenarioError(f"steps[{index}]: unknown key(s): {', '.join(unknown)}")
        claims = [_qualified(str(c)) for c in step["claims"]]
        node = step.get("node")
        steps.append(
            Step(
                index,
                str(step.get("name") or ", ".join(claims)),
                claims,
                str(node) if node is not None else None,
            )
        )
    return steps


def _qualified(label: str) -> str:
    return label if "/" in label else f"default/{label}"
