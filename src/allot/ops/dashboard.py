"""The web dashboard at ``/ui``: fleet, tenants, fair sharing, pending claims, alerts, usage.

Server-rendered HTML; a small script (shipped with the package, no CDN) refreshes each panel
every two seconds from ``/ui/fragment/<panel>``, without reloading the page. Access needs
the host cluster's token: ``/ui?token=...`` (or the login form) opens a session whose random
id (never the token) goes into an HttpOnly, Secure, SameSite=Strict cookie for 12 hours;
every request checks it, ``/ui/logout`` ends it, and a restart of the platform ends them
all; an open page whose session ended goes back to the sign-in form and says why. Other
addresses under ``/ui`` a browser may open by hand answer as pages (the dashboard or a
404 page), never with the API server's JSON. Every
answer carries a Content-Security-Policy (scripts and styles from the dashboard itself only,
no framing), ``X-Frame-Options: DENY``, ``Referrer-Policy: no-referrer`` and
``X-Content-Type-Options: nosniff``. The fleet view draws nodes, their GPUs and MIG slices, each
coloured and labelled by the tenant holding it, or free; devices are focusable with a text
description (keyboard and screen readers), colours are paired with text. The usage chart is
an SVG of device-hours per tenant per hour over the last day, with the same numbers in a
table. Mounted by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import secrets
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from importlib import resources

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from allot.ops import audit
from allot.ops.audit import HOST_TENANT
from allot.ops.service import Operations
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.types import Obj

COOKIE = "allot_session"
SESSION_ENDED = (
    "Your session has ended (signed out elsewhere, expired, or the platform restarted). "
    "Sign in again."
)
"""Shown on the sign-in form the page's script returns to when a refresh is refused."""
SESSION_SECONDS = 12 * 3600
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; connect-src 'self'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
PALETTE = ("#f6c177", "#9ccfd8", "#c4a7e7", "#a3d9a5", "#f0a6ca", "#ffd6a5", "#b5c7f2", "#e6e29a")
PANELS = ("fleet", "tenants", "sharing", "pending", "alerts", "usage")
HEAD_LINKS = (
    '<link rel="icon" href="data:,"><link rel="stylesheet" href="/ui/static/dashboard.css">'
)
STATIC = {"dashboard.css": "text/css", "dashboard.js": "text/javascript"}


def dashboard_routes(registry: Registry, ops: Operations) -> list[Route]:
    """The dashboard's pages, served beside ``/clusters`` by the API server."""
    dashboard = Dashboard(registry, ops)
    return [
        Route("/ui", _secured(dashboard.page), methods=["GET"]),
        Route("/ui/login", _secured(dashboard.login), methods=["POST"]),
        Route("/ui/logout", _secured(dashboard.logout), methods=["POST"]),
        Route("/ui/fragment/{panel}", _secured(dashboard.fragment), methods=["GET"]),
        Route("/ui/static/{name}", _secured(dashboard.static), methods=["GET"]),
        Route("/ui/{rest:path}", _secured(_elsewhere), methods=["GET"]),
    ]


async def _elsewhere(request: Request) -> Response:
    """A page of the dashboard a browser may open by hand: ``/ui/``, ``/ui/login`` (the
    address after a refused sign-in, entered again) and ``/ui/logout`` lead to the dashboard
    (signing out is a POST, so a link cannot sign anyone out); any other path is an HTML
    page saying it does not exist, not the API server's JSON Status."""
    if request.path_params["rest"] in ("", "login", "logout"):
        return RedirectResponse("/ui", status_code=303)
    return _page("allot — not found", '<p class="error" role="alert">There is no such page of '
                 'the dashboard.</p><p><a href="/ui">Open the dashboard</a></p>', 404)  # fmt: skip


