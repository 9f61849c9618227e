"""The JSON API over twisted.web's real request handling: authentication, CSRF, input validation,
the actions on a running (single-node) farm, and several farms served by one site."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import capturedLogs, formatEvent

from garlicfarm.admin.guard import CsrfTokens
from garlicfarm.admin.site import AdminSite
from garlicfarm.admin.validate import MAX_BODY
from garlicfarm.handshake.digest import Algorithm
from garlicfarm.service import GarlicFarmService
from tests.admin.nodes import Browser, algorithms, handle, make_node

# ------------------------------------------------------------------------------------------ authentication


@pytest.mark.parametrize("path", ["/", "/static/console.js", "/api/session", "/api/farms", "/api/farms/farm"])
def test_unauthenticated_requests_are_challenged(site: AdminSite, path: str) -> None:
    response = Browser(site).raw("GET", path, [])
    assert response.status == 401
    assert algorithms(response) == [Algorithm.SHA256, Algorithm.MD5]
    assert b"farm" not in response.body.replace(b"authentication required", b"")


def test_wrong_password_is_refused(site: AdminSite) -> None:
    response = Browser(site, password="guess").get("/api/farms")
    assert response.status == 401
    assert response.json()["error"] == "authentication required"


def test_refused_credentials_are_logged_rate_limited(site: AdminSite, clock: MemoryReactorClock) -> None:
    with capturedLogs() as events:
        for _ in range(50):
            assert Browser(site, password="guess").get("/api/farms").status == 401
        clock.advance(10)
    lines = [text for e in events if "refused GET /api/farms" in (text := formatEvent(e) or "")]
    assert len(lines) == 2
    assert lines[1].startswith("49 more in the last 10 s")


def test_unknown_user_is_refused(site: AdminSite) -> None:
    assert Browser(site, username="root").get("/api/farms").status == 401


def test_basic_auth_is_refused(site: AdminSite) -> None:
    response = Browser(site).raw("GET", "/api/farms", [("Authorization", "Basic ZmFybTpmYXJt")])
    assert response.status == 401


def test_credentials_for_another_uri_are_refused(site: AdminSite) -> None:
    browser = Browser(site)
    assert browser.get("/api/farms").status == 200
    assert browser.challenge is not None
    from garlicfarm.handshake.digest import DigestCredentials

    creds = DigestCredentials.answer(
        browser.challenge,
        username="farm",
        password=browser.password,
        method="GET",
        uri="/api/farms",
        nc=99,
        cnonce="ab",
    )
    response = browser.raw("GET", "/api/farms/farm", [("Authorization", creds.to_header())])
    assert response.status == 401


def test_replayed_credentials_get_a_stale_challenge(site: AdminSite) -> None:
    browser = Browser(site)
    assert browser.get("/api/farms").status == 200
    assert browser.challenge is not None
    from garlicfarm.handshake.digest import DigestCredentials

    creds = DigestCredentials.answer(
        browser.challenge,
        username="farm",
        password=browser.password,
        method="GET",
        uri="/api/farms",
        nc=1,
        cnonce="ab",
    )
    response = browser.raw("GET", "/api/farms", [("Authorization", creds.to_header())])
    assert response.status == 401
    assert "stale=true" in response.header("www-authenticate")  # type: ignore[operator]


def test_a_nonce_works_for_its_lifetime_by_the_sites_clock_and_not_a_moment_longer(
    site: AdminSite, clock: MemoryReactorClock
) -> None:
    from garlicfarm.handshake.digest import DigestCredentials

    browser = Browser(site)
    assert browser.get("/api/farms").status == 200
    assert browser.challenge is not None
    lifetime = site.guard.nonces.lifetime

    def answer(nc: int) -> list[tuple[str, str]]:
        assert browser.challenge is not None
        creds = DigestCredentials.answer(
            browser.challenge,
            username="farm",
            password=browser.password,
            method="GET",
            uri="/api/farms",
            nc=nc,
            cnonce="ab",
        )
        return [("Authorization", creds.to_header())]

    clock.advance(lifetime)
    assert browser.raw("GET", "/api/farms", answer(10)).status == 200
    clock.advance(0.001)
    response = browser.raw("GET", "/api/farms", answer(11))
    assert response.status == 401
    assert "stale=true" in response.header("www-authenticate")  # type: ignore[operator]


def test_the_page_and_assets_are_served_with_a_strict_policy(site: AdminSite) -> None:
    browser = Browser(site)
    page = browser.get("/")
    assert page.status == 200
    assert page.header("content-type") == "text/html; charset=utf-8"
    assert b'src="/static/console.js"' in page.body
    assert b"http" not in page.body.replace(b"http-equiv", b"")  # nothing from elsewhere (no CDN)
    assert "script-src 'self'" in (page.header("content-security-policy") or "")
    assert page.header("x-frame-options") == "DENY"
    assert (
        browser.get("/static/console.js").header(
            "content-type",
        )
        == "text/javascript; charset=utf-8"
    )
    assert browser.get("/static/../site.py").status == 404
    assert browser.get("/static/nothing.js").status == 404


# ------------------------------------------------------------------------------------------ views


def test_overview_marks_leader_and_publisher(site: AdminSite) -> None:
    view = Browser(site).get("/api/farms/farm").json()
    assert view["leader"] == 1 and view["publisher"] == 1 and view["term"] >= 1
    [member] = view["members"]
    assert member["role"] == "leader" and member["publisher"] and member["self"]
    assert member["health"] == "ok" and member["lag"] == 0
    assert member["router"]["netStatus"] == "OK"
    assert {d["destination"] for d in member["destinations"]} == {"farm-leaf-1", "farm-leaf-2"}
    assert {lease["destination"] for lease in view["meta_ls"]} == {"farm-leaf-1", "farm-leaf-2"}


def test_history_keeps_samples(site: AdminSite, clock: MemoryReactorClock) -> None:
    farm = site.farms["farm"]
    for _ in range(3):
        clock.advance(10)
        farm.sample(clock.seconds())
    history = Browser(site).get("/api/farms/farm/history").json()
    assert history["levels"] == ["ok", "lagging", "stale", "down"]
    assert len(history["members"]["1"]) == 3


def test_config_export(site: AdminSite) -> None:
    config = Browser(site).get("/api/farms/farm/config").json()
    assert config["format"] == "garlicfarm-config/1"
    assert config["members"] == [{"id": 1, "endpoint": "tcp://127.0.0.1:9001"}]
    assert config["settings"]["raft"]["tick_ms"] == 10  # the "lan" profile


def test_get_never_acts(site: AdminSite) -> None:
    response = Browser(site).get("/api/farms/farm/exclude")
    assert response.status == 405
    assert response.header("allow") == "POST"


def test_unknown_farm_and_paths(site: AdminSite) -> None:
    browser = Browser(site)
    assert browser.get("/api/farms/other").status == 404
    assert browser.get("/api/nothing").status == 404
    assert browser.request("DELETE", "/api/farms/farm").status == 405


# ------------------------------------------------------------------------------------------ CSRF


def test_actions_need_the_csrf_token(site: AdminSite, node: GarlicFarmService) -> None:
    browser = Browser(site)
    response = browser.post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"}, csrf=False)
    assert response.status == 403
    assert "X-CSRF-Token" in response.json()["error"]
    browser.csrf = "A" * 32
    assert browser.post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"}).status == 403
    assert not node.state.excluded


def test_csrf_token_is_bound_to_the_user(site: AdminSite, node: GarlicFarmService) -> None:
    token = site.csrf.token_for("someone-else")
    browser = Browser(site)
    browser.csrf = token
    assert browser.post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"}).status == 403


def test_csrf_tokens_rotate_with_the_site_clock(site: AdminSite, clock: MemoryReactorClock) -> None:
    browser = Browser(site)
    first = browser.session()
    assert first["csrf_refresh_s"] == site.csrf.window / 2
    clock.advance(site.csrf.window)
    second = browser.session()
    assert second["csrf"] != first["csrf"]  # a page that reloads gets a fresh token


def test_csrf_token_outlives_one_window_then_expires_with_a_clear_403(
    site: AdminSite, node: GarlicFarmService, clock: MemoryReactorClock
) -> None:
    browser = Browser(site)
    browser.session()
    clock.advance(site.csrf.window)  # the next window: still good
    assert browser.post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"}).status == 200
    clock.advance(site.csrf.window)  # two windows on: over
    response = browser.post("/api/farms/farm/exclude", {"destination": "farm-leaf-2"})
    assert response.status == 403
    error = response.json()["error"]
    assert "expired" in error and "reload the page" in error
    assert "farm-leaf-2" not in node.state.excluded
    browser.session()  # what the page does on that answer
    assert browser.post("/api/farms/farm/exclude", {"destination": "farm-leaf-2"}).status == 200


def test_csrf_tokens_from_another_process_or_the_future_are_wrong() -> None:
    now = [10_000.0]
    tokens = CsrfTokens(b"k" * 32, lambda: now[0], window=100.0)
    other = CsrfTokens(b"x" * 32, lambda: now[0], window=100.0)
    token = tokens.token_for("farm")
    assert tokens.check("farm", token) == "valid"
    assert tokens.check("farm", other.token_for("farm")) == "wrong"
    assert tokens.check("someone-else", token) == "wrong"
    for bad in (
        None,
        "",
        "x",
        "100",
        ".abc",
        "-1." + token.split(".")[1],
        "\uff11\uff10\uff10." + token.split(".")[1],
    ):
        assert tokens.check("farm", bad) == "wrong"
    now[0] += 1000.0
    future = tokens.token_for("farm")
    now[0] -= 1000.0
    assert tokens.check("farm", future) == "wrong"
    now[0] += 199.0
    assert tokens.check("farm", token) == "valid"
    now[0] += 1.0
    assert tokens.check("farm", token) == "expired"


def test_actions_refuse_a_foreign_origin(site: AdminSite, node: GarlicFarmService) -> None:
    browser = Browser(site)
    response = browser.post("/api/farms/farm/exclude", {"destination": "x"}, origin="https://evil.example")
    assert response.status == 403
    assert "evil.example" in response.json()["error"]
    ok = browser.post(
        "/api/farms/farm/exclude", {"destination": "farm-leaf-1"}, origin="http://127.0.0.1:9101"
    )
    assert ok.status == 200, ok.body


@pytest.mark.parametrize("origin", ["http://127.0.0.1:91011", "http://127.0.0.1:9101.evil.example"])
def test_actions_refuse_an_origin_that_only_begins_like_the_consoles(site: AdminSite, origin: str) -> None:
    response = Browser(site).post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"}, origin=origin)
    assert response.status == 403
    assert origin in response.json()["error"]


def test_actions_refuse_cross_site_fetches(site: AdminSite) -> None:
    browser = Browser(site)
    browser.session()
    response = browser.request(
        "POST",
        "/api/farms/farm/publish",
        [
            ("Content-Type", "application/json"),
            ("X-CSRF-Token", browser.csrf or ""),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        b"{}",
    )
    assert response.status == 403


def test_actions_need_a_json_content_type(site: AdminSite) -> None:
    response = Browser(site).post("/api/farms/farm/exclude", {"destination": "x"}, content_type="text/plain")
    assert response.status == 403
    assert "Content-Type: application/json" in response.json()["error"]


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "Application/JSON ;charset=UTF-8"]
)
def test_a_json_content_type_with_parameters_is_json(site: AdminSite, content_type: str) -> None:
    """A media type's parameters (RFC 9110 §8.3.1) and its case do not make it another type."""
    browser = Browser(site)
    response = browser.post(
        "/api/farms/farm/exclude", {"destination": "farm-leaf-1"}, content_type=content_type
    )
    assert response.status == 200, response.body


