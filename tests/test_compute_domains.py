"""The NVIDIA driver's ComputeDomain half (``allot.driver.computedomain``), table-driven from
``tests/scenarios/compute-domains.yaml``: the devices a GPU node publishes, fleets with
cliques, the domain's status from its daemons and the channel's prepare refusals; the
classes are the chart's (``examples/nvidia/deviceclasses.yaml``), the controller's
objects carry the domain's UID, and the CRD passes the API server's own CRD validation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.api.apiextensions_v1 import CustomResourceDefinition
from allot.driver import computedomain as cd
from allot.driver.fleet import CLIQUE_LABEL, FleetError, expand, parse_fleet
from allot.validation.schema import validate_crd
from tests.conftest import EXAMPLES, load_yaml_documents

TABLE = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "compute-domains.yaml").read_text(encoding="utf-8")
)
CLIQUES = {"nvl-0": "c.1", "nvl-1": "c.1", "other-0": "c.2", "plain-0": None}
DOMAIN: dict[str, Any] = {
    "apiVersion": cd.API_VERSION,
    "kind": cd.KIND,
    "metadata": {"name": "train", "namespace": "default", "uid": "uid-1"},
    "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "train-channel"}}},
}


def _ids(rows: list[dict[str, Any]]) -> list[str]:
    return [str(r["name"]) for r in rows]


def test_each_gpu_node_publishes_channel_0_and_daemon_0() -> None:
    (slice_,) = cd.node_slices("nvl-0", "node-uid")
    assert slice_["spec"]["driver"] == cd.DRIVER
    assert slice_["spec"]["pool"] == {"name": "nvl-0", "generation": 1, "resourceSliceCount": 1}
    assert slice_["metadata"]["generateName"] == "00000-compute-domain.nvidia.com-nvl-0-"
    assert slice_["spec"]["devices"] == TABLE["devices"]


def test_the_classes_are_the_charts() -> None:
    chart = [
        d
        for d in load_yaml_documents(EXAMPLES / "nvidia" / "deviceclasses.yaml")
        if d["metadata"]["name"].startswith("compute-domain")
    ]
    assert cd.device_classes() == chart


@pytest.mark.parametrize("row", TABLE["fleets"], ids=_ids(TABLE["fleets"]))
def test_fleet_cliques(row: dict[str, Any]) -> None:
    if "error" in row:
        with pytest.raises(FleetError) as raised:
            parse_fleet({"pools": row["pools"]})
        assert str(raised.value) == row["error"]
        return
    fleet = parse_fleet({"pools": row["pools"]})
    assert fleet.compute_domains is row["computeDomains"]
    assert {n.name: n.labels.get(CLIQUE_LABEL) for n in expand(fleet)} == row["cliques"]


def _daemon(entry: dict[str, Any]) -> dict[str, Any]:
    ready = "True" if entry["ready"] else "False"
    return {
        "metadata": {"name": f"d-{entry['node']}", "labels": {cd.DOMAIN_LABEL: "uid-1"}},
        "spec": {"nodeName": entry["node"]},
        "status": {"podIP": entry["ip"], "conditions": [{"type": "Ready", "status": ready}]},
    }


@pytest.mark.parametrize("row", TABLE["status"], ids=_ids(TABLE["status"]))
def test_status_from_the_daemons(row: dict[str, Any]) -> None:
    labels = {n: ({CLIQUE_LABEL: c} if c else {}) for n, c in CLIQUES.items()}
    nodes = cd.status_nodes([_daemon(d) for d in row["daemons"]], labels)
    assert nodes == row["nodes"]
    domain = {**DOMAIN, "spec": {**DOMAIN["spec"], "numNodes": row["numNodes"]}}
    assert cd.global_status(domain, nodes) == row["status"]


def _allocated_channel(domain_id: str) -> dict[str, Any]:
    template = cd.channel_template({**DOMAIN, "metadata": {**DOMAIN["metadata"], "uid": domain_id}})
    devices = template["spec"]["spec"]["devices"]
    return {
        "metadata": {"name": "w-0-channel", "namespace": "default", "uid": "claim-1"},
        "spec": {"devices": devices},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "channel",
                            "driver": cd.DRIVER,
                            "pool": "nvl-0",
                            "device": "channel-0",
                        }
                    ],
                    "config": [{**devices["config"][0], "source": "FromClaim"}],
                }
            }
        },
    }


@pytest.mark.parametrize("row", TABLE["prepare"], ids=_ids(TABLE["prepare"]))
def test_the_channels_prepare(row: dict[str, Any]) -> None:
    claim = _allocated_channel(row.get("domainID", "uid-1"))
    domain = None
    if "domain" in row:
        nodes = [{"name": n, "status": "Ready"} for n in row["domain"]["ready"]]
        metadata = {**DOMAIN["metadata"], "namespace": row["domain"]["namespace"]}
        domain = {**DOMAIN, "metadata": metadata, "status": {"status": "Ready", "nodes": nodes}}
    same = domain is not None and domain["metadata"]["namespace"] == "default"
    refusal = cd.channel_refusal(claim, "nvl-0", row.get("nodeDomain"), domain, same)
    assert refusal == row["refusal"]


def test_the_controllers_objects_carry_the_domain() -> None:
    channel, daemon_claims, daemons = (
        cd.channel_template(DOMAIN),
        cd.daemon_template(DOMAIN),
        cd.daemon_set(DOMAIN),
    )
    assert (channel["metadata"]["namespace"], channel["metadata"]["name"]) == (
        "default",
        "train-channel",
    )
    assert channel["metadata"]["labels"] == {cd.DOMAIN_LABEL: "uid-1", cd.TARGET_LABEL: "Workload"}
    assert cd.config_domains({"spec": channel["spec"]["spec"]}) == ["uid-1"]
    (request,) = daemon_claims["spec"]["spec"]["devices"]["requests"]
    assert request == {"name": "daemon", "exactly": {"deviceClassName": cd.DAEMON_CLASS}}
    assert daemon_claims["metadata"]["namespace"] == cd.DRIVER_NAMESPACE
    pod = daemons["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {cd.DOMAIN_LABEL: "uid-1"}
    assert pod["resourceClaims"] == [
        {"name": "compute-domain-daemon", "resourceClaimTemplateName": "computedomain-daemon-uid-1"}
    ]


def test_the_crd_is_valid() -> None:
    crd = CustomResourceDefinition.model_validate(cd.crd())
    assert not validate_crd(crd)