def _secured(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """The handler, its answers carrying the dashboard's security headers."""

    async def answer(request: Request) -> Response:
        response = await handler(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    return answer


class Sessions:
    """Signed-in browsers: random ids, kept as digests in memory until they expire."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._expiry: dict[str, float] = {}

    def open(self) -> str:
        session = secrets.token_urlsafe(32)
        self._expiry[_digest(session)] = self.clock() + SESSION_SECONDS
        return session

    def valid(self, session: str | None) -> bool:
        if not session:
            return False
        expiry = self._expiry.get(_digest(session))
        if expiry is None or expiry < self.clock():
            self._expiry.pop(_digest(session), None)
            return False
        return True

    def close(self, session: str | None) -> None:
        if session:
            self._expiry.pop(_digest(session), None)


def _digest(session: str) -> str:
    return hashlib.sha256(session.encode()).hexdigest()


class Dashboard:
    def __init__(self, registry: Registry, ops: Operations) -> None:
        self.registry = registry
        self.ops = ops
        self.sessions = Sessions()

    # ------------------------------------------------------------- access
    def _host_token(self, token: str) -> bool:
        return bool(token) and self.registry.tokens.cluster_for(token) == HOST_CLUSTER

    def _signed_in(self, request: Request) -> bool:
        return self.sessions.valid(request.cookies.get(COOKIE))

    async def page(self, request: Request) -> Response:
        token = request.query_params.get("token")
        if token is not None:
            return self._sign_in(token)
        if not self._signed_in(request):
            return _login(SESSION_ENDED if request.query_params.get("ended") else "", 200)
        return HTMLResponse(self.render_page())

    async def login(self, request: Request) -> Response:
        try:
            form = await request.form()
        except HTTPException:  # a body that is no form (a broken multipart upload)
            return _login("The sign-in form could not be read; send it again.", 400)
        return self._sign_in(str(form.get("token") or "").strip())

    async def logout(self, request: Request) -> Response:
        self.sessions.close(request.cookies.get(COOKIE))
        response = RedirectResponse("/ui", status_code=303)
        response.delete_cookie(COOKIE, path="/ui", secure=True, httponly=True, samesite="strict")
        return response

    def _sign_in(self, token: str) -> Response:
        if not self._host_token(token):
            return _login("That token does not belong to the host cluster.", 401)
        response = RedirectResponse("/ui", status_code=303)
        response.set_cookie(
            COOKIE,
            self.sessions.open(),
            max_age=SESSION_SECONDS,
            httponly=True,
            secure=True,
            samesite="strict",
            path="/ui",
        )
        return response

    async def fragment(self, request: Request) -> Response:
        if not self._signed_in(request):
            return HTMLResponse("sign in again", status_code=401)
        panel = request.path_params["panel"]
        if panel not in PANELS:
            return HTMLResponse("no such panel", status_code=404)
        return HTMLResponse(self.render_panel(panel, self.ops.capacity_document()))

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return HTMLResponse("not found", status_code=404)
        body = resources.files("allot").joinpath("data", "ui", name).read_bytes()
        return Response(body, media_type=STATIC[name], headers={"Cache-Control": "no-cache"})

    # ------------------------------------------------------------ rendering
    def render_page(self) -> str:
        document = self.ops.capacity_document()
        titles = {
            "fleet": "Fleet: nodes, GPUs and MIG slices",
            "tenants": "Tenants",
            "sharing": "Fair sharing: guaranteed, borrowed and lent",
            "pending": "Pending claims",
            "alerts": "Alerts",
            "usage": "Usage per tenant (device-hours, last 24 hours)",
        }
        sections = "".join(
            f'<section class="panel" aria-labelledby="h-{p}"><h2 id="h-{p}">{titles[p]}</h2>'
            f'<div id="panel-{p}" data-fragment="{p}" aria-live="polite">'
            f"{self.render_panel(p, document)}</div></section>"
            for p in PANELS
        )
        nav = "".join(f'<a href="#h-{p}">{p.capitalize()}</a>' for p in PANELS)
        return (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<title>allot — fleet dashboard</title>"
            f"{HEAD_LINKS}</head><body>"
            '<a class="skip" href="#main">Skip to content</a>'
            '<header><h1>allot</h1><span class="meta">fleet dashboard · '
            f'<span id="refresh-status">as of {html.escape(document["time"])}</span></span>'
            f'<nav aria-label="Sections">{nav}</nav>'
            '<form method="post" action="/ui/logout"><button type="submit">Sign out</button>'
            "</form></header>"
            f'<main id="main">{sections}</main>'
            '<script src="/ui/static/dashboard.js" defer></script></body></html>'
        )

    def render_panel(self, panel: str, document: Obj) -> str:
        renderers: dict[str, Callable[[Obj], str]] = {
            "fleet": _fleet,
            "tenants": _tenants,
            "sharing": _sharing,
            "pending": _pending,
            "alerts": _alerts,
            "usage": self._usage,
        }
        return renderers[panel](document)

    def _usage(self, document: Obj) -> str:
        now = self.registry.clock()
        entries = self.ops.log.entries()
        series: dict[str, list[float]] = defaultdict(lambda: [0.0] * 24)
        start = now - dt.timedelta(hours=24)
        for hour in range(24):
            since = start + dt.timedelta(hours=hour)
            for row in audit.usage(
                entries,
                since=since,
                until=since + dt.timedelta(hours=1),
                by=audit.GROUPINGS["tenant"],
            ):
                series[row.key][hour] = row.device_hours
        if not series:
            return '<p class="empty">No allocations in the last 24 hours.</p>'
        order = _tenant_order(document)  # the fleet's colours; then the tenants since deleted
        order += sorted(t for t in series if t not in order)
        return _chart(series, order) + _usage_table(series, order)


# ----------------------------------------------------------------- panels
def _colour(tenant: str, order: list[str] | None = None) -> str:
    """A tenant's colour: by its place among the tenants (distinct for the first eight),
    by a hash of its name when it is not listed."""
    if order and tenant in order:
        return PALETTE[order.index(tenant) % len(PALETTE)]
    return PALETTE[int(hashlib.sha1(tenant.encode()).hexdigest(), 16) % len(PALETTE)]


def _tenant_order(document: Obj) -> list[str]:
    return sorted({t["name"] for t in document["tenants"]} | {HOST_TENANT})


def _fleet(document: Obj) -> str:
    holders = sorted(
        {g["tenant"] for n in document["nodes"] for g in n["gpus"] if g["tenant"]}
        | {
            s["tenant"]
            for n in document["nodes"]
            for g in n["gpus"]
            for s in g["slices"]
            if s["tenant"]
        }
    )
    order = _tenant_order(document)
    legend = (
        "".join(
            f'<span style="background:{_colour(t, order)}">{html.escape(t)}</span>' for t in holders
        )
        + '<span style="background:#f3f5f7">free</span>'
    )
    nodes = "".join(_node(node, order) for node in document["nodes"])
    if not nodes:
        return '<p class="empty">No devices are published.</p>'
    return (
        f'<div class="legend" aria-label="Tenants">{legend}</div><div class="nodes">{nodes}</div>'
    )


def _node(node: Obj, order: list[str]) -> str:
    gpus = "".join(_gpu(node["node"], gpu, order) for gpu in node["gpus"])
    name = html.escape(node["node"])
    return f'<div class="node"><h3>{name}</h3><div class="gpus">{gpus}</div></div>'


def _gpu(node: str, gpu: Obj, order: list[str]) -> str:
    tenant = gpu["tenant"]
    held = f"held by {tenant} ({gpu.get('claim')})" if tenant else "whole GPU free"
    if not gpu["whole"]:
        held = "MIG partitioned"
    style = f' style="background:{_colour(tenant, order)}"' if tenant else ""
    slices = "".join(_slice(s, order) for s in gpu["slices"])
    bar = ""
    memory = gpu.get("memorySlices")
    if memory:
        share = 100 * memory["used"] // max(memory["total"], 1)
        bar = (
            f'<div class="bar" role="img" aria-label="{memory["used"]} of {memory["total"]} '
            f'memory slices in use"><i style="width:{share}%"></i></div>'
        )
    label = html.escape(f"{gpu['name']} on {node}: {held}")
    return (
        f'<div class="gpu" tabindex="0" role="group" aria-label="{label}" title="{label}"{style}>'
        f'<span class="label">{html.escape(gpu["name"])}</span>'
        f"{('<div class=slices>' + slices + '</div>') if slices else ''}{bar}</div>"
    )


def _slice(entry: Obj, order: list[str]) -> str:
    tenant = entry["tenant"]
    holder = f"held by {tenant} ({entry['claim']})" if tenant else "free"
    text = f"{entry['name']}: {holder}"
    style = f' style="background:{_colour(tenant, order)}"' if tenant else ""
    mark = html.escape(tenant[:2]) if tenant else ""
    label = html.escape(text)
    return (
        f'<span class="slice" tabindex="0" aria-label="{label}" title="{label}"{style}>'
        f"{mark}</span>"
    )


def _table(headers: list[str], rows: list[list[str]], empty: str) -> str:
    """An accessible table; cells are HTML already escaped by the caller."""
    if not rows:
        return f'<p class="empty">{html.escape(empty)}</p>'
    head = "".join(f"<th scope=col>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _tenants(document: Obj) -> str:
    rows = [
        [
            html.escape(t["name"]),
            _quota_cell(t["quota"]),
            html.escape(_memory_text(t)),
            str(t["allocated"]),
            str(t["pending"]),
        ]
        for t in document["tenants"]
    ]
    headers = ["Tenant", "Quota (used / hard)", "GPU memory", "Allocated claims", "Pending claims"]
    return _table(headers, rows, "No tenants.")


def _sharing(document: Obj) -> str:
    sharing = document.get("sharing") or {}
    rows, previous = [], None
    for row in sharing.get("tenants") or []:
        first = row["tenant"] != previous  # the tenant's own columns, on its first row
        previous = row["tenant"]
        shown = [k if first or k not in _PER_TENANT else "" for k in _SHARING_KEYS]
        rows.append([html.escape(str(row[k])) if k else "" for k in shown])
    headers = ["Tenant", "Cohort", "Resource", "Guaranteed", "Used", "Borrowed", "Lent",
               "Admitted", "Waiting", "Preempted"]  # fmt: skip
    shares = _table(headers, rows, "No tenant uses fair sharing.")
    idle = [
        [html.escape(r["cohort"]), html.escape(r["resource"]), html.escape(r["idle"])]
        for r in sharing.get("cohorts") or []
    ]
    return shares + (_table(["Cohort", "Resource", "Idle"], idle, "") if idle else "")


_PER_TENANT = ("tenant", "cohort", "admitted", "waiting", "preempted")
_SHARING_KEYS = ("tenant", "cohort", "resource", "guaranteed", "used", "borrowed", "lent",
                 "admitted", "waiting", "preempted")  # fmt: skip


def _memory_text(tenant: Obj) -> str:
    limit = tenant["gpuMemoryLimit"]
    return f"{tenant['gpuMemory']} of {limit}" if limit else tenant["gpuMemory"]


def _quota_cell(rows: list[Obj]) -> str:
    if not rows:
        return '<span class="empty">none</span>'
    return "<br>".join(html.escape(f"{r['resource']}: {r['used']} / {r['hard']}") for r in rows)


def _pending(document: Obj) -> str:
    rows = [
        [
            html.escape(p["tenant"] or HOST_TENANT),
            html.escape(f"{p['namespace']}/{p['claim']}"),
            html.escape(", ".join(p["classes"])),
            f"{p['ageSeconds']}s",
            html.escape(p["reason"]),
        ]
        for p in document["pending"]
    ]
    return _table(["Tenant", "Claim", "Classes", "Age", "Why"], rows, "No pending claims.")


def _alerts(document: Obj) -> str:
    rows = [
        [
            f'<span class="alert-{html.escape(a["severity"])}">{html.escape(a["rule"])}</span>',
            html.escape(a["severity"]),
            html.escape(a["tenant"] or ""),
            html.escape(a["message"]),
        ]
        for a in document["alerts"]
    ]
    return _table(["Rule", "Severity", "Tenant", "Message"], rows, "No alerts are firing.")


def _chart(series: dict[str, list[float]], order: list[str]) -> str:
    width, height, left, bottom = 720, 220, 64, 28
    top = max(max(values) for values in series.values()) or 1.0
    lines = []
    for tenant, values in sorted(series.items()):
        points = " ".join(
            f"{left + i * (width - left - 10) / 23:.1f},"
            f"{height - bottom - v / top * (height - bottom - 10):.1f}"
            for i, v in enumerate(values)
        )
        lines.append(
            f'<polyline fill="none" stroke="{_colour(tenant, order)}" stroke-width="3" '
            f'points="{points}">'
            f"<title>{html.escape(tenant)}</title></polyline>"
        )
    axis = (
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" '
        f'y2="{height - bottom}" stroke="#59636e"/>'
        f'<line x1="{left}" y1="10" x2="{left}" y2="{height - bottom}" stroke="#59636e"/>'
        f'<text x="4" y="16" font-size="11">{top:.3g}</text>'
        f'<text x="4" y="{height - bottom}" font-size="11">0</text>'
        f'<text x="{left}" y="{height - 8}" font-size="11">24 h ago</text>'
        f'<text x="{width - 60}" y="{height - 8}" font-size="11">now</text>'
    )
    names = ", ".join(sorted(series))
    return (
        f'<div class="chart"><svg viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Device-hours per hour for {html.escape(names)}">'
        f"{axis}{''.join(lines)}</svg></div>"
    )


def _usage_table(series: dict[str, list[float]], order: list[str]) -> str:
    rows = [
        [
            f'<span style="background:{_colour(t, order)};padding:0 6px">{html.escape(t)}</span>',
            f"{sum(v):.4f}",
        ]
        for t, v in sorted(series.items())
    ]
    return _table(["Tenant", "Device-hours (24 h)"], rows, "")


# ------------------------------------------------------------------ access
def _login(error: str, code: int) -> HTMLResponse:
    message = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
    return _page(
        "allot — sign in",
        "<h1>allot dashboard</h1><p>Sign in with the host cluster's token "
        "(<code>allot kubeconfig --token</code> prints it).</p>"
        f'{message}<form method="post" action="/ui/login"><label for="token">Host token</label>'
        '<input id="token" name="token" type="password" autocomplete="off" required>'
        "<button type=submit>Sign in</button></form>",
        code,
    )


def _page(title: str, content: str, code: int) -> HTMLResponse:
    body = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f'{HEAD_LINKS}</head><body><main class="login">{content}</main></body></html>'
    )
    return HTMLResponse(body, status_code=code)