# ------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"destination": "farm-leaf-1", "extra": 1}', "unknown field 'extra'"),
        (b"{}", "missing field 'destination'"),
        (b'{"destination": 5}', "destination must be a destination hash"),
        (b'{"destination": "a b"}', "destination must be a destination hash"),
        (b'{"destination": "' + b"a" * 2000 + b'"}', "destination must be a destination hash"),
    ],
)
def test_malformed_exclude_is_rejected(
    site: AdminSite, node: GarlicFarmService, body: bytes, message: str
) -> None:
    response = Browser(site).post("/api/farms/farm/exclude", None, raw=body)
    assert response.status == 400
    assert message in response.json()["error"]
    assert not node.state.excluded


@pytest.mark.parametrize("server", ["2", True, 0, -1, 2**31, 1.5, None])
def test_remove_member_rejects_wrong_types(site: AdminSite, server: object) -> None:
    response = Browser(site).post("/api/farms/farm/remove-member", {"id": server})
    assert response.status == 400
    assert "id must be a server id" in response.json()["error"]


def test_oversized_bodies_are_rejected(site: AdminSite) -> None:
    body = json.dumps({"destination": "a" * (MAX_BODY + 10)}).encode()
    response = Browser(site).post("/api/farms/farm/exclude", None, raw=body)
    assert response.status == 400
    assert "larger than" in response.json()["error"]


