"""Endpoints and EndpointSlice: serving details (short name ``ep``), validation and
upstream's ``kubectl get`` columns (``printEndpoints``: NAME ENDPOINTS AGE;
``printEndpointSlice``: NAME ADDRESSTYPE PORTS ENDPOINTS AGE). The endpoints and
endpointslice controllers (:mod:`allot.controllers.endpoints`) write them for every Service
with a selector."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import endpoints
from allot.validation.objects import KindRules

SHOWN = 3
"""The printers show this many addresses, then `` + N more...``."""


def _with_more(shown: list[str], count: int) -> str:
    text = ",".join(shown)
    return f"{text} + {count - SHOWN} more..." if count > SHOWN else text


def format_endpoints(obj: Obj) -> str:
    """``formatEndpoints``: ``ip:port`` for every ready address and port (just the ip for
    a subset without ports); not-ready addresses are not shown."""
    subsets = obj.get("subsets") or []
    if not subsets:
        return "<none>"
    shown: list[str] = []
    count = 0
    for subset in subsets:
        ips = [address.get("ip") or "" for address in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        pairs = (
            [_host_port(ip, port.get("port") or 0) for port in ports for ip in ips]
            if ports
            else ips
        )
        count += len(pairs)
        shown += pairs[: max(0, SHOWN - len(shown))]
    return _with_more(shown, count)


def _host_port(ip: str, port: int) -> str:
    """Go's ``net.JoinHostPort``: IPv6 addresses in brackets."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _listed(items: list[str]) -> str:
    """``listWithMoreString``: an empty list is ``<unset>``."""
    return _with_more(items[:SHOWN], len(items)) or "<unset>"


def _slice_ports(obj: Obj) -> str:
    texts = []
    for port in obj.get("ports") or []:
        if port.get("port") is not None:
            texts.append(str(port["port"]))
        else:
            texts.append(port["name"] if port.get("name") is not None else "*")
    return _listed(texts)


def _slice_endpoints(obj: Obj) -> str:
    return _listed(
        [
            address
            for endpoint in obj.get("endpoints") or []
            for address in endpoint.get("addresses") or []
        ]
    )


STRATEGIES = (
    KindStrategy(
        "Endpoints",
        "endpoints",
        short_names=("ep",),
        rules=KindRules(validate=lambda obj, context: endpoints.validate_endpoints(obj)),
        table=Table(
            [
                NAME,
                column(
                    "Endpoints",
                    "The set of all endpoints is the union of all subsets. Addresses are "
                    "placed into subsets according to the IPs they share.",
                ),
                AGE,
            ],
            lambda o, n: [o["metadata"]["name"], format_endpoints(o), age(o, n)],
        ),
    ),
    KindStrategy(
        "EndpointSlice",
        "endpointslice",
        rules=KindRules(
            validate=lambda obj, context: endpoints.validate_endpoint_slice(obj),
            validate_update=lambda new, old, context: endpoints.validate_endpoint_slice_update(
                new, old
            ),
        ),
        table=Table(
            [
                NAME,
                column(
                    "AddressType",
                    "addressType specifies the type of address carried by this EndpointSlice.",
                ),
                column(
                    "Ports",
                    "ports specifies the list of network ports exposed by each endpoint in "
                    "this slice.",
                ),
                column("Endpoints", "endpoints is a list of unique endpoints in this slice."),
                AGE,
            ],
            lambda o, n: [
                o["metadata"]["name"],
                o.get("addressType") or "",
                _slice_ports(o),
                _slice_endpoints(o),
                age(o, n),
            ],
        ),
    ),
)
