"""Edges of one Raft link (garlicfarm.net.connection), on a Clock with in-memory transports.

Deadlines at their bound and just short of it, what operators read word for word (text, level, which
lines are rate-limited together) and which refusal is counted, flow control set at construction, a
peer that goes away with work in flight, and no error escaping into the reactor.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from OpenSSL import SSL, crypto
from twisted.internet.address import IPv4Address, UNIXAddress
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import LogEvent, Logger, LogLevel, capturedLogs, formatEvent
from twisted.python.failure import Failure
from twisted.test.iosim import FakeTransport, IOPump, connect

from garlicfarm.handshake import ChallengeCache, ClientConfig, NonceRegistry
from garlicfarm.net.budget import BufferBudget, RateLimitedLog
from garlicfarm.net.connection import (
    Backpressure,
    ClientConnection,
    ConnectionLimits,
    NotConnected,
    ServerConnection,
    tls_failure,
)
from garlicfarm.net.refusals import RefusalCounts
from garlicfarm.raft.driver import NodeStopped
from garlicfarm.tls.certs import new_ca
from garlicfarm.tls.errors import UnpinnedPeer
from garlicfarm.wire import (
    AppendEntriesRequest,
    AppendEntriesResponse,
    Application,
    LogEntry,
    Response,
    encode,
)
from garlicfarm.wire import Limits as WireLimits
from tests.net.test_connection import CLIENT, SERVER, Handler, answer

LIMITS = ConnectionLimits(handshake_timeout=5, idle_timeout=60, max_pipelined=2, response_timeout=20)
ADDRESS = IPv4Address("TCP", "192.0.2.7", 40000)
INTERVAL = 10.0  # the admission's rate-limited log


def append(index: int = 0, source: int = 1, size: int = 0) -> AppendEntriesRequest:
    entries = (LogEntry(5, Application(b"x" * size)),) if size else ()
    return AppendEntriesRequest(source, 2, 5, 0, index, 0, entries)


class Admission:
    """What an InboundFactory shares with its connections, with the answer to ``admit`` set by the test."""

    def __init__(self, clock: Clock, refuse: str | None = None, max_buffered: int = 1_000_000) -> None:
        self.budget = BufferBudget(max_buffered)
        self.events = RateLimitedLog(clock, Logger(namespace="admission"), INTERVAL)
        self.refusals = RefusalCounts()
        self.refuse = refuse
        self.closed_ones: list[ServerConnection] = []

    def admit(self, connection: ServerConnection) -> str | None:
        return self.refuse

    def closed(self, connection: ServerConnection) -> None:
        self.closed_ones.append(connection)

    def counted(self) -> dict[str, int]:
        return {reason: n for reason, n in self.refusals.read().items() if n}


class TCPTransport(StringTransport):
    """A StringTransport that records setTcpNoDelay, as a TCP transport takes it."""

    def __init__(self, peer: Any = ADDRESS) -> None:
        super().__init__(peerAddress=peer)
        self.no_delay: list[bool] = []
        self.aborted = 0

    def setTcpNoDelay(self, enabled: bool) -> None:
        self.no_delay.append(enabled)

    def abortConnection(self) -> None:
        self.aborted += 1
        super().abortConnection()


class TLSTransport(FakeTransport):
    """An in-memory transport whose peer presented ``certificate``."""

    certificate: crypto.X509 | None = None

    def getPeerCertificate(self) -> crypto.X509 | None:
        return self.certificate


def certificate(name: str) -> crypto.X509:
    """A self-signed certificate whose common name is ``name`` (what the link's identity reads)."""
    return crypto.X509.from_cryptography(new_ca(name).certificate)


class Link:
    """A server and a client over iosim; ``pump`` has not run yet."""

    def __init__(
        self,
        farm: Farm,
        *,
        client_config: ClientConfig = CLIENT,
        flow_control: bool = False,
        client_limits: ConnectionLimits = LIMITS,
    ) -> None:
        self.closed: list[ServerConnection] = []
        self.server = ServerConnection(
            farm.clock,
            SERVER,
            farm.nonces,
            farm.handler,
            farm.limits,
            on_close=self.closed.append,
            admission=farm.admission,
        )
        self.ready: list[ClientConnection] = []
        self.lost: list[tuple[ClientConnection, str]] = []
        self.client = ClientConnection(
            farm.clock,
            client_config,
            farm.cache,
            client_limits,
            self.ready.append,
            lambda c, why: self.lost.append((c, why)),
            bytes,
            flow_control=flow_control,
        )
        self.server_transport = TLSTransport(self.server, isServer=True, peerAddress=ADDRESS)
        self.client_transport = FakeTransport(self.client, isServer=False)
        self.pump: IOPump = connect(
            self.server, self.server_transport, self.client, self.client_transport, greet=False
        )

    @property
    def why(self) -> str:
        [(connection, why)] = self.lost
        assert connection is self.client
        return why


class Farm:
    """One node's listener state (nonces, a shared challenge cache, a handler) on a Clock."""

    def __init__(
        self, *, admission: bool = True, limits: ConnectionLimits = LIMITS, refuse: str | None = None
    ):
        self.clock = Clock()
        self.nonces = NonceRegistry(lambda n: b"\x01" * n)
        self.cache = ChallengeCache()
        self.handler = Handler()
        self.handler.auto = False
        self.limits = limits
        self.admission = Admission(self.clock, refuse) if admission else None
        primer = Link(self)  # the first connection fetches the Digest challenge, and reconnects
        primer.pump.flush()
        assert "reconnecting" in primer.why

    def link(self, **options: Any) -> Link:
        link = Link(self, **options)
        link.pump.flush()
        return link


def up(link: Link) -> bool:
    return not link.client.lost


def described(failure: Failure) -> str:
    return f"{type(failure.value).__name__}: {failure.getErrorMessage()}"


def lines(events: Sequence[LogEvent]) -> list[tuple[LogLevel, str]]:
    return [(e["log_level"], formatEvent(e)) for e in events if e.get("log_namespace") != "twisted.test"]


def dropped(events: Sequence[LogEvent]) -> list[tuple[LogLevel, str]]:
    return [(level, text) for level, text in lines(events) if text.startswith("dropping connection from")]


@pytest.fixture
def logs() -> Iterator[Sequence[LogEvent]]:
    with capturedLogs() as events:
        yield events


# ------------------------------------------------------------------------------------------ TLS failures


def test_tls_failure_kinds_and_descriptions() -> None:
    """OpenSSL's reason list joined by '; ' (non-tuples skipped), a string argument as is, an empty
    error by its type; the kind is cut at 100 characters; an unpinned peer is one kind."""
    error = SSL.Error([("SSL routines", "", "certificate verify failed"), "junk", ("x", "", "no cert")])
    assert tls_failure(Failure(error)) == (
        "certificate verify failed; no cert",
        "certificate verify failed; no cert",
    )
    assert tls_failure(Failure(SSL.Error("boom"))) == ("boom", "boom")
    assert tls_failure(Failure(SSL.Error())) == ("Error", "Error")
    long = "r" * 150
    assert tls_failure(Failure(SSL.Error([("lib", "", long)]))) == ("r" * 100, long)
    pinned = tls_failure(Failure(UnpinnedPeer("peer certificate sha256:AB is not pinned")))
    assert pinned == ("unpinned", "peer certificate sha256:AB is not pinned")
    assert tls_failure(Failure(ValueError("not TLS"))) is None


def test_an_authenticated_link_ending_in_an_ssl_error_is_not_a_tls_refusal(logs: Sequence[LogEvent]) -> None:
    farm = Farm()
    link = farm.link()
    link.server.connectionLost(Failure(SSL.Error([("SSL routines", "", "bad record mac")])))
    assert farm.admission is not None and farm.admission.counted() == {}
    assert not [text for _level, text in lines(logs) if "TLS" in text]


# ------------------------------------------------------------------------------------------ server side


def test_the_server_handshake_deadline_at_its_bound(logs: Sequence[LogEvent]) -> None:
    """Not dropped just short of handshake_timeout; at it, dropped, counted, logged rate-limited; TCP
    Nagle off; the peer named by its host."""
    clock = Clock()
    admission = Admission(clock)
    server = ServerConnection(clock, SERVER, NonceRegistry(bytes), Handler(), LIMITS, admission=admission)
    transport = TCPTransport()
    server.makeConnection(transport)
    assert transport.no_delay == [True]
    clock.advance(LIMITS.handshake_timeout - 0.001)
    assert transport.aborted == 0
    clock.advance(0.001)
    assert transport.aborted == 1
    assert admission.counted() == {"handshake_timeout": 1}
    assert dropped(logs) == [(LogLevel.warn, "dropping connection from 192.0.2.7: handshake timed out")]


def test_a_peer_without_a_host_is_named_by_its_address(logs: Sequence[LogEvent]) -> None:
    clock = Clock()
    server = ServerConnection(clock, SERVER, NonceRegistry(bytes), Handler(), LIMITS)
    server.makeConnection(TCPTransport(UNIXAddress("/run/garlicfarm.sock")))
    clock.advance(LIMITS.handshake_timeout)
    [(level, text)] = dropped(logs)
    assert text == "dropping connection from UNIXAddress('/run/garlicfarm.sock'): handshake timed out"
    assert level == LogLevel.warn


def test_refused_handshakes_are_counted_and_logged_challenges_are_not(logs: Sequence[LogEvent]) -> None:
    """A first request without credentials is routine (debug, not counted); a wrong password is an
    info line, rate-limited under its own key, counted once; the closing connection ignores the rest."""
    farm = Farm()
    assert farm.admission is not None
    assert farm.admission.counted() == {}
    assert not [text for _level, text in lines(logs) if text.startswith("handshake from")]
    wrong = ClientConfig(host=CLIENT.host, username="farm", password="wrong", cluster="farm")
    link = farm.link(client_config=wrong)
    assert link.client.handshake_failure is not None
    assert str(link.client.handshake_failure) == "authentication failed: credentials refused"
    assert link.why == "handshake failed: authentication failed: credentials refused"
    refused = [(level, text) for level, text in lines(logs) if text.startswith("handshake from")]
    assert refused == [(LogLevel.info, "handshake from 192.0.2.7 refused: wrong password: user 'farm'")]
    assert farm.admission.counted() == {"handshake": 1}
    link.server.dataReceived(b"GET / HTTP/1.1\r\n\r\n")  # after the Close: ignored
    farm.clock.advance(LIMITS.handshake_timeout)  # the deadline finds the connection closing
    assert farm.admission.counted() == {"handshake": 1}
    assert dropped(logs) == []


def test_the_upgrade_cancels_the_handshake_deadline_and_sets_the_idle_one(logs: Sequence[LogEvent]) -> None:
    """Authenticated: the handshake deadline no longer applies, the idle timeout does, at its bound,
    reset by traffic, logged at info (routine) and counted as idle."""
    farm = Farm()
    link = farm.link()
    assert link.server.username == "farm" and link.ready == [link.client]
    assert link.client.handshake_failure is None and not link.client.lost
    farm.clock.advance(LIMITS.handshake_timeout + 1)
    assert up(link)
    link.client.request(append()).addErrback(lambda _f: None)
    link.pump.flush()
    farm.handler.waiting[0][1].callback(answer(farm.handler.waiting[0][0]))
    link.pump.flush()
    farm.clock.advance(LIMITS.idle_timeout - 0.001)
    link.pump.flush()
    assert up(link)
    farm.clock.advance(0.001)
    link.pump.flush()
    assert not up(link)
    assert dropped(logs) == [(LogLevel.info, "dropping connection from 192.0.2.7: idle for 60 s")]
    assert farm.admission is not None and farm.admission.counted() == {"idle": 1}


def test_an_unauthenticated_idle_drop_is_rate_limited_at_info(logs: Sequence[LogEvent]) -> None:
    clock = Clock()
    admission = Admission(clock)
    limits = ConnectionLimits(handshake_timeout=5, idle_timeout=1)
    for _ in range(2):
        server = ServerConnection(clock, SERVER, NonceRegistry(bytes), Handler(), limits, admission=admission)
        server.makeConnection(TCPTransport())
        server.dataReceived(b"GET ")
    clock.advance(1)
    assert dropped(logs) == [(LogLevel.info, "dropping connection from 192.0.2.7: idle for 1 s")]
    assert admission.counted() == {"idle": 2}


def test_leftover_bytes_after_either_head_are_served() -> None:
    """A request sent with the upgrade request is served; its response, arriving with the 101, is
    something the client never asked for."""
    farm = Farm()
    farm.handler.auto = True
    link = Link(farm)
    link.client_transport.write(encode(append(7)))  # right behind the client's request head
    link.pump.flush()
    assert link.server.username == "farm"
    assert link.why == "unexpected AppendEntriesResponse"


def test_responses_are_matched_and_their_deadlines_end(logs: Sequence[LogEvent]) -> None:
    """Answered requests leave no deadline behind on either side; ``ready`` fires with the client."""
    farm = Farm()
    farm.handler.auto = True
    link = farm.link()
    ready: list[Any] = []
    link.client.ready.addCallback(ready.append)
    assert ready == [link.client]
    got: list[Response] = []
    link.client.request(append(3), timeout=1).addCallback(got.append)
    link.pump.flush()
    assert got == [answer(append(3))]
    farm.clock.advance(LIMITS.response_timeout + 1)
    link.pump.flush()
    assert up(link) and dropped(logs) == []


def test_an_unanswered_request_drops_the_server_side_word_for_word(logs: Sequence[LogEvent]) -> None:
    farm = Farm()
    link = farm.link()
    link.client.request(append(), timeout=100).addErrback(lambda _f: None)
    link.pump.flush()
    farm.clock.advance(LIMITS.response_timeout)
    assert dropped(logs) == [
        (LogLevel.warn, "dropping connection from 192.0.2.7: no answer to a AppendEntriesRequest in time")
    ]
    assert farm.admission is not None and farm.admission.counted() == {"other": 1}


@pytest.mark.parametrize(
    ("error", "level", "reason"),
    [(NodeStopped("stopped"), LogLevel.info, "stopping"), (ValueError("broken"), LogLevel.warn, "other")],
)
def test_a_request_the_node_cannot_answer(
    logs: Sequence[LogEvent], error: Exception, level: LogLevel, reason: str
) -> None:
    """A stopping node's refusal is routine (info); any other failure is a warning. Dropped once."""
    farm = Farm()
    link = farm.link()
    for i in range(2):
        link.client.request(append(i)).addErrback(lambda _f: None)
    link.pump.flush()
    for _request, d in farm.handler.waiting:
        d.errback(error)
    assert dropped(logs) == [
        (level, f"dropping connection from 192.0.2.7: cannot answer a AppendEntriesRequest: {error}")
    ]
    assert farm.admission is not None and farm.admission.counted() == {reason: 1}


def test_a_peer_that_disconnects_mid_request(logs: Sequence[LogEvent]) -> None:
    """The connection closes with a request in the handler: no timers left, the listener and the owner
    told; the handler's late failure or answer is dropped silently."""
    farm = Farm()
    link = farm.link()
    link.client.request(append(0)).addErrback(lambda _f: None)
    link.client.request(append(1)).addErrback(lambda _f: None)
    link.pump.flush()
    link.client_transport.loseConnection()
    link.pump.flush()
    assert link.closed == [link.server]
    assert farm.admission is not None and farm.admission.closed_ones[1:] == [link.server]
    assert farm.clock.getDelayedCalls() == []
    farm.handler.waiting[0][1].errback(NodeStopped("stopped"))
    farm.handler.waiting[1][1].callback(answer(append(1)))
    assert dropped(logs) == [] and farm.admission.counted() == {}


def test_a_server_that_closes_before_the_upgrade_leaves_no_timers() -> None:
    clock = Clock()
    server = ServerConnection(clock, SERVER, NonceRegistry(bytes), Handler(), LIMITS)
    server.makeConnection(TCPTransport())
    server.dataReceived(b"GET ")
    server.connectionLost(Failure(ConnectionDone()))
    assert clock.getDelayedCalls() == []


def test_pipelined_requests_at_the_limit_and_one_past_it(logs: Sequence[LogEvent]) -> None:
    farm = Farm()
    link = farm.link()
    for i in range(LIMITS.max_pipelined):
        link.client.request(append(i)).addErrback(lambda _f: None)
    link.pump.flush()
    assert up(link) and len(farm.handler.waiting) == LIMITS.max_pipelined
    link.client.request(append(9)).addErrback(lambda _f: None)
    link.pump.flush()
    assert not up(link)
    assert dropped(logs) == [
        (LogLevel.warn, "dropping connection from 192.0.2.7: more than 2 requests waiting for answers")
    ]
    assert farm.admission is not None and farm.admission.counted() == {"protocol": 1}


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x63" * 30, "malformed message: unknown message type 99 at byte 0"),
        (encode(AppendEntriesResponse(1, 2, 3, 4, True)), "a AppendEntriesResponse where a request belongs"),
    ],
)
def test_a_protocol_violation_is_logged_and_counted(logs: Sequence[LogEvent], data: bytes, why: str) -> None:
    farm = Farm()
    link = farm.link()
    link.client_transport.write(data)
    link.pump.flush()
    assert dropped(logs) == [(LogLevel.warn, f"dropping connection from 192.0.2.7: {why}")]
    assert farm.admission is not None and farm.admission.counted() == {"protocol": 1}