def test_import_rejects_a_malformed_document(site: AdminSite) -> None:
    browser = Browser(site)
    config = browser.get("/api/farms/farm/config").json()
    config["members"].append({"id": 1, "endpoint": "tcp://127.0.0.1:9009"})
    response = browser.post("/api/farms/farm/import", {"config": config})
    assert response.status == 400
    assert "server id twice" in response.json()["error"]
    response = browser.post("/api/farms/farm/import", {"config": {"format": "x"}, "dry_run": "yes"})
    assert response.status == 400


def test_unknown_action(site: AdminSite) -> None:
    response = Browser(site).post("/api/farms/farm/reboot", {})
    assert response.status == 404
    assert "remove-member" in response.json()["error"]


# ------------------------------------------------------------------------------------------ actions


def test_exclude_and_include_go_through_the_log(site: AdminSite, node: GarlicFarmService) -> None:
    browser = Browser(site)
    response = browser.post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"})
    assert response.status == 200, response.body
    assert response.json()["result"]["excluded"] == "farm-leaf-1"
    assert node.state.excluded == {"farm-leaf-1"}
    view = browser.get("/api/farms/farm").json()
    assert view["excluded"] == ["farm-leaf-1"]
    assert [lease["destination"] for lease in view["meta_ls"]] == ["farm-leaf-2"]
    assert browser.post("/api/farms/farm/include", {"destination": "farm-leaf-1"}).status == 200
    assert node.state.excluded == set()


