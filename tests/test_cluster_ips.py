"""Service cluster IPs and node ports: allocated from the service range, deterministic,
never handed out twice while in use, requested ones honoured or refused with upstream's
texts, kept by an update that leaves them out."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from allot.registry.clusterips import (
    SERVICE_RANGE,
    AllocationError,
    allocate,
    keep_allocated,
)


def service(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"ports": [{"port": 80}], **spec},
    }


def allocated(*services: dict[str, Any]) -> list[dict[str, Any]]:
    done: list[dict[str, Any]] = []
    for item in services:
        allocate(item, done)
        done.append(item)
    return done


@given(st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=8), unique=True, max_size=40))
def test_addresses_are_distinct_and_in_range(names: list[str]) -> None:
    addresses = [s["spec"]["clusterIP"] for s in allocated(*(service(n) for n in names))]
    assert len(set(addresses)) == len(addresses)
    for address in addresses:
        parsed = ipaddress.ip_address(address)
        assert parsed in SERVICE_RANGE
        assert parsed not in (SERVICE_RANGE.network_address, SERVICE_RANGE.network_address + 1)


def test_allocation_is_deterministic_and_fills_the_spec() -> None:
    first, again = service("web"), service("web")
    allocate(first, [])
    allocate(again, [])
    assert first["spec"]["clusterIP"] == again["spec"]["clusterIP"]
    assert first["spec"]["clusterIPs"] == [first["spec"]["clusterIP"]]
    assert first["spec"]["ipFamilies"] == ["IPv4"]
    assert first["spec"]["ipFamilyPolicy"] == "SingleStack"
    headless = service("db", clusterIP="None")
    allocate(headless, [])
    assert headless["spec"]["clusterIPs"] == ["None"]
    external = service("ext", type="ExternalName", externalName="db.example.com")
    allocate(external, [])
    assert "clusterIP" not in external["spec"]


def test_an_address_in_use_is_not_given_again() -> None:
    web = service("web")
    allocate(web, [])
    taken = web["spec"]["clusterIP"]
    other = service("web")  # same hash start: probes past the taken address
    other["metadata"]["namespace"] = "default"
    allocate(other, [web])
    assert other["spec"]["clusterIP"] != taken


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"clusterIP": "10.96.0.10"},
            'spec.clusterIPs: Invalid value: ["10.96.0.10"]: failed to allocate IP 10.96.0.10: '
            "provided IP is already allocated",
        ),
        (
            {"clusterIP": "192.168.0.1"},
            'spec.clusterIPs: Invalid value: ["192.168.0.1"]: failed to allocate IP '
            "192.168.0.1: the provided IP (192.168.0.1) is not in the valid range. The range "
            "of valid IPs is 10.96.0.0/12",
        ),
        (
            {"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]},
            "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid "
            "range. The range of valid ports is 30000-32767",
        ),
        (
            {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]},
            "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated",
        ),
    ],
)
def test_requested_values_are_checked(spec: dict[str, Any], message: str) -> None:
    existing = service("old", clusterIP="10.96.0.10", type="NodePort")
    existing["spec"]["ports"] = [{"port": 80, "nodePort": 30080}]
    with pytest.raises(AllocationError) as raised:
        allocate(service("new", **spec), [existing])
    assert [str(e) for e in raised.value.errors] == [message]


def test_node_ports_and_what_an_update_keeps() -> None:
    node_port = service("np", type="NodePort")
    node_port["spec"]["ports"] = [{"port": 80}, {"port": 443, "nodePort": 30443}]
    allocate(node_port, [])
    ports = node_port["spec"]["ports"]
    assert ports[1]["nodePort"] == 30443
    assert 30000 <= ports[0]["nodePort"] <= 32767
    replaced = service("np", type="NodePort")
    replaced["spec"]["ports"] = [{"port": 80}, {"port": 443}]
    keep_allocated(replaced, node_port)
    assert replaced["spec"]["clusterIP"] == node_port["spec"]["clusterIP"]
    assert [p["nodePort"] for p in replaced["spec"]["ports"]] == [p["nodePort"] for p in ports]