def test_drops_without_an_admission_are_logged_by_the_connection(logs: Sequence[LogEvent]) -> None:
    farm = Farm(admission=False)
    link = farm.link()
    link.client_transport.write(b"\x63" * 30)
    link.pump.flush()
    assert dropped(logs) == [
        (
            LogLevel.warn,
            "dropping connection from 192.0.2.7: malformed message: unknown message type 99 at byte 0",
        )
    ]
    wrong = ClientConfig(host=CLIENT.host, username="farm", password="wrong", cluster="farm")
    farm.link(client_config=wrong)
    refused = [(level, text) for level, text in lines(logs) if text.startswith("handshake from")]
    assert refused == [(LogLevel.info, "handshake from 192.0.2.7 refused: wrong password: user 'farm'")]


def test_authenticated_drops_are_not_rate_limited_but_keyed_ones_are(logs: Sequence[LogEvent]) -> None:
    """Every malformed message from a member is its own line; a second over-budget refusal, buffer
    budget overrun or impersonation within the interval is only counted, each kind on its own."""
    farm = Farm()
    assert farm.admission is not None
    for _ in range(2):
        link = farm.link()
        link.client_transport.write(b"\x63" * 30)
        link.pump.flush()
    farm.admission.budget = BufferBudget(1_000)
    for _ in range(2):
        link = farm.link()
        link.client_transport.write(encode(append(size=2_000))[:1_500])
        link.pump.flush()
    farm.admission.budget = BufferBudget(1_000_000)
    for _ in range(2):
        link = Link(farm)
        link.server_transport.certificate = certificate("node-3")
        link.server.handshakeCompleted()
        link.pump.flush()
        assert (link.server.certificate, link.server.identity) == ("node-3", 3)
        link.client.request(append(source=1)).addErrback(lambda _f: None)
        link.pump.flush()
    farm.admission.refuse = "2 authenticated connections are open (the budget)"
    for _ in range(2):
        farm.link()
    head = "dropping connection from 192.0.2.7: "
    assert dropped(logs) == [
        (LogLevel.warn, head + "malformed message: unknown message type 99 at byte 0"),
        (LogLevel.warn, head + "malformed message: unknown message type 99 at byte 0"),
        (
            LogLevel.warn,
            head + "a partly received message of 1500 bytes would take the node's partly received "
            "messages past 1000 bytes (0 held)",
        ),
        (
            LogLevel.warn,
            head + "a AppendEntriesRequest from server 1, over a connection whose certificate (node-3) is "
            "server 3's: one member posing as another",
        ),
        (LogLevel.warn, head + "2 authenticated connections are open (the budget)"),
    ]
    assert farm.admission.counted() == {
        "protocol": 2,
        "buffer_budget": 2,
        "impersonation": 2,
        "over_budget": 2,
    }


