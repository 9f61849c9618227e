"""The console's connection cap and request deadlines, on a MemoryReactorClock over StringTransports."""

from __future__ import annotations

from collections.abc import Sequence

from twisted.internet.address import IPv4Address, UNIXAddress
from twisted.internet.error import ConnectionLost
from twisted.internet.interfaces import IProtocolNegotiationFactory
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.logger import LogEvent, formatEvent
from twisted.python.failure import Failure
from twisted.web import server
from twisted.web.resource import Resource
from twisted.web.test.requesthelper import DummyChannel, DummyRequest

from garlicfarm.admin.connections import request_done, request_received
from garlicfarm.admin.site import AdminSite

ADDRESS = IPv4Address("TCP", "192.0.2.9", 40000)
REQUEST = b"GET /api/farms HTTP/1.1\r\nHost: 127.0.0.1:9101\r\n\r\n"


def lines(events: Sequence[LogEvent], word: str) -> list[str]:
    return [text for e in events if (text := formatEvent(e)) and word in text]


class Slow(Resource):
    """Answers when the test says so, like an action waiting for its commit."""

    isLeaf = True  # noqa: N815 - twisted.web's name

    def __init__(self) -> None:
        super().__init__()
        self.waiting: list[server.Request] = []

    def render(self, request: server.Request) -> int:
        self.waiting.append(request)
        return server.NOT_DONE_YET


def connect(factory: object) -> tuple[object, StringTransport]:
    protocol = factory.buildProtocol(ADDRESS)  # type: ignore[attr-defined]
    transport = StringTransport(peerAddress=ADDRESS)
    protocol.makeConnection(transport)
    return protocol, transport


def test_new_connections_push_out_the_oldest_that_owe_a_request(logs: Sequence[LogEvent]) -> None:
    clock = MemoryReactorClock()
    factory = AdminSite(clock, max_connections=10).http_factory()
    transports = [connect(factory)[1] for _ in range(1000)]
    assert all(t.disconnected for t in transports[:990])  # closed at once, the oldest first
    assert not any(t.disconnected for t in transports[990:])
    assert factory.open == 10
    clock.advance(10)
    evictions = lines(logs, "owed a request")
    assert len(evictions) == 2
    assert evictions[1].startswith("989 more in the last 10 s")


def test_when_every_connection_waits_for_an_answer_new_ones_are_refused(logs: Sequence[LogEvent]) -> None:
    clock = MemoryReactorClock()
    site = AdminSite(clock, max_connections=10)
    slow = Slow()
    site.resource = slow  # type: ignore[assignment]
    factory = site.http_factory()
    busy = [connect(factory) for _ in range(10)]
    for protocol, _ in busy:
        protocol.dataReceived(REQUEST)  # type: ignore[attr-defined]
    refused = [connect(factory)[1] for _ in range(100)]
    assert all(t.disconnected for t in refused)
    assert not any(t.disconnected for _, t in busy)
    assert len(lines(logs, "all waiting for answers")) == 1
    slow.waiting[0].finish()  # answered: that connection owes the next request, so it may be pushed out
    assert not connect(factory)[1].disconnected
    assert busy[0][1].disconnected


def test_one_byte_a_second_does_not_keep_a_connection(logs: Sequence[LogEvent]) -> None:
    clock = MemoryReactorClock()
    factory = AdminSite(clock, request_deadline=30).http_factory()
    protocol, transport = connect(factory)
    for byte in REQUEST[:-2] * 10:  # never a whole request, a byte a second
        protocol.dataReceived(bytes([byte]))  # type: ignore[attr-defined]
        clock.advance(1)
        if transport.disconnected:
            break
    assert transport.disconnected
    assert clock.seconds() == 30
    assert lines(logs, "no whole request within 30 s")


def test_a_whole_request_is_answered_and_the_deadline_starts_again(logs: Sequence[LogEvent]) -> None:
    clock = MemoryReactorClock()
    factory = AdminSite(clock, request_deadline=30).http_factory()
    protocol, transport = connect(factory)
    clock.advance(29)
    protocol.dataReceived(REQUEST)  # type: ignore[attr-defined]
    assert transport.value().startswith(b"HTTP/1.1 401")  # answered (no credentials)
    clock.advance(29)
    assert not transport.disconnected  # a fresh deadline for the next request on this connection
    protocol.dataReceived(REQUEST)  # type: ignore[attr-defined]
    clock.advance(29)
    assert not transport.disconnected
    clock.advance(1)
    assert transport.disconnected  # an idle keep-alive connection ends at the deadline too


def test_no_deadline_while_the_site_works_on_an_answer(logs: Sequence[LogEvent]) -> None:
    clock = MemoryReactorClock()
    site = AdminSite(clock, request_deadline=30)
    slow = Slow()
    site.resource = slow  # type: ignore[assignment]
    protocol, transport = connect(site.http_factory())
    protocol.dataReceived(REQUEST)  # type: ignore[attr-defined]
    clock.advance(300)
    assert not transport.disconnected
    [request] = slow.waiting
    request.write(b"done")
    request.finish()
    assert b"done" in transport.value()
    clock.advance(30)
    assert transport.disconnected


