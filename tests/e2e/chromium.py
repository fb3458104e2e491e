"""Headless Chromium (Debian's ``chromium``, driven by Playwright) for the dashboard tests:
the browser, and a page signed in with the host token that records console errors.
Importing this module skips the importing test module without Playwright or Chromium."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.tenancy import REPO, Tenancy

CHROMIUM = os.environ.get("ALLOT_CHROMIUM") or shutil.which("chromium") or ""
ARTIFACTS = REPO / "artifacts"

playwright_api = pytest.importorskip("playwright.sync_api")
if not CHROMIUM:
    pytest.skip(
        "no Chromium: apt-get install chromium (make test does as root)", allow_module_level=True
    )


def launched() -> Iterator[Any]:
    """A headless Chromium until the generator is closed (a module fixture's body)."""
    with playwright_api.sync_playwright() as driver:
        instance = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield instance
        instance.close()


def open_dashboard(
    browser: Any, tenancy: Tenancy, path: str = "/ui", width: int = 1366, height: int = 900
) -> tuple[Any, list[str]]:
    """A new browser context at ``path``, signed in through ``?token=``; and the list the
    page's console errors and uncaught exceptions are added to."""
    context = browser.new_context(
        ignore_https_errors=True, viewport={"width": width, "height": height}
    )
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    server = tenancy.cluster.server
    token = server.api.registry.tokens.ensure("host")
    page.goto(f"{server.endpoint.url}{path}?token={token}")
    return page, problems