def test_a_member_speaking_as_itself_is_served() -> None:
    farm = Farm()
    farm.handler.auto = True
    link = Link(farm)
    link.server_transport.certificate = certificate("node-1")
    link.server.handshakeCompleted()
    link.pump.flush()
    got: list[Response] = []
    link.client.request(append(source=1)).addCallback(got.append)
    link.pump.flush()
    assert got == [answer(append(source=1))]


def test_an_evicted_connection_is_counted_once_and_logs_nothing(logs: Sequence[LogEvent]) -> None:
    clock = Clock()
    admission = Admission(clock)
    server = ServerConnection(clock, SERVER, NonceRegistry(bytes), Handler(), LIMITS, admission=admission)
    transport = TCPTransport()
    server.makeConnection(transport)
    server.evict()
    server.dataReceived(b"GET / HTTP/1.1\r\n\r\n")
    clock.advance(LIMITS.handshake_timeout)
    assert transport.aborted == 1 and transport.value() == b""
    assert admission.counted() == {"evicted": 1}
    assert dropped(logs) == []


# ------------------------------------------------------------------------------------------ client side


def test_the_client_handshake_deadline_at_its_bound(logs: Sequence[LogEvent]) -> None:
    """Just short of handshake_timeout nothing happens; at it the link drops with that reason, which
    ``ready``, the owner and the info line get word for word."""
    clock = Clock()
    lost: list[tuple[ClientConnection, str]] = []
    client = ClientConnection(
        clock, CLIENT, ChallengeCache(), LIMITS, on_lost=lambda c, why: lost.append((c, why))
    )
    errors: list[str] = []

    def record(failure: Failure) -> None:
        errors.append(described(failure))

    client.ready.addErrback(record)
    transport = TCPTransport()
    client.makeConnection(transport)
    assert transport.no_delay == [True]
    assert client.handshake_failure is None
    clock.advance(LIMITS.handshake_timeout - 0.001)
    assert transport.aborted == 0
    clock.advance(0.001)
    assert transport.aborted == 1
    client.connectionLost(Failure(ConnectionDone()))
    assert lost == [(client, "handshake timed out")]
    assert errors == ["ConnectionClosed: handshake timed out"]
    assert lines(logs) == [(LogLevel.info, "dropping connection to 127.0.0.1:9001: handshake timed out")]


