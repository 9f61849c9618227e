"""Connections over an in-memory transport (twisted.test.iosim) with a Clock: deterministic."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest
from twisted.internet.defer import Deferred, succeed
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.test.iosim import FakeTransport, IOPump, connect

from garlicfarm.handshake import ChallengeCache, ClientConfig, NonceRegistry, ServerConfig
from garlicfarm.net.connection import (
    ClientConnection,
    ConnectionClosed,
    ConnectionLimits,
    NotConnected,
    RequestTimeout,
    ServerConnection,
    no_delay,
)
from garlicfarm.wire import (
    AddServerRequest,
    AppendEntriesRequest,
    AppendEntriesResponse,
    ClusterServer,
    LogEntry,
    Request,
    RequestVoteRequest,
    RequestVoteResponse,
    Response,
    encode,
)

LIMITS = ConnectionLimits(handshake_timeout=5, idle_timeout=60, max_pipelined=8, response_timeout=20)
SERVER = ServerConfig(credentials={"farm": "secret"}, cluster="farm")
CLIENT = ClientConfig(host="127.0.0.1:9001", username="farm", password="secret", cluster="farm")


class Handler:
    """Answers each request with a Deferred the test fires when it likes."""

    def __init__(self) -> None:
        self.waiting: list[tuple[Request, Deferred[Response]]] = []
        self.auto = True

    def __call__(self, request: Request) -> Deferred[Response]:
        if self.auto:
            return succeed(answer(request))
        d: Deferred[Response] = Deferred()
        self.waiting.append((request, d))
        return d


def record(sink: list[Any], attribute: str) -> Callable[[Failure], None]:
    def errback(failure: Failure) -> None:
        sink.append(getattr(failure, attribute))

    return errback


def answer(request: Request) -> Response:
    if isinstance(request, RequestVoteRequest):
        return RequestVoteResponse(2, request.source, request.term, 0, True)
    return AppendEntriesResponse(2, request.source, request.term, request.last_log_index + 1, True)


class Link:
    def __init__(self, clock: Clock, handler: Handler, cache: ChallengeCache, nonces: NonceRegistry) -> None:
        self.server = ServerConnection(
            clock, SERVER, nonces, handler, LIMITS, lambda: [("GarlicFarm-Leader", "2")]
        )
        self.ready: list[ClientConnection] = []
        self.lost: list[str] = []
        self.client = ClientConnection(
            clock, CLIENT, cache, LIMITS, self.ready.append, lambda _c, why: self.lost.append(why), bytes
        )
        self.server_transport = FakeTransport(self.server, isServer=True)
        self.client_transport = FakeTransport(self.client, isServer=False)
        self.pump: IOPump = connect(self.server, self.server_transport, self.client, self.client_transport)


def connected(clock: Clock, handler: Handler) -> Link:
    """Two connections: the first gets the Digest challenge, the second goes straight in."""
    cache = ChallengeCache()
    nonces = NonceRegistry(lambda n: b"\x01" * n)
    first = Link(clock, handler, cache, nonces)
    first.pump.flush()
    assert first.lost and "reconnecting" in first.lost[0] and first.client.challenged
    second = Link(clock, handler, cache, nonces)
    second.pump.flush()
    assert second.ready == [second.client] and not second.client.challenged
    return second


def test_handshake_then_requests_are_answered() -> None:
    clock = Clock()
    link = connected(clock, Handler())
    assert link.client.upgraded is not None
    assert link.client.upgraded.header("GarlicFarm-Leader") == "2"
    got: list[Response] = []
    link.client.request(RequestVoteRequest(1, 2, 5, 0, 0, 0)).addCallback(got.append)
    link.pump.flush()
    assert got == [RequestVoteResponse(2, 1, 5, 0, True)]


def test_responses_come_back_in_request_order() -> None:
    clock = Clock()
    handler = Handler()
    handler.auto = False
    link = connected(clock, handler)
    got: list[Response] = []
    for i in range(3):
        link.client.request(AppendEntriesRequest(1, 2, 5, 0, i, 0)).addCallback(got.append)
    link.pump.flush()
    assert len(handler.waiting) == 3
    for request, d in reversed(handler.waiting):  # answers complete last-first ...
        d.callback(answer(request))
    link.pump.flush()
    assert [r.next_index for r in got] == [1, 2, 3]  # ... but leave first-first


def test_garbage_after_the_handshake_drops_the_connection() -> None:
    clock = Clock()
    link = connected(clock, Handler())
    link.client_transport.write(b"\x63" * 30)
    link.pump.flush()
    assert link.server_transport.disconnecting or link.server_transport.disconnected


def test_a_four_gigabyte_size_field_is_refused_from_the_header() -> None:
    clock = Clock()
    link = connected(clock, Handler())
    header = struct.pack(">BIIQQQQI", 3, 1, 2, 5, 0, 0, 0, 0xFFFFFFFF)
    link.client_transport.write(header)
    link.pump.flush()
    assert link.server_transport.disconnected or link.server_transport.disconnecting


def test_a_half_handshake_times_out() -> None:
    clock = Clock()
    server = ServerConnection(clock, SERVER, NonceRegistry(lambda n: b"\x01" * n), Handler(), LIMITS)
    transport = FakeTransport(server, isServer=True)
    server.makeConnection(transport)
    server.dataReceived(b"GET /GarlicFarm/farm/1/websocket HTTP/1.1\r\nHost: x\r\n")  # no end of head
    clock.advance(LIMITS.handshake_timeout + 0.1)
    assert transport.disconnecting or transport.disconnected


def test_random_bytes_instead_of_a_handshake_get_a_plain_error() -> None:
    clock = Clock()
    server = ServerConnection(clock, SERVER, NonceRegistry(lambda n: b"\x01" * n), Handler(), LIMITS)
    transport = FakeTransport(server, isServer=True)
    server.makeConnection(transport)
    server.dataReceived(bytes(range(256)) * 4)
    assert transport.disconnecting or transport.disconnected
    written = b"".join(transport.stream)
    assert written.startswith(b"HTTP/1.1 4")
    assert b"GarlicFarm" not in written and b"garlic" not in written.lower()


def test_a_response_where_a_request_belongs_drops_the_connection() -> None:
    clock = Clock()
    link = connected(clock, Handler())
    link.client_transport.write(encode(AppendEntriesResponse(1, 2, 3, 4, True)))
    link.pump.flush()
    assert link.server_transport.disconnecting or link.server_transport.disconnected


def test_too_many_pipelined_requests_drop_the_connection() -> None:
    clock = Clock()
    handler = Handler()
    handler.auto = False
    link = connected(clock, handler)
    for i in range(LIMITS.max_pipelined + 1):
        link.client.request(AppendEntriesRequest(1, 2, 5, 0, i, 0)).addErrback(lambda _f: None)
    link.pump.flush()
    assert link.server_transport.disconnecting or link.server_transport.disconnected


def test_a_request_timeout_fails_everything_pending() -> None:
    clock = Clock()
    handler = Handler()
    handler.auto = False
    link = connected(clock, handler)
    errors: list[type] = []
    for i in range(2):
        link.client.request(AppendEntriesRequest(1, 2, 5, 0, i, 0), timeout=1).addErrback(
            record(errors, "type")
        )
    link.pump.flush()
    clock.advance(1.5)
    link.pump.flush()
    assert errors == [RequestTimeout, RequestTimeout]


def test_requests_timing_out_together_abort_the_connection_once() -> None:
    """TLS transports cannot be aborted twice (pyOpenSSL's connection is gone after the first)."""
    clock = Clock()
    handler = Handler()
    handler.auto = False
    link = connected(clock, handler)
    aborts: list[None] = []
    transport = link.client.transport
    assert transport is not None
    original = transport.abortConnection  # type: ignore[attr-defined]

    def abort() -> None:
        aborts.append(None)
        original()

    transport.abortConnection = abort  # type: ignore[attr-defined]
    for i in range(3):
        link.client.request(AppendEntriesRequest(1, 2, 5, 0, i, 0), timeout=1).addErrback(lambda _f: None)
    link.pump.flush()
    clock.advance(1.5)
    link.pump.flush()
    assert len(aborts) == 1


def test_an_unanswered_request_ends_the_server_side_in_time() -> None:
    clock = Clock()
    handler = Handler()
    handler.auto = False
    link = connected(clock, handler)
    link.client.request(AppendEntriesRequest(1, 2, 5, 0, 0, 0)).addErrback(lambda _f: None)
    link.pump.flush()
    clock.advance(LIMITS.response_timeout + 1)
    assert link.server_transport.disconnecting or link.server_transport.disconnected


def test_an_add_server_request_may_take_as_long_as_a_catch_up() -> None:
    """The leader answers AddServerRequest once the new server caught up: minutes for a big log."""
    clock = Clock()
    handler = Handler()
    handler.auto = False
    link = connected(clock, handler)
    add = AddServerRequest(entries=(LogEntry(0, ClusterServer(4, "tcp://127.0.0.1:9004")),))
    link.client.request(add, timeout=LIMITS.join_response_timeout + 10).addErrback(lambda _f: None)
    link.pump.flush()
    clock.advance(LIMITS.response_timeout + 1)
    assert not (link.server_transport.disconnecting or link.server_transport.disconnected)


def test_request_before_ready_fails_fast() -> None:
    clock = Clock()
    client = ClientConnection(clock, CLIENT, ChallengeCache(), LIMITS)
    errors: list[BaseException] = []
    client.request(RequestVoteRequest()).addErrback(record(errors, "value"))
    assert isinstance(errors[0], NotConnected)


def test_connection_lost_fails_pending_requests() -> None:
    clock = Clock()
    handler = Handler()
    handler.auto = False
    link = connected(clock, handler)
    errors: list[type] = []
    link.client.request(AppendEntriesRequest(1, 2, 5, 0, 0, 0)).addErrback(record(errors, "type"))
    link.pump.flush()
    link.server_transport.loseConnection()
    link.pump.flush()
    assert errors == [ConnectionClosed]


def test_tcp_links_turn_nagle_off() -> None:
    """Pipelined small writes would otherwise wait for delayed ACKs (40 ms each on Linux)."""

    class TCPLike:
        calls: list[bool] = []

        def setTcpNoDelay(self, enabled: bool) -> None:
            self.calls.append(enabled)

    class Refusing:
        def setTcpNoDelay(self, enabled: bool) -> None:
            raise OSError("not a TCP socket")

    tcp = TCPLike()
    no_delay(tcp)
    assert tcp.calls == [True]
    no_delay(Refusing())  # not TCP after all: nothing to tune, no error
    no_delay(object())  # no such call at all


def test_a_request_on_a_lost_connection_fails_at_once() -> None:
    clock = Clock()
    link = connected(clock, Handler())
    link.client.transport.loseConnection()  # type: ignore[union-attr]
    link.pump.flush()
    assert link.client.lost
    errors: list[type] = []
    link.client.request(AppendEntriesRequest(1, 2, 5, 0, 0, 0), timeout=1).addErrback(record(errors, "type"))
    assert errors == [ConnectionClosed]
    clock.advance(2)  # and no timer is left to abort a transport that is gone


def closed(transport: FakeTransport) -> bool:
    return bool(transport.disconnecting or transport.disconnected)


def test_a_server_that_never_answers_the_upgrade_is_dropped_in_time() -> None:
    clock = Clock()
    lost: list[str] = []
    client = ClientConnection(
        clock, CLIENT, ChallengeCache(), LIMITS, on_lost=lambda _c, why: lost.append(why)
    )
    transport = FakeTransport(client, isServer=False)
    client.makeConnection(transport)
    clock.advance(LIMITS.handshake_timeout - 0.1)
    assert not closed(transport)
    clock.advance(0.2)
    assert closed(transport)
    client.connectionLost(Failure(ConnectionDone()))
    assert lost and "handshake timed out" in lost[0]


@pytest.mark.parametrize(
    ("message", "why"),
    [
        (AppendEntriesResponse(2, 1, 5, 1, True), "unexpected AppendEntriesResponse"),  # nothing asked
        (RequestVoteRequest(2, 1, 5, 0, 0, 0), "unexpected RequestVoteRequest"),  # a request to a client
    ],
)
def test_a_message_the_client_did_not_ask_for_drops_the_link(message: Any, why: str) -> None:
    link = connected(Clock(), Handler())
    link.server_transport.write(encode(message))
    link.pump.flush()
    assert link.client_transport.disconnecting or link.client_transport.disconnected
    assert link.lost and why in link.lost[-1]
