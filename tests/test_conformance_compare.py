"""The conformance comparison (tests/conformance/compare.py): what it normalises away and
what it still reports, on hand-made answers (no server)."""

from __future__ import annotations

from typing import Any

from tests.conformance.compare import (
    comparable,
    differences,
    fingerprint,
    normalise,
    project,
)
from tests.conformance.corpus import Request
from tests.conformance.replay import Answer

REQUEST = Request(id="t/x", method="GET", path="/")


def _claim(uid: str, rv: str, name: str, time: str) -> dict[str, Any]:
    return {
        "kind": "ResourceClaim",
        "metadata": {"name": name, "generateName": "claim-", "uid": uid,
                     "resourceVersion": rv, "creationTimestamp": time,
                     "managedFields": [{"manager": "m", "time": time}]},
        "spec": {"devices": {"requests": [{"name": "gpu"}]}},
    }  # fmt: skip


def test_uids_times_versions_and_generated_names_are_normalised() -> None:
    left = _claim(
        "0b8d5d8e-5d4e-4d2a-9d0e-0f8f6e1b2c3d", "12", "claim-ab1cd", "2026-01-01T00:00:00Z"
    )
    right = _claim(
        "9f1e2d3c-4b5a-4678-9abc-def012345678", "987", "claim-zz9yx", "2027-05-05T10:10:10Z"
    )
    assert normalise(left) == normalise(right)
    assert normalise(left)["metadata"]["name"] == "claim-<generated>"


def test_a_different_message_is_one_difference_at_its_path() -> None:
    status = {
        "kind": "Status",
        "reason": "Invalid",
        "message": "a",
        "details": {"causes": [{"message": "x"}]},
    }
    other = {**status, "message": "b", "details": {"causes": [{"message": "y"}]}}
    found = differences(
        comparable(Answer(422, status, [], "application/json"), REQUEST),
        comparable(Answer(422, other, [], "application/json"), REQUEST),
    )
    assert found == [
        ("body.details.causes.0.message", "'x' != 'y'"),
        ("body.message", "'a' != 'b'"),
    ]
    assert fingerprint(found) == ["body.details.causes.*.message", "body.message"]


def test_codes_warnings_and_ignored_paths() -> None:
    request = Request(id="t/y", method="GET", path="/", ignore=("status",))
    left = comparable(
        Answer(200, {"spec": 1, "status": {"a": 1}}, ["w"], "application/json"), request
    )
    right = comparable(
        Answer(201, {"spec": 1, "status": {"a": 2}}, [], "application/json"), request
    )
    assert [path for path, _ in differences(left, right)] == ["code", "warnings"]


def test_table_ages_and_generated_names_in_cells() -> None:
    def table(age: str, name: str) -> dict[str, Any]:
        columns = [{"name": "Name", "type": "string"}, {"name": "Age", "type": "string"}]
        metadata = {"name": name, "generateName": "s-"}
        rows = [{"cells": [name, age], "object": {"metadata": metadata}}]
        return {"kind": "Table", "columnDefinitions": columns, "rows": rows}

    assert normalise(table("5s", "s-abcde")) == normalise(table("3m", "s-vwxyz"))
    assert normalise(table("5s", "s-abcde")) != normalise(table("5s", "other"))


def test_discovery_compares_the_resources_both_serve() -> None:
    def document(resources: list[dict[str, Any]]) -> dict[str, Any]:
        versions = [{"version": "v1", "resources": resources}]
        return {"items": [{"metadata": {"name": "apps"}, "versions": versions}]}

    ours = document([{"resource": "deployments", "verbs": ["get"]}])
    theirs = document([{"resource": "deployments", "verbs": ["get", "list"]}, {"resource": "x"}])
    left, right = project("discovery:apps", ours, theirs)
    assert set(right) == {"v1/deployments"}
    assert [path for path, _ in differences(left, right)] == ["v1/deployments.verbs"]
