"""The dashboard in headless Chromium (Debian's ``chromium``, driven by Playwright): the
fleet view shows the devices with the right tenants, a pending claim appears and
disappears without a reload, the page logs no console errors and can be used with the
keyboard. A screenshot is kept in ``artifacts/dashboard.png``. Skips without Chromium."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from allot.cli.main import main as allot
from tests.e2e.chromium import ARTIFACTS, launched, open_dashboard
from tests.e2e.tenancy import (
    REPO,
    SLICE_TEMPLATE,
    Tenancy,
    seed_platform,
    slice_trainer,
    write_values,
)

pytestmark = pytest.mark.slow
LEGAL = str(REPO / "examples/tenancy/legal-ai-workload.yaml")
RESEARCH = str(REPO / "examples/tenancy/research-ai-workload.yaml")


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    with seed_platform(tmp_path_factory.mktemp("dashboard")) as running:
        running.as_tenant("legal-ai", "apply", "-f", LEGAL)
        running.as_tenant("research-ai", "apply", "-f", RESEARCH)
        running.wait(
            lambda: (
                all(
                    (c.get("status") or {}).get("allocation")
                    for c in running.host_json("resourceclaims", "-A")["items"]
                )
                and len(running.host_json("resourceclaims", "-A")["items"]) == 2
            ),
            "both claims allocated",
        )
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched()


def _open(browser: Any, tenancy: Tenancy) -> tuple[Any, list[str]]:
    return open_dashboard(browser, tenancy)


def test_fleet_view_shows_devices_and_tenants(browser: Any, tenancy: Tenancy) -> None:
    page, problems = _open(browser, tenancy)
    assert page.url.endswith("/ui")  # signed in: a session cookie
    whole = page.locator('.gpu[aria-label*="held by legal-ai (default/legal-whole-gpu)"]')
    assert whole.count() == 1
    assert "a100-whole-pool-0" in whole.get_attribute("aria-label")
    slices = page.locator(".slice")
    assert slices.count() == 7
    held = page.locator('.slice[aria-label*="held by research-ai (default/research-gpu-slice)"]')
    assert held.count() == 1
    assert page.locator('.slice[aria-label$=": free"]').count() == 6
    tenants = page.locator("#panel-tenants").inner_text()
    assert "legal-ai" in tenants
    assert "research-ai" in tenants
    assert "gpu-whole.deviceclass.resource.k8s.io/devices: 1 / 1" in tenants
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
    assert problems == []


def test_a_pending_claim_appears_and_disappears_live(browser: Any, tenancy: Tenancy) -> None:
    page, problems = _open(browser, tenancy)
    page.evaluate("window.__sameDocument = true")
    claim = Path(RESEARCH).read_text().split("\n---\n")[0].replace("research-gpu-slice", "second")
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=claim)
    pending = page.locator("#panel-pending")
    pending.get_by_text("default/second").wait_for(timeout=15000)
    assert "no pod uses it yet" in pending.inner_text()
    tenancy.as_tenant("research-ai", "delete", "resourceclaim", "second")
    page.get_by_text("No pending claims.").wait_for(timeout=15000)
    assert page.evaluate("window.__sameDocument") is True  # updated without a reload
    assert problems == []


def test_keyboard_and_labels(browser: Any, tenancy: Tenancy) -> None:
    page, problems = _open(browser, tenancy)
    assert page.get_attribute("html", "lang") == "en"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    unlabelled = page.evaluate(
        "Array.from(document.querySelectorAll('.gpu, .slice'))"
        ".filter(e => !e.getAttribute('aria-label') || e.tabIndex < 0).length"
    )
    assert unlabelled == 0
    assert problems == []


def test_the_dashboard_needs_the_host_token(browser: Any, tenancy: Tenancy) -> None:
    context = browser.new_context(ignore_https_errors=True)
    page = context.new_page()
    url = tenancy.cluster.server.endpoint.url
    tenant_token = tenancy.cluster.server.api.registry.tokens.ensure("legal-ai")
    response = page.goto(f"{url}/ui?token={tenant_token}")
    assert response.status == 401
    assert "does not belong to the host cluster" in page.inner_text("main")
    page.goto(f"{url}/ui")
    assert page.locator("input#token").count() == 1


def test_signing_in_through_the_form(browser: Any, tenancy: Tenancy) -> None:
    """What a new user does: open /ui, paste the host token, press Sign in."""
    context = browser.new_context(ignore_https_errors=True)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    server = tenancy.cluster.server
    page.goto(f"{server.endpoint.url}/ui")
    page.get_by_label("Host token").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    assert "does not belong to the host cluster" in page.inner_text("main")
    page.get_by_label("Host token").fill(server.api.registry.tokens.ensure("host"))
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    assert page.url.endswith("/ui")
    assert page.locator("#panel-fleet .gpu").count() >= 1
    page.reload()  # the session is a cookie: still signed in
    assert page.locator("input#token").count() == 0
    assert problems == []


def test_a_page_whose_session_ends_goes_back_to_the_sign_in_form(
    browser: Any, tenancy: Tenancy
) -> None:
    """Signing out in a second tab ends the session the first tab's refreshes use: that
    tab returns to the sign-in form, which says why, instead of showing stale panels."""
    page, problems = _open(browser, tenancy)
    assert page.locator("#panel-fleet .gpu").count() >= 1
    other = page.context.new_page()
    other.goto(f"{tenancy.cluster.server.endpoint.url}/ui")
    with other.expect_navigation():
        other.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/ui?ended=1", timeout=15_000)
    assert page.locator("input#token").count() == 1
    assert "Your session has ended" in page.inner_text("main")
    assert [p for p in problems if "401" not in p] == []  # the refused refresh is logged


def test_addresses_typed_by_hand_lead_to_the_dashboard(browser: Any, tenancy: Tenancy) -> None:
    """After a refused sign-in the address bar says /ui/login: opening it again (or /ui/,
    or /ui/logout) shows the dashboard's sign-in form, not the API server's JSON; a path
    the dashboard does not have says so in a page; a token pasted with spaces signs in."""
    context = browser.new_context(ignore_https_errors=True)
    page = context.new_page()
    server = tenancy.cluster.server
    page.goto(f"{server.endpoint.url}/ui")
    page.get_by_label("Host token").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    assert page.url.endswith("/ui/login")
    for path in ("/ui/login", "/ui/", "/ui/logout"):
        response = page.goto(f"{server.endpoint.url}{path}")
        assert response.status == 200, path
        assert page.url.endswith("/ui"), path
        assert page.locator("input#token").count() == 1, path
    response = page.goto(f"{server.endpoint.url}/ui/tenants")
    assert response.status == 404
    assert "There is no such page of the dashboard." in page.inner_text("main")
    page.get_by_role("link", name="Open the dashboard").click()
    page.get_by_label("Host token").fill(f"  {server.api.registry.tokens.ensure('host')} ")
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    assert page.locator("#panel-fleet .gpu").count() >= 1


def test_a_claim_from_a_template_is_named_as_its_tenant_sees_it(
    browser: Any, tenancy: Tenancy
) -> None:
    """A tenant pod's claim from a template: the fleet view names the holder by the claim
    the tenant's ``kubectl get resourceclaims`` lists, as for the tenant's own claims."""
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=json.dumps(SLICE_TEMPLATE))
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=json.dumps(slice_trainer()))
    try:
        generated = tenancy.wait(
            lambda: [
                c["metadata"]["name"]
                for c in tenancy.tenant_json("research-ai", "resourceclaims")["items"]
                if c["metadata"]["name"].startswith("trainer-gpu-")
                and (c.get("status") or {}).get("allocation")
            ],
            "the trainer's claim allocated",
        )
        page, problems = _open(browser, tenancy)
        held = page.locator(f'.slice[aria-label$="held by research-ai (default/{generated[0]})"]')
        assert held.count() == 1
        assert problems == []
    finally:
        tenancy.as_tenant("research-ai", "delete", "pod", "trainer", "--wait=true")
        tenancy.wait(
            lambda: len(tenancy.host_json("resourceclaims", "-A")["items"]) == 2,
            "the trainer's claim released",
        )


def test_a_deleted_tenant_keeps_a_colour_of_its_own_in_the_usage_chart(
    browser: Any, tenancy: Tenancy, tmp_path: Path
) -> None:
    """The usage of the last day still lists a tenant deleted since (its device-hours are
    billed); its colour differs from every other tenant's, as the live tenants' do."""
    values = write_values(tmp_path / "vision-ai.yaml", "research-ai")
    tenancy.create_tenant("vision-ai", "-f", str(values))
    tenancy.as_tenant("vision-ai", "apply", "-f", "-", stdin=json.dumps(SLICE_TEMPLATE))
    tenancy.as_tenant("vision-ai", "apply", "-f", "-", stdin=json.dumps(slice_trainer()))
    tenancy.wait(
        lambda: any(
            (c.get("status") or {}).get("allocation")
            for c in tenancy.host_json("resourceclaims", "-n", "tenant-vision-ai")["items"]
        ),
        "vision-ai's claim allocated",
    )
    assert allot(["tenant", "delete", "vision-ai", "--data-dir", str(tenancy.data_dir)]) == 0
    page, problems = _open(browser, tenancy)
    swatches = page.locator("#panel-usage td .swatch")
    colours = {s.inner_text(): s.evaluate("e => e.style.background") for s in swatches.all()}
    assert "vision-ai" in colours
    assert len(set(colours.values())) == len(colours), colours
    assert problems == []