def test_a_lost_handshake_leaves_no_timer() -> None:
    clock = Clock()
    client = ClientConnection(clock, CLIENT, ChallengeCache(), LIMITS)
    client.makeConnection(TCPTransport())
    client.connectionLost(Failure(ConnectionDone()))
    assert clock.getDelayedCalls() == []
    assert client.ready.called


def test_a_request_before_the_upgrade_is_not_sent() -> None:
    clock = Clock()
    client = ClientConnection(clock, CLIENT, ChallengeCache(), LIMITS)
    transport = TCPTransport()
    client.makeConnection(transport)
    head = transport.value()
    errors: list[Failure] = []
    client.request(append()).addErrback(errors.append)
    [error] = errors
    assert error.check(NotConnected) and error.getErrorMessage() == "the connection is not ready"
    assert transport.value() == head


def test_failures_of_pending_requests_say_why_word_for_word() -> None:
    """A timeout fails everything pending as RequestTimeout naming the request; a plain close as
    ConnectionClosed; later requests fail at once, naming the reason."""
    farm = Farm()
    link = farm.link()
    errors: list[str] = []

    def record(failure: Failure) -> None:
        errors.append(described(failure))

    link.client.request(append(), timeout=1).addErrback(record)
    link.pump.flush()
    farm.clock.advance(1)
    link.pump.flush()
    assert errors == ["RequestTimeout: no response to a AppendEntriesRequest"]
    assert link.why == "no response to a AppendEntriesRequest"
    second = farm.link()
    second.client.request(append()).addErrback(record)
    second.pump.flush()
    second.server_transport.loseConnection()
    second.pump.flush()
    second.client.request(append()).addErrback(record)
    assert errors[1:] == [
        "ConnectionClosed: connection closed",
        "ConnectionClosed: the connection is closed: connection closed",
    ]


