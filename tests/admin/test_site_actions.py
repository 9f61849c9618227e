"""The console's actions as an operator and an auditor see them: the JSON answer of a done, failed or
crashed action, where actions can be posted, the body size limit, and the audit log line of each."""

from __future__ import annotations

import gc
import json
from collections.abc import Sequence
from typing import Any

import pytest
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import LogEvent, formatEvent
from twisted.web.test.requesthelper import DummyChannel

from garlicfarm.admin.site import AdminRequest, AdminSite
from garlicfarm.admin.validate import MAX_BODY
from garlicfarm.service import GarlicFarmService
from tests.admin.nodes import Browser

AUDIT = "admin action by farm from 127.0.0.1 on farm farm: "


def audit(events: Sequence[LogEvent]) -> list[str]:
    """The audit lines of admin actions, as written."""
    return [formatEvent(e) for e in events if e.get("log_format", "").startswith("admin action by")]


# ------------------------------------------------------------------------------------------ answers


def test_a_done_action_answers_ok_with_its_name_farm_and_result(site: AdminSite) -> None:
    response = Browser(site).post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"})
    assert response.status == 200, response.body
    body = response.json()
    assert body["ok"] is True
    assert body["action"] == "exclude" and body["cluster"] == "farm"
    assert body["result"]["excluded"] == "farm-leaf-1"


def test_a_refused_action_answers_not_ok_with_its_name(site: AdminSite) -> None:
    response = Browser(site).post("/api/farms/farm/remove-member", {"id": 7})
    assert response.status == 404
    assert response.json() == {
        "ok": False,
        "action": "remove-member",
        "error": "server 7 is not a member of farm farm",
    }


def test_a_crashing_action_is_a_500_naming_the_action_and_the_error(
    site: AdminSite, monkeypatch: pytest.MonkeyPatch, logs: Sequence[LogEvent]
) -> None:
    """An unexpected exception is answered (the page does not hang), logged with its traceback and audited."""

    async def crash(destination: str, action: str) -> dict[str, Any]:
        raise RuntimeError("boom")

    monkeypatch.setattr(site.farms["farm"], "exclude", crash)
    response = Browser(site).post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"})
    assert response.status == 500, response.body
    assert response.json() == {"ok": False, "action": "exclude", "error": "exclude failed unexpectedly: boom"}
    [crashed] = [e for e in logs if "log_failure" in e]
    assert formatEvent(crashed) == "admin action exclude crashed"
    assert isinstance(crashed["log_failure"].value, RuntimeError)
    assert audit(logs) == [
        AUDIT + 'exclude {"destination":"farm-leaf-1"}: failed (500): exclude failed unexpectedly: boom'
    ]


