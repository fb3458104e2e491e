"""The HTML pieces the dashboard's pages share: links to the node, tenant and claim pages,
tables, figures with their units, tenant colours, GPU tiles and MIG slices.

Every figure carries its unit (devices, claims, GiB, memory slices, device-hours) in its
text or its column's header; ages are kubectl's (``21m``, ``3h5m``); a GPU tile names its
model and memory, a MIG slice its profile (``1g.10gb``). Everything written here is
escaped; callers pass HTML only where a parameter says so. Used by
:mod:`allot.ops.dashboard` (the overview) and :mod:`allot.ops.dashboard_pages` (the
drill-down pages).
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Sequence
from urllib.parse import quote

from allot import vendors
from allot.api.quantity import Quantity
from allot.ops.audit import HOST_TENANT
from allot.ops.capacity import memory_gib
from allot.types import Obj

PALETTE = ("#f6c177", "#9ccfd8", "#c4a7e7", "#a3d9a5", "#f0a6ca", "#ffd6a5", "#b5c7f2", "#e6e29a")
CAPACITY_HEADERS = ["Published (devices)", "Allocated (devices)", "Free now (devices)",
                    "Unavailable (devices)", "Can still be allocated (devices)"]  # fmt: skip
"""The columns of a capacity row: free devices could each be allocated now; unavailable
ones wait for shared counters (or an incomplete pool); the last counts one after the
other, as free devices of a partitionable GPU may exclude each other."""


# ------------------------------------------------------------------ links
def node_href(node: str) -> str:
    return f"/ui/nodes/{quote(node, safe='')}"


def tenant_href(tenant: str) -> str:
    return f"/ui/tenants/{quote(tenant, safe='')}"


def claim_href(host_claim: str) -> str:
    """The page of a claim named ``namespace/name`` on the host."""
    namespace, _, name = host_claim.partition("/")
    return f"/ui/claims/{quote(namespace, safe='')}/{quote(name, safe='')}"


def link(href: str, text: str, label: str = "") -> str:
    aria = f' aria-label="{html.escape(label)}"' if label else ""
    return f'<a href="{html.escape(href)}"{aria}>{html.escape(text)}</a>'


# ---------------------------------------------------------------- figures
def count(value: int, unit: str) -> str:
    """``1 device``, ``3 devices`` (``unit`` singular; plural by adding ``s``)."""
    return f"{value} {unit}" if value == 1 else f"{value} {unit}s"


def memory(value: int | None) -> str:
    return memory_gib(value) if value else "unknown memory"


def tenant_memory(tenant: Obj) -> str:
    """A tenant row's GPU memory held, and its quota when it has one (``40 GiB of 80 GiB``)."""
    held = memory_gib(tenant["gpuMemoryBytes"])
    limit = tenant["gpuMemoryLimit"]
    return f"{held} of {memory_gib(Quantity.parse(limit).as_integer())}" if limit else held


def model(product: str, driver: str) -> str:
    """A GPU's model as a tile shows it: the product name without the vendor."""
    return vendors.short_model(driver, product) or "unknown model"


# ----------------------------------------------------------------- colours
def colour(tenant: str, order: Sequence[str] | None = None) -> str:
    """A tenant's colour: by its place among the tenants (distinct for the first eight),
    by a hash of its name when it is not listed."""
    if order and tenant in order:
        return PALETTE[list(order).index(tenant) % len(PALETTE)]
    return PALETTE[int(hashlib.sha1(tenant.encode()).hexdigest(), 16) % len(PALETTE)]


def tenant_order(tenants: list[Obj]) -> list[str]:
    return sorted({t["name"] for t in tenants} | {HOST_TENANT})


def swatch(tenant: str, order: Sequence[str]) -> str:
    """A tenant's name on its colour, linking to its page."""
    return (
        f'<a class="swatch" style="background:{colour(tenant, order)}" '
        f'href="{html.escape(tenant_href(tenant))}">{html.escape(tenant)}</a>'
    )


