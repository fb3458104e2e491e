"""The dashboard's drill-down pages and capacity in headless Chromium, on seed 000's fleet
plus the DynamicMIG H100 of tests/scenarios/dynamic-mig-capacity.yaml (three 2g.20gb held,
a 3g.40gb pending): capacity per class and MIG profile counts the shared counters (also in
``allot top`` and ``/metrics``); GPU tiles name model and memory and MIG slices their
profile; node, tenant and claim pages link to each other, a pending claim to its
explanation; signing in from a page comes back to it. Screenshots of every page are kept
in ``artifacts/``. Skips without Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from allot.cli.main import main as allot
from tests.e2e.chromium import ARTIFACTS, launched, open_dashboard
from tests.e2e.dashboard_fleet import BIG, SCENARIO, dashboard_platform
from tests.e2e.tenancy import Tenancy

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    with dashboard_platform(tmp_path_factory.mktemp("dashboard-pages")) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched()


def _open(browser: Any, tenancy: Tenancy, path: str = "/ui") -> tuple[Any, list[str]]:
    return open_dashboard(browser, tenancy, path, width=1400, height=1000)


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"), full_page=True)


def _rows(page: Any, selector: str) -> dict[str, list[str]]:
    """A capacity table's rows by their first cell."""
    found = {}
    for row in page.locator(f"{selector} tbody tr").all():
        cells = [c.inner_text().strip() for c in row.locator("td").all()]
        found[cells[0]] = cells[1:]
    return found


def _expected(row: dict[str, int]) -> list[str]:
    return [str(row[k]) for k in ("devices", "allocated", "free", "unavailable", "allocatable")]


def test_capacity_counts_what_the_shared_counters_leave(
    browser: Any, tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    page, problems = _open(browser, tenancy)
    tables = page.locator("#panel-capacity table")
    profiles = _rows(page, "#panel-capacity table:nth-of-type(2)")
    for name, row in SCENARIO["profiles"].items():
        assert profiles[name] == _expected(row), name
    assert "Can still be allocated (devices)" in tables.first.inner_text()
    _shot(page, "overview")
    assert problems == []
    assert allot(["top", "--once", "--data-dir", str(tenancy.data_dir)]) == 0
    top = capsys.readouterr().out
    assert re.search(r"3g\.40gb\s*│\s*2\s*│\s*0\s*│\s*0\s*│\s*2\s*│\s*0\s*│", top), top
    scrape = tenancy.cluster.kubectl("get", "--raw", "/metrics").stdout
    samples = {
        (s.name, s.labels.get("node"), s.labels.get("profile") or s.labels.get("class")): s.value
        for family in text_string_to_metric_families(scrape)
        for s in family.samples
    }
    assert samples[("allot_partition_profile_devices_allocatable", "h100-0", "3g.40gb")] == 0
    assert samples[("allot_class_devices_free", "h100-0", "mig.nvidia.com")] == 3
    assert samples[("allot_class_devices_allocatable", "h100-0", "mig.nvidia.com")] == 1


def test_tiles_name_model_memory_and_mig_profiles(browser: Any, tenancy: Tenancy) -> None:
    page, problems = _open(browser, tenancy)
    h100 = page.locator('.gpu[aria-label^="gpu-0 on h100-0"]')
    text = h100.inner_text()
    assert "H100 80GB HBM3" in text
    assert "79.25 GiB" in text
    assert "6 / 8 memory slices" in text
    assert [s.inner_text() for s in h100.locator(".slice").all()] == ["2g.20gb"] * 3
    whole = page.locator('.gpu[aria-label*="held by legal-ai"]')
    assert "A100-SXM4-40GB" in whole.inner_text()
    assert "40 GiB" in whole.inner_text()
    assert page.locator("#panel-fleet .slice", has_text="1g.5gb").count() == 7
    tenants = page.locator("#panel-tenants").inner_text()
    assert "gpu-whole: 1 device (40 GiB)" in tenants
    assert "gpu-slice: 1 device (4.75 GiB)" in tenants
    assert problems == []


def test_a_pending_claim_links_to_its_explanation(browser: Any, tenancy: Tenancy) -> None:
    page, problems = _open(browser, tenancy)
    page.get_by_role("link", name=f"why default/{BIG} is pending").click()
    page.wait_for_url(f"**/ui/claims/default/{BIG}#explanation")
    why = page.locator("#explanation").inner_text()
    assert "pod big-user waits for capacity" in why
    assert "0/4 nodes are available" in why
    assert "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'" in page.inner_text("main")
    _shot(page, "claim")
    page.get_by_role("link", name="Dashboard").first.click()
    page.get_by_role("link", name="default/spare", exact=True).click()
    assert "no pod uses it yet" in page.locator("#explanation").inner_text()
    page.get_by_role("link", name="research-ai").first.click()
    page.wait_for_url("**/ui/tenants/research-ai")
    assert problems == []


def test_node_and_tenant_pages(browser: Any, tenancy: Tenancy) -> None:
    page, problems = _open(browser, tenancy)
    page.locator("#panel-fleet").get_by_role("link", name="h100-0", exact=True).click()
    page.wait_for_url("**/ui/nodes/h100-0")
    classes = _rows(page, "#panel-detail table:nth-of-type(1)")
    assert classes["mig.nvidia.com"] == _expected(SCENARIO["classes"]["mig.nvidia.com"])
    claims = page.locator("section", has_text="Claims holding its devices")
    assert sorted(a.inner_text() for a in claims.locator("tbody a[href^='/ui/claims/']").all()) == [
        f"default/{c['name']}" for c in SCENARIO["claims"]
    ]
    _shot(page, "node")
    page.get_by_role("link", name="default/slice-a", exact=True).click()
    assert "2g.20gb" in page.locator("section", has_text="Devices").last.inner_text()
    page.get_by_role("link", name="h100-0").click()
    page.wait_for_url("**/ui/nodes/h100-0")
    tenant, _ = _open(browser, tenancy, "/ui/tenants/research-ai")
    assert tenant.url.endswith("/ui/tenants/research-ai")  # signing in came back here
    usage = tenant.locator("section", has_text="Usage per class").inner_text()
    assert "gpu-slice" in usage
    listed = tenant.locator("section", has_text="Claims").last.inner_text()
    assert "default/research-gpu-slice" in listed
    assert "default/spare" in listed
    _shot(tenant, "tenant")
    missing = tenant.goto(f"{tenancy.cluster.server.endpoint.url}/ui/nodes/no-such-node")
    assert missing.status == 404
    assert "There is no node no-such-node." in tenant.inner_text("main")
    assert problems == []
