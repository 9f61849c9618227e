"""The console's HTTP site around its resource: the 401 answer and the log of refused credentials, who
the peer is in log lines, the access log, what a crash in a view shows, the site's own clock."""

from __future__ import annotations

import io
from collections.abc import Sequence

import pytest
from twisted.internet.address import IPv4Address, UNIXAddress
from twisted.internet.interfaces import IAddress
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.logger import LogEvent, formatEvent
from twisted.web.http import datetimeToLogString

from garlicfarm.admin.site import AdminSite
from tests.admin.nodes import Browser


def refusals(events: Sequence[LogEvent]) -> list[str]:
    return [text for e in events if (text := formatEvent(e) or "").startswith("admin console: refused")]


# ------------------------------------------------------------------------------------------ credentials


def test_the_401_answer_is_json(site: AdminSite) -> None:
    response = Browser(site).raw("GET", "/api/farms", [])
    assert response.status == 401
    assert response.header("content-type") == "application/json"
    assert response.json() == {"ok": False, "error": "authentication required"}


def test_a_request_without_credentials_is_challenged_without_a_log_line(
    site: AdminSite, logs: Sequence[LogEvent]
) -> None:
    """Every client's first request has none: only credentials that were given and refused are logged."""
    assert Browser(site).raw("GET", "/api/farms", []).status == 401
    assert refusals(logs) == []


@pytest.mark.parametrize(
    ("peer", "shown"),
    [
        (IPv4Address("TCP", "192.0.2.9", 40000), "192.0.2.9"),
        (UNIXAddress(b"/run/console.sock"), "UNIXAddress('/run/console.sock')"),
    ],
)
def test_refused_credentials_are_logged_with_the_peer_and_the_reason(
    site: AdminSite, logs: Sequence[LogEvent], peer: IAddress, shown: str
) -> None:
    """The peer is its IP address, or the whole address when it has none (a console on a UNIX socket)."""
    assert Browser(site, password="guess", peer=peer).get("/api/farms").status == 401
    assert refusals(logs) == [
        f"admin console: refused GET /api/farms from {shown}: wrong password for user 'farm'"
    ]


def test_actions_over_a_unix_socket_are_audited_with_the_whole_address(
    site: AdminSite, logs: Sequence[LogEvent]
) -> None:
    browser = Browser(site, peer=UNIXAddress(None))
    assert browser.post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"}).status == 200
    [line] = [text for e in logs if (text := formatEvent(e) or "").startswith("admin action")]
    assert line.startswith("admin action by farm from UNIXAddress(None) on farm farm: exclude")


# ------------------------------------------------------------------------------------------ failures


def test_a_crash_in_a_view_is_a_500_without_a_traceback(
    site: AdminSite, monkeypatch: pytest.MonkeyPatch, logs: Sequence[LogEvent]
) -> None:
    def crash() -> object:
        raise RuntimeError("internal detail")

    monkeypatch.setattr(site.farms["farm"], "history_json", crash)
    response = Browser(site).get("/api/farms/farm/history")
    assert response.status == 500
    assert b"internal detail" not in response.body and b"Traceback" not in response.body
    assert any("log_failure" in e for e in logs)  # the traceback goes to the log instead


# ------------------------------------------------------------------------------------------ access log


def test_the_access_log_has_errors_only_dated_by_the_sites_clock(
    site: AdminSite, clock: MemoryReactorClock
) -> None:
    """The page's polling (200) and every client's first challenge (401) stay out of the access log."""
    browser = Browser(site)
    web = browser.http.wrappedFactory
    web.startFactory()
    log = io.StringIO()
    web.logFile = log
    try:
        assert browser.get("/api/farms").status == 200  # after a 401 challenge
        assert browser.get("/api/nothing").status == 404
        assert browser.post("/api/farms/farm/exclude", None, raw=b"{").status == 400
        lines = log.getvalue().splitlines()
    finally:
        web.stopFactory()  # (closes the log)
    assert [line.split('"')[3] for line in lines] == [
        "GET /api/nothing HTTP/1.1",
        "POST /api/farms/farm/exclude HTTP/1.1",
    ]
    assert [line.split('"')[4].split()[0] for line in lines] == ["404", "400"]
    assert all(datetimeToLogString(clock.seconds()) in line for line in lines)


# ------------------------------------------------------------------------------------------ the site


def test_an_idle_connection_is_timed_out_on_the_sites_clock(
    site: AdminSite, clock: MemoryReactorClock
) -> None:
    """twisted.web's own idle timeout (60 s) runs on the clock the site was given, as the deadlines do."""
    site.request_deadline = 3600.0
    factory = site.http_factory()
    protocol = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 40000))
    transport = StringTransport()
    protocol.makeConnection(transport)
    clock.advance(61)
    assert transport.disconnecting


def test_the_request_deadline_given_to_the_site_is_the_one_enforced(clock: MemoryReactorClock) -> None:
    """``[admin] request_deadline`` reaches the connections: a silent client is closed after it, not 30 s."""
    factory = AdminSite(clock, request_deadline=5.0).http_factory()
    protocol = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 40000))
    transport = StringTransport()
    protocol.makeConnection(transport)
    clock.advance(4.9)
    assert not transport.disconnecting
    clock.advance(0.1)
    assert transport.disconnecting


def test_unregistering_an_unknown_farm_is_harmless(site: AdminSite) -> None:
    site.unregister("elsewhere")
    assert list(site.farms) == ["farm"]
