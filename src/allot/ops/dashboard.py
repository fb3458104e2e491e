"""The web dashboard at ``/ui``: fleet, capacity, tenants, fair sharing, pending claims,
alerts, usage; and a page per node, tenant and claim (:mod:`allot.ops.dashboard_pages`).

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
table. The detail pages refresh like the panels (``/ui/fragment/nodes/<node>``, ...);
opening one signed out shows the sign-in form, which returns to it (only ever to a page of
the dashboard). Mounted by :mod:`allot.platform`.
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
from urllib.parse import unquote

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from allot.ops import audit, views
from allot.ops import dashboard_html as ui
from allot.ops import dashboard_pages as pages
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
PANELS = ("fleet", "capacity", "tenants", "sharing", "pending", "alerts", "usage")
HEAD_LINKS = (
    '<link rel="icon" href="data:,"><link rel="stylesheet" href="/ui/static/dashboard.css">'
)
STATIC = {"dashboard.css": "text/css", "dashboard.js": "text/javascript"}
DETAIL_KINDS = ("nodes", "tenants", "claims")
TITLES = {
    "fleet": "Fleet: nodes, GPUs and their partitions",
    "capacity": "Capacity: what can still be allocated",
    "tenants": "Tenants",
    "sharing": "Fair sharing: guaranteed, borrowed and lent",
    "pending": "Pending claims",
    "alerts": "Alerts",
    "usage": "Usage per tenant (devices held per hour, last 24 hours)",
}


def dashboard_routes(registry: Registry, ops: Operations) -> list[Route]:
    """The dashboard's pages, served beside ``/clusters`` by the API server."""
    dashboard = Dashboard(registry, ops)
    return [
        Route("/ui", _secured(dashboard.page), methods=["GET"]),
        Route("/ui/login", _secured(dashboard.login), methods=["POST"]),
        Route("/ui/logout", _secured(dashboard.logout), methods=["POST"]),
        Route("/ui/fragment/{panel:path}", _secured(dashboard.fragment), methods=["GET"]),
        Route("/ui/static/{name}", _secured(dashboard.static), methods=["GET"]),
        *(
            Route(f"/ui/{kind}/{{rest:path}}", _secured(dashboard.detail), methods=["GET"])
            for kind in DETAIL_KINDS
        ),
        Route("/ui/{rest:path}", _secured(_elsewhere), methods=["GET"]),
    ]


async def _elsewhere(request: Request) -> Response:
    """A page of the dashboard a browser may open by hand: ``/ui/``, ``/ui/login`` (the
    address after a refused sign-in, entered again) and ``/ui/logout`` lead to the dashboard
    (signing out is a POST, so a link cannot sign anyone out); any other path is an HTML
    page saying it does not exist, not the API server's JSON Status."""
    if request.path_params["rest"] in ("", "login", "logout"):
        return RedirectResponse("/ui", status_code=303)
    return _not_found("There is no such page of the dashboard.")


