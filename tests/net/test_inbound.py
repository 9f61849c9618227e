"""Inbound budgets, deterministic: MemoryReactorClock for time, StringTransport and iosim for bytes.

Unauthenticated connections have their own small budget (the oldest is pushed out) and an absolute
handshake deadline; authenticated ones have theirs; partly received messages share one memory budget;
refusals, timeouts and TLS failures are logged a bounded number of times.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence

import pytest
from OpenSSL import SSL
from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred, succeed
from twisted.internet.error import ConnectionDone
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.logger import LogEvent, capturedLogs, formatEvent
from twisted.python.failure import Failure
from twisted.test.iosim import FakeTransport, IOPump, connect

from garlicfarm.handshake import ChallengeCache, ClientConfig, NonceRegistry, ServerConfig
from garlicfarm.net.connection import ClientConnection, ConnectionLimits, ServerConnection
from garlicfarm.net.inbound import InboundFactory
from garlicfarm.tls.errors import UnpinnedPeer
from garlicfarm.wire import AppendEntriesResponse, Request, RequestVoteRequest, RequestVoteResponse, Response

LIMITS = ConnectionLimits(handshake_timeout=5, idle_timeout=60, max_pipelined=8, response_timeout=20)
SERVER = ServerConfig(credentials={"farm": "secret"}, cluster="farm")
CLIENT = ClientConfig(host="127.0.0.1:9001", username="farm", password="secret", cluster="farm")
ADDRESS = IPv4Address("TCP", "192.0.2.7", 40000)


def handler(request: Request) -> Deferred[Response]:
    if isinstance(request, RequestVoteRequest):
        return succeed(RequestVoteResponse(2, request.source, request.term, 0, True))
    return succeed(AppendEntriesResponse(2, request.source, request.term, 1, True))


class Node:
    """An InboundFactory as a node builds it, over a MemoryReactorClock."""

    def __init__(self, max_connections: int = 4, max_unauthenticated: int = 8, max_buffered: int = 10_000):
        self.clock = MemoryReactorClock()
        self.nonces = NonceRegistry(lambda n: b"\x01" * n)
        self.cache = ChallengeCache()
        self.factory = InboundFactory(
            self.make,
            max_connections,
            self.clock,
            max_unauthenticated=max_unauthenticated,
            max_buffered=max_buffered,
        )

    def make(self, admission: InboundFactory) -> ServerConnection:
        return ServerConnection(self.clock, SERVER, self.nonces, handler, LIMITS, admission=admission)

    def stranger(self, address: IPv4Address = ADDRESS) -> tuple[ServerConnection, StringTransport]:
        """A connection that connects and says nothing (or whatever the test writes)."""
        server = self.factory.buildProtocol(address)
        assert isinstance(server, ServerConnection)
        transport = StringTransport(peerAddress=address)
        server.makeConnection(transport)
        return server, transport

    def peer(self) -> Link:
        """A client that completes the handshake (the first try gets the Digest challenge)."""
        link = Link(self)
        link.pump.flush()
        if link.lost and "reconnecting" in link.lost[0]:  # no cached challenge yet
            link = Link(self)
            link.pump.flush()
        return link


class Link:
    def __init__(self, node: Node) -> None:
        server = node.factory.buildProtocol(ADDRESS)
        assert isinstance(server, ServerConnection)
        self.server = server
        self.ready: list[ClientConnection] = []
        self.lost: list[str] = []
        self.client = ClientConnection(
            node.clock,
            CLIENT,
            node.cache,
            LIMITS,
            self.ready.append,
            lambda _c, why: self.lost.append(why),
            bytes,
        )
        self.server_transport = FakeTransport(self.server, isServer=True, peerAddress=ADDRESS)
        self.client_transport = FakeTransport(self.client, isServer=False)
        self.pump: IOPump = connect(
            self.server, self.server_transport, self.client, self.client_transport, greet=False
        )

    @property
    def up(self) -> bool:
        return bool(self.ready) and not self.client.lost


def lines(events: Sequence[LogEvent]) -> list[str]:
    return [text for e in events if (text := formatEvent(e))]


@pytest.fixture
def logs() -> Iterator[Sequence[LogEvent]]:
    with capturedLogs() as events:
        yield events


# ---------------------------------------------------------------------------------------------- budgets


def test_a_flood_of_silent_connections_keeps_only_the_budget_and_logs_a_few_lines(
    logs: Sequence[LogEvent],
) -> None:
    node = Node(max_unauthenticated=8)
    transports = [node.stranger()[1] for _ in range(1000)]
    assert len(node.factory.pending) == 8
    closed = [t for t in transports if t.disconnected]
    assert len(closed) == 992  # closed at once, the oldest first
    assert all(not t.disconnected for t in transports[-8:])
    node.clock.advance(10)  # the summary line for the interval
    refusals = [line for line in lines(logs) if "unauthenticated connection" in line]
    assert len(refusals) == 2
    assert "991 more in the last 10 s" in refusals[1]


def test_an_authenticated_peer_gets_in_during_a_flood(logs: Sequence[LogEvent]) -> None:
    node = Node(max_unauthenticated=8)
    for _ in range(1000):
        node.stranger()
    link = node.peer()
    assert link.up
    assert node.factory.open == {link.server}
    for _ in range(1000):  # a flood after the handshake does not touch authenticated connections
        node.stranger()
    assert link.up and not link.server_transport.disconnecting


def test_the_handshake_deadline_does_not_reset_per_byte(logs: Sequence[LogEvent]) -> None:
    node = Node()
    server, transport = node.stranger()
    for byte in b"GET / HTTP/1.1\r\n":  # one byte a second, for longer than the deadline
        server.dataReceived(bytes([byte]))
        node.clock.advance(1)
        if transport.disconnected:
            break
    assert transport.disconnected
    assert node.clock.seconds() == LIMITS.handshake_timeout


def test_timeouts_of_many_strangers_are_logged_a_bounded_number_of_times(logs: Sequence[LogEvent]) -> None:
    node = Node(max_unauthenticated=200)
    for _ in range(200):
        node.stranger()
    node.clock.advance(LIMITS.handshake_timeout)
    node.clock.advance(10)
    timeouts = [line for line in lines(logs) if "handshake timed out" in line]
    assert len(timeouts) == 2


def test_authenticated_connections_have_their_own_budget(logs: Sequence[LogEvent]) -> None:
    node = Node(max_connections=2, max_unauthenticated=8)
    links = [node.peer() for _ in range(3)]
    assert [link.up for link in links] == [True, True, False]
    assert "2 authenticated connections are open" in " ".join(lines(logs))
    links[0].client_transport.loseConnection()
    links[0].pump.flush()
    assert node.peer().up  # room again


def test_closed_connections_leave_both_budgets(logs: Sequence[LogEvent]) -> None:
    node = Node()
    link = node.peer()
    server, _transport = node.stranger()
    server.connectionLost(Failure(ConnectionDone()))
    link.client_transport.loseConnection()
    link.pump.flush()
    assert node.factory.pending == {}
    assert node.factory.open == set()


# ---------------------------------------------------------------------------------------------- memory


def partial_append_entries(size: int, sent: int) -> bytes:
    """The header of an AppendEntriesRequest announcing ``size`` bytes of entries, and ``sent`` of them."""
    return struct.pack(">BIIQQQQI", 3, 1, 2, 5, 0, 0, 0, size) + b"\x00" * sent


def test_partly_received_messages_share_one_budget(logs: Sequence[LogEvent]) -> None:
    node = Node(max_buffered=10_000)
    first, second = node.peer(), node.peer()
    first.client_transport.write(partial_append_entries(9_000, 6_000))
    first.pump.flush()
    assert node.factory.budget.total == 6_045
    assert first.up
    second.client_transport.write(partial_append_entries(9_000, 6_000))
    second.pump.flush()
    assert not second.up  # its partial message would take the node past its budget
    assert "past 10000 bytes" in " ".join(lines(logs))
    assert node.factory.budget.total == 6_045
    first.client_transport.loseConnection()
    first.pump.flush()
    assert node.factory.budget.total == 0


def test_a_whole_message_returns_its_bytes_to_the_budget(logs: Sequence[LogEvent]) -> None:
    node = Node(max_buffered=10_000)
    link = node.peer()
    got: list[Response] = []
    link.client.request(RequestVoteRequest(1, 2, 5, 0, 0, 0)).addCallback(got.append)
    link.pump.flush()
    assert got and node.factory.budget.total == 0


# ---------------------------------------------------------------------------------------------- TLS


def tls_failure(reason: str) -> Failure:
    return Failure(SSL.Error([("SSL routines", "", reason)]))


def test_tls_refusals_are_logged_with_the_remote_address(logs: Sequence[LogEvent]) -> None:
    node = Node()
    server, _ = node.stranger()
    server.connectionLost(tls_failure("peer did not return a certificate"))
    [line] = [line for line in lines(logs) if "TLS" in line]
    assert line == "TLS handshake from 192.0.2.7 failed: peer did not return a certificate"
    node.clock.advance(10)  # a new interval: the next line is written at once
    pinned, _ = node.stranger()
    pinned.connectionLost(Failure(UnpinnedPeer("peer certificate sha256:AB is not pinned")))
    assert "TLS handshake from 192.0.2.7 failed: peer certificate sha256:AB is not pinned" in lines(logs)


def test_tls_refusals_are_rate_limited(logs: Sequence[LogEvent]) -> None:
    node = Node(max_unauthenticated=1000)
    for _ in range(500):
        server, _ = node.stranger()
        server.connectionLost(tls_failure("certificate verify failed"))
    node.clock.advance(10)
    node.clock.advance(10)
    tls = [line for line in lines(logs) if "TLS handshake" in line]
    assert len(tls) == 2
    assert tls[1].startswith("499 more in the last 10 s")


def test_stopping_the_listener_flushes_counts_and_leaves_no_timers(logs: Sequence[LogEvent]) -> None:
    node = Node(max_unauthenticated=2)
    node.factory.doStart()  # as a listening port does
    for _ in range(5):
        node.stranger()
    node.factory.doStop()
    assert "2 more since the last line like it, the latest: closed an unauthenticated" in " ".join(
        lines(logs)
    )
    assert node.factory.events.open_windows == 0


def test_strangers_push_out_strangers_before_connections_past_tls(logs: Sequence[LogEvent]) -> None:
    node = Node(max_unauthenticated=4)
    trusted = [node.stranger() for _ in range(2)]
    for server, _ in trusted:
        server.handshakeCompleted()  # TLS done: the peer holds a certificate the farm trusts
    strangers = [node.stranger()[1] for _ in range(100)]
    assert not any(t.disconnected for _, t in trusted)
    assert all(t.disconnected for t in strangers[:-2])
    for _ in range(2):  # push out the last two strangers with connections that get past TLS
        node.stranger()[0].handshakeCompleted()
    assert all(t.disconnected for t in strangers)
    node.stranger()  # only past-TLS connections left to push out: the oldest goes
    assert trusted[0][1].disconnected and not trusted[1][1].disconnected


def test_a_flood_from_one_address_pushes_out_its_own_connections(logs: Sequence[LogEvent]) -> None:
    node = Node(max_unauthenticated=8)
    others = [node.stranger(IPv4Address("TCP", f"198.51.100.{i}", 40000))[1] for i in range(1, 4)]
    flood = [node.stranger()[1] for _ in range(1000)]
    assert not any(t.disconnected for t in others)  # still authenticating, untouched
    assert sum(not t.disconnected for t in flood) == 5


def test_each_kind_of_tls_failure_has_its_own_line_and_fingerprints_do_not_multiply_them(
    logs: Sequence[LogEvent],
) -> None:
    node = Node(max_unauthenticated=1000)
    for i in range(100):
        server, _ = node.stranger()
        server.connectionLost(Failure(UnpinnedPeer(f"peer certificate sha256:{i:02X} is not pinned")))
    server, _ = node.stranger()
    server.connectionLost(tls_failure("certificate verify failed"))
    tls = [line for line in lines(logs) if "TLS handshake" in line]
    assert tls == [
        "TLS handshake from 192.0.2.7 failed: peer certificate sha256:00 is not pinned",
        "TLS handshake from 192.0.2.7 failed: certificate verify failed",
    ]


# ---------------------------------------------------------------------------------------------- eviction


def test_an_eviction_is_logged_with_the_peer_its_age_and_the_budget(logs: Sequence[LogEvent]) -> None:
    """The line says who was pushed out, how long it had been authenticating and what the budget is."""
    node = Node(max_unauthenticated=2)
    node.clock.advance(100)  # the age is now - admitted, not now + admitted
    first = node.stranger()[1]
    node.clock.advance(2.5)
    node.stranger()
    node.clock.advance(0.5)
    node.stranger()
    assert first.disconnected
    assert lines(logs) == [
        "closed an unauthenticated connection from 192.0.2.7 after 3.0 s: "
        "2 connections were authenticating (the budget)"
    ]


def test_the_default_budget_of_unauthenticated_connections_is_64(logs: Sequence[LogEvent]) -> None:
    """Without max_unauthenticated, 64 connections authenticate side by side; the 65th pushes one out."""
    node = Node()
    node.factory = InboundFactory(node.make, 4, node.clock)
    transports = [node.stranger()[1] for _ in range(64)]
    assert not any(t.disconnected for t in transports)
    node.stranger()
    assert [t.disconnected for t in transports[:2]] == [True, False]
    assert len(node.factory.pending) == 64


def test_the_log_interval_is_the_factorys(logs: Sequence[LogEvent]) -> None:
    """log_interval sets how long evictions are counted before their summary line."""
    node = Node()
    node.factory = InboundFactory(node.make, 4, node.clock, max_unauthenticated=1, log_interval=30)
    for _ in range(3):
        node.stranger()
    node.clock.advance(10)
    evictions = [line for line in lines(logs) if "unauthenticated connection" in line]
    assert len(evictions) == 1
    node.clock.advance(20)
    evictions = [line for line in lines(logs) if "unauthenticated connection" in line]
    assert evictions[1].startswith("1 more in the last 30 s, the latest: closed an unauthenticated")