# ------------------------------------------------------------------ tables
def table(headers: list[str], rows: list[list[str]], empty: str) -> str:
    """An accessible table; cells are HTML already escaped by the caller."""
    if not rows:
        return f'<p class="empty">{html.escape(empty)}</p>'
    head = "".join(f"<th scope=col>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def capacity_table(key: str, header: str, rows: list[Obj], empty: str) -> str:
    """Capacity rows (per class or per MIG profile, as :func:`allot.ops.views.allocatable`
    gives them) with their units."""
    cells = [
        [f"<code>{html.escape(row[key])}</code>"]
        + [str(row[k]) for k in ("devices", "allocated", "free", "unavailable")]
        + [f"<strong>{row['allocatable']}</strong>"]
        for row in rows
    ]
    return table([header, *CAPACITY_HEADERS], cells, empty)


# ------------------------------------------------------------------- tiles
def gpu_tile(node: str, gpu: Obj, order: Sequence[str]) -> str:
    """A GPU: its name, model and memory, who holds it (or free, partitioned, unavailable),
    its partitions (MIG slices) by profile, and its memory slices in use. Partitions are
    called what the GPU's vendor calls them (``MIG partitioned``)."""
    tenant = gpu["tenant"]
    word = vendors.partition_word(gpu["driver"])
    states = {
        "held": f"held by {tenant} ({gpu.get('claim')})",
        "free": "whole GPU free",
        "unavailable": "unavailable (its shared counters are in use)",
        "partitioned": f"{word} partitioned",
    }
    held = states[gpu["state"]]
    in_use = sum(1 for s in gpu["slices"] if s["tenant"])
    if gpu["state"] == "partitioned":
        held = f"{word} partitioned, {count(in_use, f'{word} device')} in use"
    style = f' style="background:{colour(tenant, order)}"' if tenant else ""
    slices = "".join(_slice(s, order, word) for s in gpu["slices"])
    size = memory(gpu["memory"]) if gpu["memory"] else _partitions_memory(gpu["slices"], word)
    figure = f"{model(gpu['product'], gpu['driver'])}, {size}"
    published = "" if gpu.get("memorySlices") else f" of {len(gpu['slices'])}"  # static MIG
    shown = tenant or {"free": "free", "unavailable": "unavailable"}.get(
        gpu["state"], f"{word}: {in_use}{published} in use"
    )
    label = html.escape(f"{gpu['name']} on {node} ({figure}): {held}")
    holder = (
        link(claim_href(gpu["hostClaim"]), shown, f"claim {gpu.get('claim')}")
        if gpu.get("hostClaim")
        else html.escape(shown)
    )
    return (
        f'<div class="gpu state-{gpu["state"]}" tabindex="0" role="group" aria-label="{label}" '
        f'title="{label}"{style}><span class="label">{html.escape(gpu["name"])}</span>'
        f'<span class="model">{html.escape(model(gpu["product"], gpu["driver"]))}</span>'
        f'<span class="memory">{html.escape(size)}</span>'
        f'<span class="holder">{holder}</span>'
        f"{('<div class=slices>' + slices + '</div>') if slices else ''}"
        f"{_memory_bar(gpu.get('memorySlices'))}</div>"
    )


def _partitions_memory(slices: list[Obj], word: str) -> str:
    """A GPU published only as its partitions (static MIG, AMD partitions): the memory
    they have together."""
    total = sum(s["memory"] or 0 for s in slices)
    return (
        f"{memory(total)} in {count(len(slices), f'{word} device')}" if total else "unknown memory"
    )


def _slice(entry: Obj, order: Sequence[str], word: str) -> str:
    tenant = entry["tenant"]
    holder = f"held by {tenant} ({entry['claim']})" if tenant else "free"
    profile = entry["profile"] or word
    label = html.escape(
        f"{profile} {word} device {entry['name']}, {memory(entry['memory'])}: {holder}"
    )
    text = html.escape(profile)
    if tenant:
        style = f"background:{colour(tenant, order)}"
        href = html.escape(claim_href(entry["hostClaim"]))
        return (
            f'<a class="slice" href="{href}" aria-label="{label}" title="{label}" '
            f'style="{style}">{text}</a>'
        )
    return f'<span class="slice" tabindex="0" aria-label="{label}" title="{label}">{text}</span>'


def _memory_bar(slices: Obj | None) -> str:
    if not slices:
        return ""
    used, total = slices["used"], slices["total"]
    text = f"{used} of {total} memory slices in use"
    share = 100 * used // max(total, 1)
    return (
        f'<div class="bar" role="img" aria-label="{text}"><i style="width:{share}%"></i></div>'
        f'<span class="bar-text">{used} / {total} memory slices</span>'
    )


def tiles(nodes: list[Obj], order: Sequence[str], headings: bool = True) -> str:
    """Node cards with their GPU tiles (each node's name linking to its page)."""
    cards = []
    for node in nodes:
        gpus = "".join(gpu_tile(node["node"], gpu, order) for gpu in node["gpus"])
        title = f"<h3>{link(node_href(node['node']), node['node'])}</h3>" if headings else ""
        cards.append(f'<div class="node">{title}<div class="gpus">{gpus}</div></div>')
    return f'<div class="nodes">{"".join(cards)}</div>'


def legend(nodes: list[Obj], order: Sequence[str]) -> str:
    holders = sorted(
        {g["tenant"] for n in nodes for g in n["gpus"] if g["tenant"]}
        | {s["tenant"] for n in nodes for g in n["gpus"] for s in g["slices"] if s["tenant"]}
    )
    swatches = "".join(swatch(t, order) for t in holders)
    return (
        f'<div class="legend" aria-label="Tenants">{swatches}'
        '<span style="background:#f3f5f7">free</span>'
        '<span class="unavailable-key">unavailable</span></div>'
    )