def test_a_malformed_response_drops_the_client_word_for_word() -> None:
    farm = Farm()
    link = farm.link()
    link.server_transport.write(b"\x63" * 30)
    link.pump.flush()
    assert link.why == "malformed message: unknown message type 99 at byte 0"


def test_the_client_decodes_with_its_wire_limits() -> None:
    """A response is decoded under the client's own wire limits."""
    farm = Farm()
    tight = ConnectionLimits(wire=WireLimits(max_entries=0))
    link = farm.link(client_limits=tight)
    link.client.request(append()).addErrback(lambda _f: None)
    link.pump.flush()
    link.server_transport.write(encode(append(size=10)))  # one entry: more than the client takes
    link.pump.flush()
    assert link.why.startswith("malformed message: ")


def test_flow_control_set_at_construction_caps_unanswered_bytes() -> None:
    """The cap counts from construction (peer links pass flow_control=True): a second request that
    would pass it fails at once as Backpressure; exactly at it, it goes."""
    farm = Farm()
    size = len(encode(append(size=100)))
    limits = ConnectionLimits(max_unanswered_bytes=2 * size)
    link = farm.link(flow_control=True, client_limits=limits)
    refused: list[Failure] = []
    for _ in range(2):
        link.client.request(append(size=100)).addErrback(refused.append)
    assert refused == [] and link.client.unanswered_bytes == 2 * size
    link.client.request(append()).addErrback(refused.append)
    [error] = refused
    assert error.check(Backpressure)
    assert error.getErrorMessage() == f"127.0.0.1:9001 is not taking more now: {2 * size} bytes await answers"


