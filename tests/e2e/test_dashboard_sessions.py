"""Dashboard sign-in over HTTPS as a browser does it: the cookie holds a session id, never the
host token; signing out ends the session; every answer carries the security headers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from allot.ops.dashboard import COOKIE, SECURITY_HEADERS
from tests.e2e.tenancy import Tenancy, https, seed_platform

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    with seed_platform(tmp_path_factory.mktemp("sessions")) as running:
        yield running


def test_the_cookie_holds_a_session_not_the_token(tenancy: Tenancy) -> None:
    token = tenancy.cluster.server.api.registry.tokens.ensure("host")
    with https(tenancy) as browser:
        signed_in = browser.post("/ui/login", data={"token": token})
        assert signed_in.status_code == 303
        cookie = signed_in.headers["set-cookie"]
        assert token not in cookie
        assert cookie.startswith(f"{COOKIE}=")
        for attribute in ("HttpOnly", "Secure", "SameSite=strict", "Path=/ui", "Max-Age=43200"):
            assert attribute in cookie
        assert "Sign out" in browser.get("/ui").text
        assert browser.get("/ui/fragment/fleet").status_code == 200
        session = browser.cookies[COOKIE]
        assert browser.post("/ui/logout").status_code == 303
    with https(tenancy) as replay:  # the old session id no longer opens anything
        replay.cookies.set(COOKIE, session)
        assert replay.get("/ui/fragment/fleet").status_code == 401
        assert "Host token" in replay.get("/ui").text


@pytest.mark.parametrize("path", ["/ui", "/ui/fragment/fleet", "/ui/static/dashboard.js"])
def test_every_answer_carries_the_security_headers(tenancy: Tenancy, path: str) -> None:
    with https(tenancy) as browser:
        response = browser.get(path)
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


def test_a_sign_in_body_that_is_no_form_gets_the_form_again(tenancy: Tenancy) -> None:
    """A broken multipart upload to /ui/login: the sign-in form with a 400 saying so, not
    the API server's 404 Status."""
    with https(tenancy) as browser:
        response = browser.post(
            "/ui/login",
            content=b"garbage",
            headers={"content-type": "multipart/form-data; boundary=zz"},
        )
    assert response.status_code == 400
    assert "The sign-in form could not be read" in response.text
    assert 'id="token"' in response.text
