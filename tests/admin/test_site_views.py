"""What the console answers to reads and to requests it cannot serve: exact statuses, JSON fields,
headers and error messages of the page, the session, the views and the 404/405 answers."""

from __future__ import annotations

import json

import pytest
from twisted.internet.testing import MemoryReactorClock

from garlicfarm.admin.guard import CSRF_HEADER
from garlicfarm.admin.site import AdminSite
from garlicfarm.service import GarlicFarmService
from tests.admin.nodes import Browser, Response, handle


def error(response: Response, status: int) -> str:
    """The error text of a JSON error answer with ``status``, checking its shape."""
    assert response.status == status, response.body
    assert response.header("content-type") == "application/json"
    body = response.json()
    assert body["ok"] is False
    return str(body["error"])


# ------------------------------------------------------------------------------------------ JSON format


def test_json_answers_are_indented_by_one_space_and_end_with_a_newline(site: AdminSite) -> None:
    """What curl shows: one-space indentation, one object, a final newline."""
    response = Browser(site).get("/api/farms/farm")
    assert response.status == 200
    assert response.header("content-type") == "application/json"
    assert response.body == json.dumps(response.json(), indent=1).encode() + b"\n"


def test_json_answers_keep_non_ascii_text_as_utf8(site: AdminSite) -> None:
    """A name from the request comes back as UTF-8 text, not as \\u escapes."""
    response = Browser(site).post(
        "/api/farms/farm/exclude", None, raw='{"destination": "x", "ü": 1}'.encode()
    )
    assert "unknown field 'ü'" in error(response, 400)
    assert "'ü'".encode() in response.body
    assert b"\\u" not in response.body


# ------------------------------------------------------------------------------------------ page and session


def test_the_page_is_also_index_html(site: AdminSite) -> None:
    browser = Browser(site)
    page = browser.get("/index.html")
    assert page.status == 200
    assert page.header("content-type") == "text/html; charset=utf-8"
    assert page.body == browser.get("/").body


def test_an_unknown_static_file_is_a_json_404(site: AdminSite) -> None:
    assert error(Browser(site).get("/static/nothing.js"), 404) == "no such file"


def test_the_session_names_the_user_token_header_and_farms(site: AdminSite) -> None:
    response = Browser(site).get("/api/session")
    assert response.status == 200
    session = response.json()
    assert session["user"] == "farm"
    assert session["csrf_header"] == CSRF_HEADER == "X-CSRF-Token"
    assert site.csrf.check("farm", session["csrf"]) == "valid"
    assert [f["cluster"] for f in session["farms"]] == ["farm"]


def test_the_csrf_window_given_to_the_site_is_the_one_the_page_refreshes_by(
    node: GarlicFarmService, clock: MemoryReactorClock
) -> None:
    site = AdminSite(clock, csrf_window=60.0)
    site.register(handle(node))
    assert Browser(site).session()["csrf_refresh_s"] == 30.0


# ------------------------------------------------------------------------------------------ views


@pytest.mark.parametrize(
    "path", ["/api/farms", "/api/farms/farm", "/api/farms/farm/history", "/api/farms/farm/config"]
)
def test_views_answer_200(site: AdminSite, path: str) -> None:
    assert Browser(site).get(path).status == 200


def test_the_overview_is_stamped_with_the_sites_clock(site: AdminSite, clock: MemoryReactorClock) -> None:
    clock.advance(1234.5)
    assert Browser(site).get("/api/farms/farm").json()["time"] == clock.seconds()


def test_head_is_answered_like_get_without_a_body(site: AdminSite) -> None:
    response = Browser(site).request("HEAD", "/api/farms")
    assert response.status == 200
    assert response.header("content-type") == "application/json"
    assert response.body == b""


# ------------------------------------------------------------------------------------------ refusals


def test_an_unknown_farm_is_a_404_naming_it(site: AdminSite) -> None:
    message = error(Browser(site).get("/api/farms/other"), 404)
    assert message == "no farm 'other' here (or not for these credentials)"


@pytest.mark.parametrize(
    "path",
    ["/api/nothing", "/a/b/c", "/api/farms/farm/nothing", "/api/farms/farm/history/more", "/static/a/b"],
)
def test_unknown_paths_are_a_404(site: AdminSite, path: str) -> None:
    """Also paths that only begin like a view: nothing past the view's own segments is ignored."""
    assert error(Browser(site).get(path), 404) == "no such page or API"


def test_getting_an_action_is_a_405_that_says_to_post_it(site: AdminSite) -> None:
    response = Browser(site).get("/api/farms/farm/exclude")
    assert error(response, 405) == "exclude is an action: POST it with a JSON body"
    assert response.header("allow") == "POST"


def test_other_methods_are_a_405_listing_the_allowed_ones(site: AdminSite) -> None:
    response = Browser(site).request("DELETE", "/api/farms/farm")
    assert error(response, 405) == "method DELETE is not allowed"
    assert response.header("allow") == "GET, HEAD, POST"