def test_a_refused_handshake_is_not_also_a_timeout(logs: Sequence[LogEvent]) -> None:
    """Refused and closing (the transport still flushing the error response): the handshake deadline
    that passes meanwhile neither counts nor logs a second drop, nor aborts the flush."""
    clock = Clock()
    admission = Admission(clock)
    server = ServerConnection(clock, SERVER, NonceRegistry(bytes), Handler(), LIMITS, admission=admission)
    transport = TCPTransport()
    server.makeConnection(transport)
    server.dataReceived(b"GET /elsewhere HTTP/1.1\r\nHost: x\r\n\r\n")
    assert transport.value().startswith(b"HTTP/1.1 404") and transport.disconnecting
    clock.advance(LIMITS.handshake_timeout)
    assert transport.aborted == 0
    assert admission.counted() == {"handshake": 1}
    assert dropped(logs) == []


def test_a_handshake_lost_unwatched_leaves_no_unhandled_error(logs: Sequence[LogEvent]) -> None:
    """Nobody waits on ``ready`` (a peer link's owner uses on_lost): its failure is handled, so garbage
    collection logs no 'Unhandled error in Deferred'."""
    clock = Clock()
    client = ClientConnection(clock, CLIENT, ChallengeCache(), LIMITS)
    client.makeConnection(TCPTransport())
    client.connectionLost(Failure(ConnectionDone()))
    del client
    gc.collect()
    assert [text for _level, text in lines(logs) if "Unhandled" in text] == []
