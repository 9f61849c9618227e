"""Driver details mutation testing found unchecked: failed sends, the refusal log's rate limit, the
order of apply callbacks, pre-vote support reaching the core, and a stopped node's pending requests."""

from __future__ import annotations

import gc
import random
from typing import Any

import pytest
from twisted.internet.defer import CancelledError, Deferred, fail
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.task import Clock
from twisted.logger import LogLevel

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import NodeStopped, RaftDriver
from garlicfarm.raft.types import RaftOptions
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.wire import (
    Application,
    ClientRequest,
    ClusterServer,
    Configuration,
    LogEntry,
    Request,
    Response,
)
from tests.raft.farm import Farm, Machine, outcome
from tests.raft.test_driver_says import driver_lines

OPTIONS = RaftOptions(election_ticks=10, heartbeat_ticks=2)
THREE = Configuration(0, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:{9000 + i}") for i in (1, 2, 3)))
ONE = Configuration(0, 0, (ClusterServer(1, "tcp://127.0.0.1:9001"),))


class FailingTransport:
    """Every send fails at once: refused connections, or cancelled (a link closing on purpose)."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.sent: list[tuple[int, Request]] = []

    def send(self, to: int, message: Request, endpoint: str | None = None) -> Deferred[Response]:
        self.sent.append((to, message))
        return fail(self.error)


def driver_with(transport: Any, config: Configuration = THREE, **kwargs: Any) -> tuple[Clock, RaftDriver]:
    clock = Clock()
    store = MemoryLogStore()
    core = RaftCore(1, store.load(), random.Random(1), config, OPTIONS)
    driver = RaftDriver(core, store, clock, transport, 0.01, **kwargs)
    driver.start()
    return clock, driver


@pytest.mark.parametrize(
    ("error", "logged"),
    [(ConnectionRefusedError(), True), (CancelledError(), False)],
    ids=["refused", "cancelled"],
)
def test_failed_sends_are_handled_and_named_at_debug_level(error: Exception, logged: bool) -> None:
    transport = FailingTransport(error)
    with driver_lines() as lines:
        clock, driver = driver_with(transport)
        for _ in range(50):
            clock.advance(0.01)  # it campaigns, every vote request fails
        gc.collect()  # an unhandled failure would be reported as the Deferred is collected
    assert driver.running and transport.sent
    debug = [
        text for level, text in lines if level is LogLevel.debug and text.startswith("request to server")
    ]
    assert bool(debug) is logged
    if logged:
        assert any(
            text.startswith(("request to server 2 failed: ", "request to server 3 failed: "))
            for text in debug
        )
    assert not [text for level, text in lines if level in (LogLevel.error, LogLevel.critical)]


class Picky(Machine):
    def check(self, entry: LogEntry) -> str | None:
        return "not for this farm"


def test_refused_client_requests_are_logged_once_per_10_seconds_with_a_count() -> None:
    with driver_lines() as lines:
        clock, driver = driver_with(FailingTransport(ConnectionRefusedError()), ONE, state_machine=Picky())
        for _ in range(50):
            clock.advance(0.01)
        assert driver.core.is_leader()
        request = ClientRequest(entries=(LogEntry(0, Application(b"x")),))
        answers = [outcome(driver.handle_request(request)) for _ in range(5)]
        clock.advance(10.0)
        answers.append(outcome(driver.handle_request(request)))
    assert all(not a.accepted and a.destination == 1 for a in answers)  # refused, by the leader itself
    warned = [text for level, text in lines if level is LogLevel.warn]
    assert warned == [
        "refused a client request (1 since the last line): entry 1 of 1: not for this farm",
        "refused a client request (5 since the last line): entry 1 of 1: not for this farm",
    ]


def test_the_state_machine_applies_before_any_other_callback() -> None:
    machine = Machine()
    seen: list[tuple[int, int]] = []

    def after(index: int, entry: LogEntry) -> None:
        seen.append((index, len(machine.values)))

    clock, driver = driver_with(
        FailingTransport(CancelledError()), ONE, on_apply=after, state_machine=machine
    )
    later: list[int] = []
    driver.add_apply_callback(lambda index, entry: later.append(index))
    for _ in range(50):
        clock.advance(0.01)
    d = driver.submit(b"x")
    clock.advance(0.01)
    index = outcome(d)
    assert (index, 1) in seen  # the machine already holds the value when the callback runs
    assert index in later


def test_pre_vote_support_reaches_the_core() -> None:
    _clock, driver = driver_with(FailingTransport(CancelledError()))
    driver.set_pre_vote_support(2, False)
    driver.set_pre_vote_support(3, True)
    assert driver.core._pre_vote_support == {2: False, 3: True}


def test_stopping_fails_what_is_pending_and_later_requests() -> None:
    transport = FailingTransport(CancelledError())
    clock, driver = driver_with(transport, ONE, state_machine=Machine(), group_commit=True)
    for _ in range(50):
        clock.advance(0.01)
    assert driver.core.is_leader()
    request = ClientRequest(entries=(LogEntry(0, Application(b"x")),))
    waiting: list[Deferred[Any]] = [driver.submit(b"x"), driver.handle_request(request)]  # end of turn
    driver.stop()
    clock.advance(1.0)
    for d in [*waiting, driver.submit(b"y"), driver.handle_request(request)]:
        with pytest.raises(NodeStopped):
            outcome(d)
    assert not driver.running and driver.status()["role"] == "leader"  # a clean stop is not a failure


def test_a_link_up_sends_the_peer_what_it_lacks_in_the_same_turn_and_nothing_once_stopped() -> None:
    farm = Farm(3)
    leader = farm.wait_for_leader()
    other = next(i for i in farm.drivers if i != leader.core.id)
    farm.cut.add((leader.core.id, other))
    leader.submit(b"x")
    farm.run(0.1)  # heartbeats into the void: the peer is probed, its probe unanswered
    farm.cut.clear()
    sent: list[tuple[int, Any]] = []
    send = leader.transport.send

    def recording(to: int, message: Any, endpoint: str | None = None) -> Deferred[Any]:
        sent.append((to, message))
        return send(to, message, endpoint)

    leader.transport.send = recording  # type: ignore[method-assign]
    farm.clock.rightNow += 0.001  # the reactor looks at its clock before the core hears of the link
    leader.link_up(other)
    assert leader.last_tick == farm.clock.seconds()
    farm.clock.advance(0)  # the turn's drain
    assert [(to, [e.value for e in m.entries]) for to, m in sent] == [(other, [Application(b"x")])]
    farm.run(0.005)
    assert farm.machines[other].values == [b"x"]
    leader.stop()
    before = repr(leader.core.progress)
    leader.link_up(other)
    farm.clock.advance(0)
    assert len(sent) == 1 and repr(leader.core.progress) == before
