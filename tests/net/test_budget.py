"""The budget building blocks: rate-limited log lines, the shared buffer budget, closing under TLS."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from twisted.internet.address import IPv4Address
from twisted.internet.ssl import CertificateOptions
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.logger import LogEvent, Logger, LogLevel, capturedLogs, formatEvent
from twisted.protocols.tls import TLSMemoryBIOFactory

from garlicfarm.handshake import NonceRegistry, ServerConfig
from garlicfarm.net.budget import BufferBudget, CloseAtOnce, RateLimitedLog
from garlicfarm.net.connection import ConnectionLimits, ServerConnection
from garlicfarm.net.inbound import InboundFactory

ADDRESS = IPv4Address("TCP", "192.0.2.7", 40000)


@pytest.fixture
def logs() -> Iterator[Sequence[LogEvent]]:
    with capturedLogs() as events:
        yield events


def texts(events: Sequence[LogEvent]) -> list[str]:
    return [formatEvent(e) or "" for e in events]


def test_the_first_event_is_logged_at_once_then_one_summary_per_interval(logs: Sequence[LogEvent]) -> None:
    clock = Clock()
    limited = RateLimitedLog(clock, Logger(), interval=10)
    for i in range(5):
        limited.event("k", "refused {n}", n=i)
    assert texts(logs) == ["refused 0"]
    clock.advance(10)
    assert texts(logs)[1] == "4 more in the last 10 s, the latest: refused 4"
    limited.event("k", "refused {n}", n=5)  # still counting: a summary opened a new interval
    clock.advance(10)
    assert texts(logs)[2] == "1 more in the last 10 s, the latest: refused 5"
    clock.advance(10)  # a quiet interval: the key starts over
    assert limited.open_windows == 0
    limited.event("k", "refused {n}", n=6)
    assert texts(logs)[3] == "refused 6"
    assert limited.lines == 4


def test_keys_are_counted_apart_and_keep_their_level(logs: Sequence[LogEvent]) -> None:
    clock = Clock()
    limited = RateLimitedLog(clock, Logger(), interval=10)
    limited.event("a", "a", LogLevel.info)
    limited.event("b", "b")
    limited.event("a", "a", LogLevel.info)
    clock.advance(10)
    assert [(formatEvent(e), e["log_level"]) for e in logs] == [
        ("a", LogLevel.info),
        ("b", LogLevel.warn),
        ("1 more in the last 10 s, the latest: a", LogLevel.info),
    ]


def test_the_buffer_budget_refuses_growth_past_its_limit() -> None:
    budget = BufferBudget(100)
    first, second = object(), object()
    assert budget.update(first, 60)
    assert not budget.update(second, 50)  # refused, nothing recorded
    assert budget.held(second) == 0 and budget.total == 60
    assert budget.update(second, 40)
    assert budget.update(first, 10)  # shrinking is always allowed
    assert budget.total == 50
    budget.release(second)
    assert budget.total == 10
    assert budget.update(first, 0) and budget.total == 0


def test_the_buffer_budget_at_its_limit_and_one_past_it() -> None:
    budget = BufferBudget(100)
    holder = object()
    assert budget.update(holder, 100)  # exactly the limit: taken
    assert budget.held(holder) == 100
    assert not budget.update(holder, 101)  # one past it: refused, nothing recorded
    assert budget.held(holder) == 100 and budget.total == 100


def test_a_report_that_does_not_grow_is_never_refused() -> None:
    """Even over the limit (lowered while connections held more): dropping a connection that holds
    steady would not bring the total back under it any sooner than its next message does."""
    budget = BufferBudget(100)
    holder = object()
    assert budget.update(holder, 80)
    budget.limit = 50
    assert budget.update(holder, 80)
    assert budget.update(holder, 60) and budget.total == 60


def test_a_holder_that_reports_nothing_held_is_forgotten() -> None:
    budget = BufferBudget(100)
    first, second = object(), object()
    assert budget.update(first, 30) and budget.update(second, 20)
    assert budget.held(first) == 30 and budget.held(second) == 20
    assert budget.update(first, 0)
    assert budget.held(first) == 0 and budget.total == 20
    budget.release(first)  # released again when its connection ends: nothing counted twice
    assert budget.total == 20


class _NoAbort:
    """A transport without abortConnection (not every transport has one)."""

    disconnecting = False

    def loseConnection(self) -> None:
        self.disconnecting = True


def test_close_at_once_loses_a_transport_that_cannot_abort() -> None:
    transport = _NoAbort()
    protocol = CloseAtOnce()
    protocol.transport = transport  # type: ignore[assignment]
    protocol.connectionMade()
    assert transport.disconnecting


def test_inbound_connections_offer_http_1_1_by_alpn() -> None:
    """The handshake is an HTTP/1.1 upgrade: the ALPN identifier is IANA's ``http/1.1``, exactly
    (identifiers are compared byte for byte, RFC 7301 §3.1)."""
    assert InboundFactory.acceptableProtocols(None) == [b"http/1.1"]  # type: ignore[arg-type]


def test_close_at_once_aborts_its_transport() -> None:
    transport = StringTransport()
    CloseAtOnce().makeConnection(transport)
    assert transport.disconnected


def test_evicted_connections_are_closed_under_tls() -> None:
    """Under Twisted's TLS wrapper (where returning None from buildProtocol raised AttributeError and
    left the socket open) a connection pushed out of the budget is closed at once, without an error."""
    clock = MemoryReactorClock()
    limits = ConnectionLimits()

    def make(admission: InboundFactory) -> ServerConnection:
        config = ServerConfig(credentials={"farm": "secret"}, cluster="farm")
        nonces = NonceRegistry(lambda n: b"\x01" * n)
        return ServerConnection(clock, config, nonces, lambda _r: None, limits, admission=admission)  # type: ignore[arg-type,return-value]

    inbound = InboundFactory(make, 4, clock, max_unauthenticated=2)
    tls = TLSMemoryBIOFactory(CertificateOptions(), False, inbound)
    transports = []
    for _ in range(5):
        protocol = tls.buildProtocol(ADDRESS)
        transport = StringTransport(peerAddress=ADDRESS)
        protocol.makeConnection(transport)
        transports.append(transport)
    assert [t.disconnected for t in transports] == [True, True, True, False, False]
    assert len(inbound.pending) == 2