def test_alpn_offers_http_1_1_only() -> None:
    """Under TLS, Twisted's ALPN callback fails the handshake of a browser (it offers ALPN) unless the
    factory names its protocols; HTTP/2 would bypass the request deadlines."""
    factory = AdminSite(MemoryReactorClock()).http_factory()
    assert IProtocolNegotiationFactory(factory).acceptableProtocols() == [b"http/1.1"]


def test_each_log_line_names_the_peer_and_the_count(logs: Sequence[LogEvent]) -> None:
    """The operator reads who was turned away and why: the client's address, the number open, the
    deadline — one line per kind of event, each at once."""
    clock = MemoryReactorClock()
    site = AdminSite(clock, max_connections=2, request_deadline=30)
    slow = Slow()
    site.resource = slow  # type: ignore[assignment]
    factory = site.http_factory()
    connect(factory)
    connect(factory)
    connect(factory)  # pushes out the first
    assert lines(logs, "owed a request") == [
        "admin console: closed a connection from 192.0.2.9 that owed a request: "
        "2 connections are open (the cap; the oldest goes first)"
    ]
    for protocol in list(factory.protocols):
        protocol.dataReceived(REQUEST)
    connect(factory)
    assert lines(logs, "all waiting") == [
        "admin console: refused a connection from 192.0.2.9: "
        "2 connections are open (the cap), all waiting for answers"
    ]
    slow.waiting[0].finish()
    clock.advance(30)
    assert lines(logs, "no whole request") == [
        "admin console: closed a connection from 192.0.2.9: no whole request within 30 s"
    ]


def test_an_evicted_or_expired_connection_goes_once(logs: Sequence[LogEvent]) -> None:
    """The reactor reports an aborted connection lost later: an evicted one was already uncounted, an
    expired one has no deadline left; neither raises nor counts twice."""
    clock = MemoryReactorClock()
    factory = AdminSite(clock, max_connections=1, request_deadline=30).http_factory()
    evicted, _ = connect(factory)
    newest, _ = connect(factory)
    evicted.connectionLost(Failure(ConnectionLost()))  # type: ignore[attr-defined]
    assert factory.open == 1
    clock.advance(30)
    newest.connectionLost(Failure(ConnectionLost()))  # type: ignore[attr-defined]
    assert factory.open == 0 and not newest.owes_request  # type: ignore[attr-defined]


def test_a_request_cut_off_while_answered_hears_why() -> None:
    """A lost connection reaches the request the site works on, with its cause (an action waiting for
    its commit stops waiting)."""
    clock = MemoryReactorClock()
    site = AdminSite(clock)
    slow = Slow()
    site.resource = slow  # type: ignore[assignment]
    protocol, _ = connect(site.http_factory())
    protocol.dataReceived(REQUEST)  # type: ignore[attr-defined]
    [request] = slow.waiting
    causes: list[Failure] = []
    request.notifyFinish().addErrback(causes.append)
    protocol.connectionLost(Failure(ConnectionLost("cut")))  # type: ignore[attr-defined]
    assert [str(c.value) for c in causes] == [
        "Connection to the other side was lost in a non-clean fashion: cut."
    ]


def test_no_deadline_for_a_connection_already_lost() -> None:
    """An answer finished after its client went away sets no deadline on the dead connection."""
    clock = MemoryReactorClock()
    protocol, _ = connect(AdminSite(clock).http_factory())
    protocol.connectionLost(Failure(ConnectionLost()))  # type: ignore[attr-defined]
    protocol.request_done()  # type: ignore[attr-defined]
    assert not protocol.owes_request  # type: ignore[attr-defined]
    assert clock.getDelayedCalls() == []


def test_a_request_not_served_through_the_limits_is_left_alone() -> None:
    """The hooks do nothing for a request without a limited connection (a test's request, or a
    channel under another wrapper)."""
    request_received(DummyRequest([b""]))  # type: ignore[arg-type]
    request_done(DummyRequest([b""]))  # type: ignore[arg-type]
    bare = server.Request(DummyChannel())
    request_received(bare)
    request_done(bare)


def test_a_peer_without_a_host_is_named_by_its_address(logs: Sequence[LogEvent]) -> None:
    """A console listening on a UNIX socket (``listen = "unix:…"``): its peers have no host."""
    clock = MemoryReactorClock()
    site = AdminSite(clock, max_connections=1, request_deadline=30)
    site.resource = Slow()  # type: ignore[assignment]
    factory = site.http_factory()
    peer = UNIXAddress(b"/run/console.sock")
    for _ in range(3):
        protocol = factory.buildProtocol(peer)
        protocol.makeConnection(StringTransport(peerAddress=peer))
    protocol.dataReceived(REQUEST)  # the last one waits for its answer: the next is refused
    factory.buildProtocol(peer)
    site.resource.waiting[0].finish()  # type: ignore[attr-defined]
    clock.advance(30)
    for kind in ("owed a request", "all waiting for answers", "no whole request"):
        assert any(str(peer) in line for line in lines(logs, kind)), kind