def test_force_publish_on_the_publisher(site: AdminSite) -> None:
    response = Browser(site).post("/api/farms/farm/publish", {})
    assert response.status == 200, response.body
    assert response.json()["result"] == {"published": 2, "by": 1}


def test_force_publish_elsewhere_names_the_publisher(site: AdminSite, node: GarlicFarmService) -> None:
    node.app.role.active = False
    response = Browser(site).post("/api/farms/farm/publish", {})
    assert response.status == 409
    assert response.json()["publisher"] == 1


def test_remove_unknown_member(site: AdminSite) -> None:
    response = Browser(site).post("/api/farms/farm/remove-member", {"id": 7})
    assert response.status == 404
    assert "not a member" in response.json()["error"]


def test_add_existing_member(site: AdminSite) -> None:
    response = Browser(site).post("/api/farms/farm/add-member", {"id": 1, "endpoint": "tcp://127.0.0.1:1"})
    assert response.status == 409


def test_import_plans_and_applies(site: AdminSite, node: GarlicFarmService) -> None:
    browser = Browser(site)
    config = browser.get("/api/farms/farm/config").json()
    config["excluded"] = ["farm-leaf-2"]
    dry = browser.post("/api/farms/farm/import", {"config": config, "dry_run": True})
    assert dry.status == 200, dry.body
    assert dry.json()["result"]["plan"]["exclude"] == ["farm-leaf-2"]
    assert node.state.excluded == set()
    done = browser.post("/api/farms/farm/import", {"config": config})
    assert done.status == 200, done.body
    assert node.state.excluded == {"farm-leaf-2"}


