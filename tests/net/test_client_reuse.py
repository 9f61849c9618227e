"""FarmClient.keep_connections (what GarlicFarmClient uses): requests share one authenticated
connection instead of paying a TLS handshake and a Digest challenge each; a failed one is dropped."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.task import Clock

from garlicfarm.net.client import ClientError, FarmClient
from garlicfarm.net.connection import ConnectionClosed
from garlicfarm.wire import AppendEntriesResponse, ClientRequest, Response


class Access:
    endpoint = "tcp://127.0.0.1:1"
    username = "farm"
    cluster = "farm"
    tls = None
    peers = {1: "tcp://127.0.0.1:1"}

    def password(self) -> str:
        return "secret"


class FakeTransport:
    def __init__(self, conn: FakeConnection) -> None:
        self.conn = conn

    def loseConnection(self) -> None:
        self.conn.lost = True


class FakeConnection:
    def __init__(self, answers: list[Any]) -> None:
        self.lost = False
        self.answers = answers
        self.transport = FakeTransport(self)
        self.features: frozenset[str] = frozenset()

    def request(self, _request: Any, timeout: float) -> Deferred[Response]:
        answer = self.answers.pop(0)
        return fail(answer) if isinstance(answer, Exception) else succeed(answer)


def _client(connections: list[FakeConnection], keep: bool) -> tuple[FarmClient, list[FakeConnection]]:
    client = FarmClient(Clock(), Access())
    client.keep_connections = keep
    made: list[FakeConnection] = []

    async def connect(_uri: str) -> FakeConnection:
        made.append(connections.pop(0))
        return made[-1]

    client.connect = connect  # type: ignore[method-assign,assignment]
    return client, made


def _ok(index: int) -> AppendEntriesResponse:
    return AppendEntriesResponse(source=1, destination=1, term=1, next_index=index + 1, accepted=True)


def _submit(client: FarmClient) -> Response:
    box: list[Any] = []
    Deferred.fromCoroutine(client.request_leader(ClientRequest(), "submit")).addBoth(box.append)
    client.reactor.advance(1)  # past the pause before a retry
    assert box and isinstance(box[0], Response), box
    return box[0]


def test_kept_connections_serve_many_requests() -> None:
    shared = FakeConnection([_ok(1), _ok(2), _ok(3)])
    client, made = _client([shared], keep=True)
    assert [_submit(client).next_index for _ in range(3)] == [2, 3, 4]
    assert made == [shared] and not shared.lost
    client.close()
    assert shared.lost


def test_without_keeping_each_request_connects_and_closes() -> None:
    conns = [FakeConnection([_ok(1)]), FakeConnection([_ok(2)])]
    client, made = _client(list(conns), keep=False)
    _submit(client)
    _submit(client)
    assert made == conns and all(c.lost for c in conns)


def test_a_connection_that_failed_is_not_reused() -> None:
    broken = FakeConnection([ConnectionClosed("reset")])
    fresh = FakeConnection([_ok(7)])
    client, made = _client([broken, fresh], keep=True)
    client.endpoints = {1: Access.endpoint}
    assert _submit(client).next_index == 8  # retried (after the client's pause) on a new connection
    assert made == [broken, fresh] and broken.lost and not fresh.lost


def _burst(requests: int) -> tuple[FarmClient, list[Deferred[Any]], list[Any]]:
    """A client keeping connections whose ``connect`` waits (each call appends a Deferred the test
    fires), and ``requests`` asking it for a connection at once (what each got, in ``got``)."""
    client = FarmClient(Clock(), Access())
    client.keep_connections = True
    calls: list[Deferred[Any]] = []

    async def connect(_uri: str) -> Any:
        d: Deferred[Any] = Deferred()
        calls.append(d)
        return await d

    client.connect = connect  # type: ignore[method-assign,assignment]
    got: list[Any] = []
    for _ in range(requests):
        Deferred.fromCoroutine(client._connection(Access.endpoint)).addBoth(got.append)
    return client, calls, got


def test_requests_made_while_connecting_share_one_handshake() -> None:
    """A burst of requests to a node not connected yet opens one connection, not one each: their
    handshakes each took the next nc of the cached challenge and could reach the node out of order."""
    client, calls, got = _burst(3)
    assert len(calls) == 1 and got == []
    shared = FakeConnection([])
    calls[0].callback(shared)
    assert got == [shared, shared, shared]
    Deferred.fromCoroutine(client._connection(Access.endpoint)).addBoth(got.append)
    assert got[-1] is shared and len(calls) == 1  # kept: no new connection


def test_a_failed_connect_fails_every_request_that_waited_for_it_and_the_next_one_tries_again() -> None:
    client, calls, got = _burst(2)
    calls[0].errback(ClientError("cannot connect to tcp://127.0.0.1:1: refused"))
    assert [type(f.value) for f in got] == [ClientError, ClientError]
    Deferred.fromCoroutine(client._connection(Access.endpoint))
    assert len(calls) == 2  # not stuck on the failed attempt


def test_redirects_to_one_leader_are_logged_at_info_once() -> None:
    from twisted.logger import ILogObserver, LogLevel, globalLogPublisher

    def refused(leader: int) -> AppendEntriesResponse:
        return AppendEntriesResponse(source=1, destination=leader, term=1, next_index=0, accepted=False)

    follower = FakeConnection([refused(2), refused(2), refused(3)])
    leaders = [FakeConnection([_ok(1)]), FakeConnection([_ok(2)]), FakeConnection([_ok(3)])]
    client, _ = _client([follower, leaders[0], follower, leaders[1], follower, leaders[2]], keep=False)
    client.endpoints.update({2: "tcp://127.0.0.1:2", 3: "tcp://127.0.0.1:3"})
    events: list[dict[str, Any]] = []
    observe: ILogObserver = events.append  # type: ignore[assignment]
    globalLogPublisher.addObserver(observe)
    try:
        for _ in range(3):
            client._last_leader = None  # each request starts at the configured node, a follower
            _submit(client)
    finally:
        globalLogPublisher.removeObserver(observe)
    redirects = [(e["log_level"], e["id"]) for e in events if "redirected" in e.get("log_format", "")]
    assert redirects == [(LogLevel.info, 2), (LogLevel.debug, 2), (LogLevel.info, 3)]