def _not_found(message: str) -> HTMLResponse:
    return _page("allot — not found", f'<p class="error" role="alert">{html.escape(message)}</p>'
                 '<p><a href="/ui">Open the dashboard</a></p>', 404)  # fmt: skip


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

    async def detail(self, request: Request) -> Response:
        """A node's, tenant's or claim's page; signing in from it comes back to it."""
        path = request.url.path.removeprefix("/ui/")
        token = request.query_params.get("token")
        if token is not None:
            return self._sign_in(token, request.url.path)
        if not self._signed_in(request):
            return _login("", 200, request.url.path)
        found = pages.render(self.ops, path, self._order())
        if found is None:
            kind, _, rest = path.partition("/")
            if not rest.strip("/"):
                return _not_found("There is no such page of the dashboard.")
            return _not_found(f"There is no {kind.removesuffix('s')} {unquote(rest)}.")
        title, body = found
        return HTMLResponse(self._document(title, body, path))

    async def login(self, request: Request) -> Response:
        try:
            form = await request.form()
        except HTTPException:  # a body that is no form (a broken multipart upload)
            return _login("The sign-in form could not be read; send it again.", 400)
        back = str(form.get("next") or "/ui")
        return self._sign_in(str(form.get("token") or "").strip(), back)

    async def logout(self, request: Request) -> Response:
        self.sessions.close(request.cookies.get(COOKIE))
        response = RedirectResponse("/ui", status_code=303)
        response.delete_cookie(COOKIE, path="/ui", secure=True, httponly=True, samesite="strict")
        return response

    def _sign_in(self, token: str, back: str = "/ui") -> Response:
        if not _own_page(back):
            back = "/ui"
        if not self._host_token(token):
            return _login("That token does not belong to the host cluster.", 401, back)
        response = RedirectResponse(back, status_code=303)
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
        if panel in PANELS:
            return HTMLResponse(self.render_panel(panel, self.ops.capacity_document()))
        found = pages.render(self.ops, panel, self._order())
        if found is None:
            return HTMLResponse("no such panel", status_code=404)
        return HTMLResponse(found[1])

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return HTMLResponse("not found", status_code=404)
        body = resources.files("allot").joinpath("data", "ui", name).read_bytes()
        return Response(body, media_type=STATIC[name], headers={"Cache-Control": "no-cache"})

    # ------------------------------------------------------------ rendering
    def _order(self) -> list[str]:
        """The tenants in colour order (the overview's)."""
        return ui.tenant_order([{"name": name} for name in self.ops.tenant_specs()])

    def render_page(self) -> str:
        document = self.ops.capacity_document()
        sections = "".join(
            f'<section class="panel" aria-labelledby="h-{p}"><h2 id="h-{p}">{TITLES[p]}</h2>'
            f'<div id="panel-{p}" data-fragment="{p}" aria-live="polite">'
            f"{self.render_panel(p, document)}</div></section>"
            for p in PANELS
        )
        nav = "".join(f'<a href="#h-{p}">{p.capitalize()}</a>' for p in PANELS)
        return _chrome("allot — fleet dashboard", "fleet dashboard", document["time"], nav,
                       sections)  # fmt: skip

    def _document(self, title: str, body: str, path: str) -> str:
        """A drill-down page: its body refreshed like the overview's panels."""
        main = (
            f'<p class="crumbs"><a href="/ui">Dashboard</a> › {html.escape(title)}</p>'
            f"<h2 class=title>{html.escape(title)}</h2>"
            f'<div id="panel-detail" data-fragment="{html.escape(path)}" aria-live="polite">'
            f"{body}</div>"
        )
        nav = '<a href="/ui">Dashboard</a>'
        now = views.stamp(self.registry.clock())
        return _chrome(f"allot — {title}", title, now, nav, main)

    def render_panel(self, panel: str, document: Obj) -> str:
        renderers: dict[str, Callable[[Obj], str]] = {
            "fleet": _fleet,
            "capacity": _capacity,
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
        order = ui.tenant_order(document["tenants"])  # the fleet's colours, then the
        order += sorted(t for t in series if t not in order)  # tenants since deleted
        return _chart(series, order) + _usage_table(series, order)


# ----------------------------------------------------------------- panels
def _fleet(document: Obj) -> str:
    if not document["nodes"]:
        return '<p class="empty">No devices are published.</p>'
    order = ui.tenant_order(document["tenants"])
    return ui.legend(document["nodes"], order) + ui.tiles(document["nodes"], order)


def _capacity(document: Obj) -> str:
    allocatable = document["allocatable"]
    classes = ui.capacity_table("class", "Class", allocatable["classes"], "No device classes.")
    profiles = ui.capacity_table(
        "profile", "Partition profile", allocatable["profiles"], "No partitions are published."
    )
    return f"<h3>Per device class</h3>{classes}<h3>Per partition profile</h3>{profiles}"


def _tenants(document: Obj) -> str:
    order = ui.tenant_order(document["tenants"])
    rows = [
        [
            ui.swatch(t["name"], order),
            _quota_cell(t["quota"]),
            html.escape(ui.tenant_memory(t)),
            _held_cell(t["devices"]),
            html.escape(ui.count(t["allocated"], "claim")),
            html.escape(ui.count(t["pending"], "claim")),
        ]
        for t in document["tenants"]
    ]
    headers = ["Tenant", "Quota (used / hard)", "GPU memory held", "Devices held per class",
               "Allocated", "Pending"]  # fmt: skip
    return ui.table(headers, rows, "No tenants.")


def _held_cell(rows: list[Obj]) -> str:
    """Devices held per class: ``gpu-whole: 1 device (40 GiB)``."""
    if not rows:
        return '<span class="empty">none</span>'
    return "<br>".join(
        f"<code>{html.escape(r['class'])}</code>: "
        + html.escape(f"{ui.count(r['devices'], 'device')} ({ui.memory(r['gpuMemoryBytes'])})")
        for r in rows
    )


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
    shares = ui.table(headers, rows, "No tenant uses fair sharing.")
    idle = [
        [html.escape(r["cohort"]), html.escape(r["resource"]), html.escape(r["idle"])]
        for r in sharing.get("cohorts") or []
    ]
    return shares + (ui.table(["Cohort", "Resource", "Idle"], idle, "") if idle else "")


_PER_TENANT = ("tenant", "cohort", "admitted", "waiting", "preempted")
_SHARING_KEYS = ("tenant", "cohort", "resource", "guaranteed", "used", "borrowed", "lent",
                 "admitted", "waiting", "preempted")  # fmt: skip


def _quota_cell(rows: list[Obj]) -> str:
    if not rows:
        return '<span class="empty">none</span>'
    return "<br>".join(html.escape(f"{r['resource']}: {r['used']} / {r['hard']}") for r in rows)


def _pending(document: Obj) -> str:
    order = ui.tenant_order(document["tenants"])
    rows = [
        [
            ui.swatch(p["tenant"] or HOST_TENANT, order),
            ui.link(ui.claim_href(p["hostClaim"]), f"{p['namespace']}/{p['claim']}"),
            html.escape(", ".join(p["classes"])),
            f'<span title="{p["ageSeconds"]} s">{html.escape(p["age"])}</span>',
            html.escape(p["reason"]) + " "
            + ui.link(ui.claim_href(p["hostClaim"]) + "#explanation", "explanation",
                      f"why {p['namespace']}/{p['claim']} is pending"),
        ]
        for p in document["pending"]
    ]  # fmt: skip
    return ui.table(["Tenant", "Claim", "Classes", "Age", "Why"], rows, "No pending claims.")


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
    return ui.table(["Rule", "Severity", "Tenant", "Message"], rows, "No alerts are firing.")


def _chart(series: dict[str, list[float]], order: list[str]) -> str:
    """Devices held per tenant, hour by hour (device-hours in each hour, so the average
    number of devices held): the y axis in devices, the x axis in hours before now."""
    width, height, left, bottom, right = 720, 240, 70, 44, 12
    top = max(max(values) for values in series.values()) or 1.0
    plot = height - bottom - 10

    def x(hour: float) -> float:
        return left + hour * (width - left - right) / 23

    def y(value: float) -> float:
        return height - bottom - value / top * plot

    lines = [
        f'<polyline fill="none" stroke="{ui.colour(tenant, order)}" stroke-width="3" '
        f'points="{" ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))}">'
        f"<title>{html.escape(tenant)}</title></polyline>"
        for tenant, values in sorted(series.items())
    ]
    ticks = [
        f'<text x="{left - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end">{v:.3g}</text>'
        f'<line x1="{left}" y1="{y(v):.1f}" x2="{width - right}" y2="{y(v):.1f}" '
        'stroke="#e3e8ee"/>'
        for v in (0.0, top / 2, top)
    ]
    ticks += [
        f'<text x="{x(hour):.1f}" y="{height - bottom + 16}" font-size="11" '
        f'text-anchor="middle">{"now" if hour == 23 else f"−{23 - hour} h"}</text>'
        for hour in (0, 5, 11, 17, 23)
    ]
    axis = (
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" '
        f'stroke="#59636e"/><line x1="{left}" y1="10" x2="{left}" y2="{height - bottom}" '
        f'stroke="#59636e"/>{"".join(ticks)}'
        f'<text x="{(left + width) / 2}" y="{height - 6}" font-size="12" text-anchor="middle">'
        "hour (hours before now)</text>"
        f'<text transform="translate(14 {(height - bottom) / 2 + 10}) rotate(-90)" '
        'font-size="12" text-anchor="middle">devices held</text>'
    )
    names = ", ".join(sorted(series))
    return (
        f'<div class="chart"><svg viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Devices held per hour, in device-hours, for {html.escape(names)}">'
        f"{axis}{''.join(lines)}</svg></div>"
    )


def _usage_table(series: dict[str, list[float]], order: list[str]) -> str:
    rows = [[ui.swatch(t, order), f"{sum(v):.4f}"] for t, v in sorted(series.items())]
    return ui.table(["Tenant", "Device-hours (24 h)"], rows, "")


# ------------------------------------------------------------------ access
def _chrome(title: str, heading: str, time: str, nav: str, main: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title>{HEAD_LINKS}</head><body>"
        '<a class="skip" href="#main">Skip to content</a>'
        f'<header><h1><a href="/ui">allot</a></h1><span class="meta">{html.escape(heading)} · '
        f'<span id="refresh-status">as of {html.escape(time)}</span></span>'
        f'<nav aria-label="Sections">{nav}</nav>'
        '<form method="post" action="/ui/logout"><button type="submit">Sign out</button>'
        "</form></header>"
        f'<main id="main">{main}</main>'
        '<script src="/ui/static/dashboard.js" defer></script></body></html>'
    )


def _own_page(path: str) -> bool:
    """A path of the dashboard to return to after signing in (never another site's)."""
    return path == "/ui" or (
        path.startswith("/ui/")
        and path.split("/")[2] in DETAIL_KINDS
        and "//" not in path
        and "\\" not in path
    )


def _login(error: str, code: int, back: str = "/ui") -> HTMLResponse:
    message = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
    back = back if _own_page(back) else "/ui"
    return _page(
        "allot — sign in",
        "<h1>allot dashboard</h1><p>Sign in with the host cluster's token "
        "(<code>allot kubeconfig --token</code> prints it).</p>"
        f'{message}<form method="post" action="/ui/login"><label for="token">Host token</label>'
        '<input id="token" name="token" type="password" autocomplete="off" required>'
        f'<input type="hidden" name="next" value="{html.escape(back)}">'
        "<button type=submit>Sign in</button></form>",
        code,
    )


def _page(title: str, content: str, code: int) -> HTMLResponse:
    body = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f'{HEAD_LINKS}</head><body><main class="login">{content}</main></body></html>'
    )
    return HTMLResponse(body, status_code=code)
