"""A peer link's flow control: a peer that stops reading costs a bounded amount (ClientConnection)."""

from __future__ import annotations

from typing import Any

import attrs
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from garlicfarm.net.connection import Backpressure
from garlicfarm.wire import AppendEntriesRequest, Application, LogEntry, encode
from tests.net.test_connection import LIMITS, Handler, Link, answer, connected

CAP = 100_000


def request(size: int) -> AppendEntriesRequest:
    return AppendEntriesRequest(1, 2, 5, 0, 0, 0, (LogEntry(5, Application(b"x" * size)),))


def flow_link(clock: Clock, handler: Handler) -> Link:
    link = connected(clock, handler)
    link.client.flow_control = True
    link.client.limits = attrs.evolve(LIMITS, max_unanswered_bytes=CAP)
    return link


def test_unanswered_bytes_are_capped_and_come_back() -> None:
    handler = Handler()
    handler.auto = False  # the peer reads but does not answer (stopped state machine, or slow)
    link = flow_link(Clock(), handler)
    sent: list[Any] = []
    refused: list[Failure] = []
    for _ in range(10):
        d = link.client.request(request(30_000))
        d.addCallbacks(sent.append, refused.append)
    link.pump.flush()
    size = len(encode(request(30_000)))
    assert len(handler.waiting) == CAP // size == 3 and link.client.unanswered_bytes == 3 * size
    assert len(refused) == 7 and all(f.check(Backpressure) for f in refused)
    assert "bytes await answers" in refused[0].getErrorMessage()
    for req, d in handler.waiting:
        d.callback(answer(req))
    link.pump.flush()
    assert len(sent) == 3 and link.client.unanswered_bytes == 0
    ok: list[Any] = []
    link.client.request(request(30_000)).addCallback(ok.append)  # room again
    link.pump.flush()
    assert len(handler.waiting) == 4


def test_one_message_always_goes_however_large() -> None:
    handler = Handler()
    handler.auto = False
    link = flow_link(Clock(), handler)
    refused: list[Failure] = []
    link.client.request(request(3 * CAP)).addErrback(refused.append)  # alone: it goes
    link.client.request(request(10)).addErrback(refused.append)  # behind it: refused
    link.pump.flush()
    assert len(handler.waiting) == 1 and len(refused) == 1


def test_without_flow_control_nothing_is_refused() -> None:
    handler = Handler()
    handler.auto = False
    link = connected(Clock(), handler)  # a client library link: no cap
    link.client.limits = attrs.evolve(LIMITS, max_unanswered_bytes=CAP)
    for _ in range(6):  # (the server's max_pipelined is 8 here)
        link.client.request(request(30_000))
    link.pump.flush()
    assert len(handler.waiting) == 6


def test_a_lost_connection_gives_the_bytes_back() -> None:
    handler = Handler()
    handler.auto = False
    link = flow_link(Clock(), handler)
    failed: list[Failure] = []
    link.client.request(request(30_000)).addErrback(failed.append)
    link.pump.flush()
    assert link.client.unanswered_bytes > 0
    link.client_transport.loseConnection()
    link.pump.flush()
    assert link.client.unanswered_bytes == 0 and failed


def test_the_cap_at_exactly_its_bytes_and_one_past_it() -> None:
    handler = Handler()
    handler.auto = False
    link = flow_link(Clock(), handler)
    size = len(encode(request(1_000)))
    link.client.limits = attrs.evolve(LIMITS, max_unanswered_bytes=2 * size)
    refused: list[Failure] = []
    link.client.request(request(1_000)).addErrback(refused.append)
    link.client.request(request(1_000)).addErrback(refused.append)  # exactly at the cap: taken
    link.pump.flush()
    assert refused == [] and link.client.unanswered_bytes == 2 * size
    link.client.request(request(0)).addErrback(refused.append)  # any byte past it: refused
    assert len(refused) == 1 and refused[0].check(Backpressure)
