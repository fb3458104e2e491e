"""The dashboard's drill-down pages: one per node, tenant and claim.

``/ui/nodes/<node>``: the node's GPUs (model, memory, MIG slices by profile, who holds
them), what it can still allocate per class and MIG profile, its pools, the claims holding
its devices, its labels and taints. ``/ui/tenants/<tenant>`` (``host`` for the host's own
claims): quota, GPU memory, devices held per class now and device-hours per class over the
last day, its claims. ``/ui/claims/<namespace>/<name>`` (the host's names; the tenant's
are shown): requests' classes, the devices it holds, the pods it is reserved for, and for
a pending claim why (``#explanation``: ``allot explain``'s answer per pod that uses it) and
what its classes can still allocate. Every node, tenant and claim named links to its page.
The documents come from :class:`allot.ops.service.Operations`; rendered for
:mod:`allot.ops.dashboard`, which serves them and refreshes them like its panels.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from urllib.parse import unquote

from allot.ops import dashboard_html as ui
from allot.ops.capacity import memory_text
from allot.ops.service import Operations
from allot.types import Obj

Page = tuple[str, str]  # title, body (HTML)


def render(ops: Operations, path: str, order: Sequence[str]) -> Page | None:
    """The page at ``path`` below ``/ui/`` (``nodes/N``, ``tenants/T``, ``claims/NS/N``),
    None when there is no such page or no such object."""
    kind, _, rest = path.partition("/")
    parts = [unquote(p) for p in rest.split("/")] if rest else []
    pages: dict[str, tuple[int, Callable[[list[str]], Page | None]]] = {
        "nodes": (1, lambda p: _node(ops.node_document(p[0]), order)),
        "tenants": (1, lambda p: _tenant(ops.tenant_document(p[0]), order)),
        "claims": (2, lambda p: _claim(ops.claim_document(p[0], p[1]), order)),
    }
    entry = pages.get(kind)
    if entry is None or len(parts) != entry[0] or not all(parts):
        return None
    return entry[1](parts)


def _section(title: str, body: str, anchor: str = "") -> str:
    ident = f' id="{anchor}"' if anchor else ""
    return f'<section class="panel"{ident}><h2>{html.escape(title)}</h2>{body}</section>'


def _claims_table(rows: list[Obj], order: Sequence[str], empty: str) -> str:
    cells = [
        [
            ui.link(ui.claim_href(r["hostClaim"]), r["claim"]),
            ui.swatch(r["tenant"], order),
            html.escape(", ".join(r["classes"])),
            html.escape(r["state"]),
            html.escape(ui.count(r["devices"], "device")),
            html.escape(r["age"]),
        ]
        for r in rows
    ]
    headers = ["Claim", "Tenant", "Classes", "State", "Devices held", "Age"]
    return ui.table(headers, cells, empty)


# -------------------------------------------------------------------- node
def _node(document: Obj | None, order: Sequence[str]) -> Page | None:
    if document is None:
        return None
    node = document["node"]
    gpus = ui.tiles([{"node": node, "gpus": document["gpus"]}], order, headings=False)
    pools = ui.table(
        ["Pool", "Driver", "Devices", "Allocated (devices)", "Free now (devices)",
         "Unavailable (devices)", "Classes"],
        [[html.escape(r["pool"]), html.escape(r["driver"]), str(r["devices"]),
          str(r["allocated"]), str(r["free"]), str(r["unavailable"]),
          html.escape(", ".join(r["classes"]))] for r in document["pools"]],
        "No pools publish devices on this node.",
    )  # fmt: skip
    capacity = document["capacity"]
    facts = [
        f"<code>{html.escape(k)}={html.escape(v)}</code>" for k, v in document["labels"].items()
    ]
    taints = [f"<code>{html.escape(t)}</code>" for t in document["taints"]]
    about = (
        f"<p><strong>Taints:</strong> {' '.join(taints) or 'none'}</p>"
        f"<p><strong>Labels:</strong> {' '.join(facts) or 'none'}</p>"
    )
    body = (
        _section("GPUs", gpus if document["gpus"] else '<p class="empty">No GPUs.</p>')
        + _section(
            "Capacity on this node",
            "<h3>Per device class</h3>"
            + ui.capacity_table("class", "Class", capacity["classes"], "No device classes.")
            + "<h3>Per partition profile</h3>"
            + ui.capacity_table(
                "profile", "Partition profile", capacity["profiles"], "No partitions."
            ),
        )
        + _section("Pools", pools)
        + _section("Claims holding its devices",
                   _claims_table(document["claims"], order, "No claim holds a device here."))
        + _section("Node", about)
    )  # fmt: skip
    return f"Node {node}", body


# ------------------------------------------------------------------ tenant
def _tenant(document: Obj | None, order: Sequence[str]) -> Page | None:
    if document is None:
        return None
    summary = document["summary"]
    facts = []
    if summary is not None:
        facts.append(f"GPU memory held: {ui.tenant_memory(summary)}")
        facts += [f"{q['resource']}: {q['used']} / {q['hard']}" for q in summary["quota"]]
    else:
        facts.append("the host's own claims (namespaces of no tenant)")
    devices = ui.table(
        ["Class", "Devices held", "GPU memory held"],
        [[f"<code>{html.escape(r['class'])}</code>", html.escape(ui.count(r["devices"], "device")),
          html.escape(ui.memory(r["gpuMemoryBytes"]))] for r in document["devices"]],
        "No devices held.",
    )  # fmt: skip
    usage = ui.table(
        ["Class", "Device-hours (24 h)", "GPU memory GiB-hours (24 h)"],
        [[f"<code>{html.escape(r['class'])}</code>", f"{r['device_hours']:.4f}",
          f"{r['gpu_memory_gib_hours']:.4f}"] for r in document["usage"]],
        "No allocations in the last 24 hours.",
    )  # fmt: skip
    body = (
        _section("Quota", "<ul>" + "".join(f"<li>{html.escape(f)}</li>" for f in facts) + "</ul>")
        + _section("Devices held per class now", devices)
        + _section("Usage per class (last 24 hours)", usage)
        + _section("Claims", _claims_table(document["claims"], order, "No claims."))
    )
    return f"Tenant {document['tenant']}", body


# ------------------------------------------------------------------- claim
def _claim(document: Obj | None, order: Sequence[str]) -> Page | None:
    if document is None:
        return None
    facts = [
        ("Tenant", ui.swatch(document["tenant"], order)),
        ("Name in its tenant", html.escape(document["claim"])),
        ("Name on the host", f"<code>{html.escape(document['hostClaim'])}</code>"),
        ("Classes", html.escape(", ".join(document["classes"]) or "none")),
        ("State", html.escape(document["state"])),
        ("Age", html.escape(document["age"])),
        ("Reserved for", html.escape(", ".join(document["reservedFor"]) or "no pod")),
    ]
    about = "<dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
    devices = ui.table(
        ["Device", "Node", "Model", "Memory", "Partition profile", "Class"],
        [[f"<code>{html.escape(d['pool'])}/{html.escape(d['device'])}</code>",
          ui.link(ui.node_href(d["node"]), d["node"]) if d["node"] else "",
          html.escape(ui.model(d["product"], d["driver"])),
          html.escape(f"{ui.memory(d['memory'])} ({memory_text(d['memory'])})"),
          html.escape(d["profile"] or "whole GPU"), html.escape(d["class"])]
         for d in document["allocatedDevices"]],
        "It holds no devices.",
    )  # fmt: skip
    body = (
        _section("Claim", about)
        + _section("Requests", _requests(document["requests"]))
        + _section("Devices", devices)
    )
    if document["state"] == "pending":
        body += _section("Why it is pending", _why(document), anchor="explanation")
    return f"Claim {document['claim']}", body


def _requests(requests: list[Obj]) -> str:
    rows = [
        [
            html.escape(r["name"] + (f" / {a['name']}" if a["name"] else "")),
            f"<code>{html.escape(a['class'])}</code>",
            html.escape(a["count"] if a["count"] == "all" else ui.count(int(a["count"]), "device")),
            "<br>".join(f"<code>{html.escape(e)}</code>" for e in a["selectors"]) or "none",
        ]
        for r in requests
        for a in r["alternatives"]
    ]
    return ui.table(["Request", "Class", "Asks for", "Selectors"], rows, "No requests.")


def _why(document: Obj) -> str:
    explanations = "".join(f"<pre>{html.escape(text)}</pre>" for text in document["explanation"])
    reason = f"<p>{html.escape(document['reason'])}</p>" if not explanations else ""
    capacity = ui.capacity_table(
        "class", "Class", document["capacity"], "Its classes publish no devices."
    )
    profiles = ui.capacity_table("profile", "Partition profile", document["profiles"], "")
    return (
        f"{reason}{explanations}<h3>What its classes can still allocate (whole fleet)</h3>"
        f"{capacity}"
        + (f"<h3>Per partition profile (whole fleet)</h3>{profiles}" if profiles else "")
    )