def test_add_member_hands_the_farm_the_id_and_endpoint(
    site: AdminSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def add(server_id: int, endpoint: str) -> dict[str, Any]:
        return {"added": server_id, "endpoint": endpoint}

    monkeypatch.setattr(site.farms["farm"], "add_member", add)
    response = Browser(site).post("/api/farms/farm/add-member", {"id": 2, "endpoint": "tcp://127.0.0.1:9002"})
    assert response.status == 200, response.body
    assert response.json()["result"] == {"added": 2, "endpoint": "tcp://127.0.0.1:9002"}


def test_a_client_that_hangs_up_before_the_answer_leaves_no_error(
    site: AdminSite, node: GarlicFarmService, clock: MemoryReactorClock, logs: Sequence[LogEvent]
) -> None:
    """The action still completes and is audited; the answer nobody waits for is dropped quietly."""
    browser = Browser(site)
    browser.session()
    browser.hang_up = True
    assert browser.post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"}).status == 0
    for _ in range(200):
        clock.advance(0)
    assert node.state.excluded == {"farm-leaf-1"}
    gc.collect()  # an unhandled error in a Deferred is logged when the Deferred is collected
    assert [formatEvent(e) for e in logs if "log_failure" in e] == []
    assert audit(logs) == [AUDIT + 'exclude {"destination":"farm-leaf-1"}: done']


# ------------------------------------------------------------------------------------------ refusals


def test_an_action_without_a_json_content_type_is_refused_saying_so(site: AdminSite) -> None:
    response = Browser(site).post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"}, content_type="")
    assert response.status == 403
    assert response.json() == {"ok": False, "error": "refused: actions need Content-Type: application/json"}


def test_over_tls_the_consoles_own_origin_is_its_https_one(site: AdminSite, node: GarlicFarmService) -> None:
    """Behind [tls] a browser's Origin is https://host: accepted, and an http:// one is not the console's."""
    browser = Browser(site)
    browser.secure = True
    response = browser.post("/api/farms/farm/exclude", {"destination": "x"}, origin="http://127.0.0.1:9101")
    assert response.status == 403
    assert response.json()["error"] == (
        "refused: Origin 'http://127.0.0.1:9101' is not this console's (https://127.0.0.1:9101)"
    )
    response = browser.post(
        "/api/farms/farm/exclude", {"destination": "farm-leaf-1"}, origin="https://127.0.0.1:9101"
    )
    assert response.status == 200, response.body
    assert node.state.excluded == {"farm-leaf-1"}


# ------------------------------------------------------------------------------------------ where to post


@pytest.mark.parametrize(
    "path", ["/api/farms", "/api/farms/farm", "/x/farms/farm/exclude", "/api/x/farm/exclude"]
)
def test_actions_are_posted_to_api_farms_cluster_action_only(
    site: AdminSite, node: GarlicFarmService, path: str
) -> None:
    response = Browser(site).post(path, {"destination": "farm-leaf-1"})
    assert response.status == 404, response.body
    assert response.json() == {"ok": False, "error": "no such action"}
    assert not node.state.excluded


def test_an_unknown_action_is_a_404_listing_the_actions(site: AdminSite) -> None:
    response = Browser(site).post("/api/farms/farm/reboot", {})
    assert response.status == 404
    assert response.json()["error"] == (
        "no action 'reboot' (actions: "
        "add-member, exclude, import, include, publish, remove-member, step-down)"
    )


def test_a_body_that_is_not_an_object_is_named_body(site: AdminSite) -> None:
    response = Browser(site).post("/api/farms/farm/exclude", [1, 2])
    assert response.status == 400
    assert response.json()["error"] == "body must be a JSON object"


# ------------------------------------------------------------------------------------------ body size


def test_a_body_of_exactly_max_body_bytes_is_accepted(site: AdminSite, node: GarlicFarmService) -> None:
    head = b'{"destination": "farm-leaf-1"'
    body = head + b" " * (MAX_BODY - len(head) - 1) + b"}"
    assert len(body) == MAX_BODY
    response = Browser(site).post("/api/farms/farm/exclude", None, raw=body)
    assert response.status == 200, response.body
    assert node.state.excluded == {"farm-leaf-1"}


def test_a_body_one_byte_over_max_body_is_refused(site: AdminSite, node: GarlicFarmService) -> None:
    head = b'{"destination": "farm-leaf-1"'
    body = head + b" " * (MAX_BODY - len(head)) + b"}"
    response = Browser(site).post("/api/farms/farm/exclude", None, raw=body)
    assert response.status == 400
    assert response.json()["error"] == f"body is larger than {MAX_BODY} bytes"
    assert not node.state.excluded


def test_a_body_declared_too_large_is_not_stored_at_all() -> None:
    request = AdminRequest(DummyChannel())
    request.gotLength(MAX_BODY + 1)
    request.handleContentChunk(b"x" * 10)
    assert request.too_large
    assert request.content is not None and request.content.tell() == 0


def test_a_body_of_unknown_length_is_stored_up_to_max_body_only() -> None:
    """Chunked uploads: storing stops at the chunk that would pass the limit, whatever follows."""
    request = AdminRequest(DummyChannel())
    request.gotLength(None)
    assert request.content is not None
    request.handleContentChunk(b"x" * (MAX_BODY // 2))
    request.handleContentChunk(b"x" * (MAX_BODY // 2))
    assert (request.content.tell(), request.too_large) == (MAX_BODY, False)
    for _ in range(4):
        request.handleContentChunk(b"x" * (MAX_BODY // 2))
    assert (request.content.tell(), request.too_large) == (MAX_BODY, True)


# ------------------------------------------------------------------------------------------ audit log


def test_a_done_action_is_audited_with_user_peer_farm_and_body(
    site: AdminSite, logs: Sequence[LogEvent]
) -> None:
    Browser(site).post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"})
    assert audit(logs) == [AUDIT + 'exclude {"destination":"farm-leaf-1"}: done']


def test_a_refused_action_is_audited_without_a_body(site: AdminSite, logs: Sequence[LogEvent]) -> None:
    Browser(site).post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"}, csrf=False)
    assert audit(logs) == [
        AUDIT + "exclude : refused: missing or wrong X-CSRF-Token (GET /api/session gives it)"
    ]


def test_a_long_body_is_audited_cut_to_300_characters(site: AdminSite, logs: Sequence[LogEvent]) -> None:
    browser = Browser(site)
    config = browser.get("/api/farms/farm/config").json()
    config["members"] += [{"id": i, "endpoint": f"tcp://127.0.0.1:{9000 + i}"} for i in (2, 3)]
    body = {"config": config, "dry_run": True}
    assert browser.post("/api/farms/farm/import", body).status == 200
    whole = json.dumps(body, separators=(",", ":"))
    assert len(whole) > 300
    assert audit(logs) == [f"{AUDIT}import {whole[:300]}: done"]