def test_import_refuses_another_farm(site: AdminSite) -> None:
    browser = Browser(site)
    config = browser.get("/api/farms/farm/config").json()
    config["cluster"] = "elsewhere"
    response = browser.post("/api/farms/farm/import", {"config": config})
    assert response.status == 400
    assert "elsewhere" in response.json()["error"]


def test_actions_are_logged(site: AdminSite, node: GarlicFarmService) -> None:
    from twisted.logger import globalLogPublisher

    events: list[Any] = []
    observer: Any = events.append
    globalLogPublisher.addObserver(observer)
    try:
        Browser(site).post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"})
        Browser(site).post("/api/farms/farm/exclude", None, raw=b"{", csrf=True)
    finally:
        globalLogPublisher.removeObserver(observer)
    actions = [e for e in events if e.get("action") == "exclude"]
    assert [e["result"] for e in actions] == ["done", actions[1]["result"]]
    assert actions[0]["user"] == "farm" and actions[0]["cluster"] == "farm"
    assert str(actions[1]["result"]).startswith("rejected: body is not valid JSON")


# ------------------------------------------------------------------------------------------ several farms


def test_two_farms_in_one_process(tmp_path: Path, clock: MemoryReactorClock) -> None:
    north = make_node(tmp_path, clock, cluster="north", port=9001)
    south = make_node(tmp_path, clock, cluster="south", password="another secret", port=9011)
    try:
        site = AdminSite(clock)
        site.register(handle(north))
        site.register(handle(south))
        with pytest.raises(ValueError, match="already served"):
            site.register(handle(north))

        only_north = Browser(site)
        assert [f["cluster"] for f in only_north.get("/api/farms").json()["farms"]] == ["north"]
        assert only_north.get("/api/farms/south").status == 404
        only_south = Browser(site, password="another secret")
        assert [f["cluster"] for f in only_south.session()["farms"]] == ["south"]
        view = only_south.get("/api/farms/south").json()
        assert view["cluster"] == "south" and view["leader"] == 1
        response = only_south.post("/api/farms/south/exclude", {"destination": "south-leaf-1"})
        assert response.status == 200, response.body
        assert south.state.excluded == {"south-leaf-1"} and north.state.excluded == set()
        assert only_north.post("/api/farms/south/exclude", {"destination": "south-leaf-2"}).status == 404
    finally:
        north.stopService()
        south.stopService()


def test_two_farms_sharing_a_credential_are_both_listed(tmp_path: Path, clock: MemoryReactorClock) -> None:
    north = make_node(tmp_path, clock, cluster="north", port=9001)
    south = make_node(tmp_path, clock, cluster="south", port=9011)
    try:
        site = AdminSite(clock)
        site.register(handle(north))
        site.register(handle(south))
        farms = Browser(site).session()["farms"]
        assert [(f["cluster"], f["role"]) for f in farms] == [("north", "leader"), ("south", "leader")]
    finally:
        north.stopService()
        south.stopService()


def test_step_down_alone_says_nobody_can_take_over(site: AdminSite, node: GarlicFarmService) -> None:
    response = Browser(site).post("/api/farms/farm/step-down", {})
    assert response.status == 503, response.body
    assert "server 1 still leads: no member could take over" in response.json()["error"]
    assert node.driver.core.is_leader()


def test_step_down_on_a_follower_names_the_leader(site: AdminSite, node: GarlicFarmService) -> None:
    node.driver.core._become_follower(node.driver.core.term + 1, 2)
    response = Browser(site).post("/api/farms/farm/step-down", {})
    assert response.status == 409
    assert (
        response.json()["error"]
        == "server 1 is not the leader (the leader is server 2); use the leader's console"
    )
    assert response.json()["leader"] == 2
