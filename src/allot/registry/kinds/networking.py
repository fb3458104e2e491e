"""Ingress, IngressClass and NetworkPolicy: serving details (short names ``ing``,
``netpol``; the Ingress ``/status``), the status a new Ingress starts with, defaulting,
validation and upstream's ``kubectl get`` columns. allot runs no ingress controller and no
network plugin: Ingresses route nothing and NetworkPolicies are not enforced (ledger)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.registry.kinds.workloadcolumns import selector_text
from allot.types import Obj
from allot.validation import networking
from allot.validation.objects import KindRules


def _empty_status(obj: Obj) -> None:
    """``PrepareForCreate`` resets the status; its load balancer is written ``{}``."""
    obj["status"] = {"loadBalancer": {}}


def _hosts(spec: Obj) -> str:
    """``formatHosts``: the first three hosts, ``*`` when no rule names one."""
    rules = spec.get("rules") or []
    hosts = [r["host"] for r in rules[:3] if r.get("host")]
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - 3} more..." if len(rules) > 3 else text


def _address(obj: Obj) -> str:
    """The load balancer's addresses, sorted (the API server prints tables wide, so
    upstream's 16-character cut never applies)."""
    points = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return ",".join(sorted({p.get("ip") or p.get("hostname") or "" for p in points} - {""}))


def _ingress_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    return [
        obj["metadata"]["name"],
        spec.get("ingressClassName") or "<none>",
        _hosts(spec),
        _address(obj),
        "80, 443" if spec.get("tls") else "80",
        age(obj, now),
    ]


def _parameters(spec: Obj) -> str:
    params = spec.get("parameters")
    if params is None:
        return "<none>"
    kind = params.get("kind") or ""
    if params.get("apiGroup") is not None:
        kind += "." + params["apiGroup"]
    return f"{kind}/{params.get('name') or ''}"


def _pod_selector(obj: Obj) -> str:
    """``metav1.FormatLabelSelector``: ``<none>`` for an empty selector."""
    return selector_text((obj.get("spec") or {}).get("podSelector")) or "<none>"


INGRESS_TABLE = Table(
    [
        NAME,
        column(
            "Class",
            "The name of the IngressClass resource that should be used for additional "
            "configuration",
        ),
        column("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
        column("Address", "Address is a list containing ingress points for the load-balancer"),
        column("Ports", "Ports of TLS configurations that open"),
        AGE,
    ],
    _ingress_cells,
)
INGRESS_CLASS_TABLE = Table(
    [
        NAME,
        column("Controller", "Controller that is responsible for handling this class"),
        column("Parameters", "A reference to a resource with additional parameters"),
        AGE,
    ],
    lambda o, n: [
        o["metadata"]["name"],
        (o.get("spec") or {}).get("controller") or "",
        _parameters(o.get("spec") or {}),
        age(o, n),
    ],
)
NETWORK_POLICY_TABLE = Table(
    [
        NAME,
        column(
            "Pod-Selector",
            "Selects the pods to which this NetworkPolicy object applies. The array of "
            "ingress rules is applied to any pods selected by this field. Multiple network "
            "policies can select the same set of pods. In this case, the ingress rules for "
            "each are combined additively. This field is NOT optional and follows standard "
            "label selector semantics. An empty podSelector matches all pods in this "
            "namespace.",
        ),
        AGE,
    ],
    lambda o, n: [o["metadata"]["name"], _pod_selector(o), age(o, n)],
)

STRATEGIES = (
    KindStrategy(
        "Ingress",
        "ingress",
        short_names=("ing",),
        subresources=("status",),
        rules=KindRules(
            validate=lambda obj, context: networking.validate_ingress(obj),
            validate_status=lambda new, old, context: networking.validate_ingress_status(new, old),
        ),
        initial_status=_empty_status,
        table=INGRESS_TABLE,
    ),
    KindStrategy(
        "IngressClass",
        "ingressclass",
        rules=KindRules(
            defaults=networking.default_ingress_class,
            validate=lambda obj, context: networking.validate_ingress_class(obj),
            validate_update=lambda new, old, context: networking.validate_ingress_class_update(
                new, old
            ),
        ),
        table=INGRESS_CLASS_TABLE,
    ),
    KindStrategy(
        "NetworkPolicy",
        "networkpolicy",
        short_names=("netpol",),
        rules=KindRules(
            defaults=networking.default_network_policy,
            validate=lambda obj, context: networking.validate_network_policy(obj),
        ),
        table=NETWORK_POLICY_TABLE,
    ),
)
