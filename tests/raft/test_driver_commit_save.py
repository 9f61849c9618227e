"""The commit index alone is not a write of its own: it waits for the next save, a tick at most, and
a node stopped in order saves it. And the writer thread gets its jobs only once the messages of the
reactor turn that gave them left (two turns on)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from garlicfarm.raft.driver import RaftDriver
from garlicfarm.raft.writers import ThreadWriter
from garlicfarm.storage.interface import StorageError
from tests.raft.test_driver import TICK, leader_of, run
from tests.raft.test_driver_writer import BreakableStore, cluster


def committed(clock: Clock, d: Deferred[int]) -> int:
    """Advance a millisecond at a time until ``d`` (a submit) fired; its index."""
    for _ in range(20):
        if d.called:
            break
        clock.advance(0.001)
    assert d.called and isinstance(d.result, int)
    return d.result


def quiet_leader() -> tuple[Clock, RaftDriver, BreakableStore]:
    clock, drivers, _, stores = cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    return clock, leader, stores[leader.core.id]


def test_a_commit_index_alone_is_saved_a_tick_later() -> None:
    clock, leader, store = quiet_leader()
    index = committed(clock, leader.submit(b"x"))
    assert leader.core.commit == index
    assert store.hard_state.commit < index  # not a write of its own
    clock.advance(TICK)
    assert store.hard_state.commit == index
    assert store.hard_state.term == leader.core.term


def test_a_kept_commit_index_rides_along_with_the_next_save() -> None:
    clock, leader, store = quiet_leader()
    index = committed(clock, leader.submit(b"x"))
    assert store.hard_state.commit < index
    leader.submit(b"y")
    clock.advance(0)  # the end of the turn: the leader's save of "y", before "y" is replicated
    assert store.hard_state.commit == index
    assert store.last_index == index + 1


def test_a_node_stopped_in_order_saves_the_commit_index_it_knew() -> None:
    clock, leader, store = quiet_leader()
    index = committed(clock, leader.submit(b"x"))
    leader.stop()
    assert store.hard_state.commit == index
    clock.advance(TICK)  # and the timer is gone
    assert store.hard_state.commit == index


def test_a_node_stopped_by_a_failure_writes_nothing_more() -> None:
    clock, leader, store = quiet_leader()
    index = committed(clock, leader.submit(b"x"))
    before = store.hard_state
    leader.stop(Failure(RuntimeError("a bug")))
    clock.advance(TICK)
    assert store.hard_state == before and before.commit < index


class TurnReactor:
    """Enough of a reactor for ThreadWriter: turns from a Clock, results from the thread queued."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.from_threads: list[tuple[Callable[..., object], tuple[Any, ...]]] = []

    def callLater(self, delay: float, f: Callable[..., object], *args: Any) -> object:
        return self.clock.callLater(delay, f, *args)

    def callFromThread(self, f: Callable[..., object], *args: Any) -> None:
        self.from_threads.append((f, args))

    def addSystemEventTrigger(self, *args: Any) -> None:
        pass


def test_the_thread_gets_a_turns_jobs_when_the_turn_ended_in_order() -> None:
    reactor = TurnReactor()
    writer = ThreadWriter(reactor)
    ran: list[str] = []
    fired: list[str] = []
    for name in ("a", "b", "c"):
        writer.write(partial(ran.append, name)).addCallback(lambda _, n: fired.append(n), name)
    assert ran == []  # still this turn: the reactor's messages leave first
    reactor.clock.advance(0)
    assert ran == []  # TLS encrypts them at the start of the next turn; its I/O sends them
    reactor.clock.advance(0)
    writer.stop()  # joins the thread once it ran what it was given
    assert ran == ["a", "b", "c"]
    assert fired == []  # results come back through the reactor
    for f, args in reactor.from_threads:
        f(*args)
    assert fired == ["a", "b", "c"]


def test_a_stopped_thread_writer_still_runs_the_jobs_of_the_turn() -> None:
    reactor = TurnReactor()
    writer = ThreadWriter(reactor)
    ran: list[int] = []
    writer.write(lambda: ran.append(1))
    writer.stop()
    assert ran == [1]
    reactor.clock.advance(0)
    reactor.clock.advance(0)  # the hand-over finds nothing left
    assert ran == [1]


class SpyStore(BreakableStore):
    """Records each save: its commit index, whether it held entries, and whether it was synced."""

    def __init__(self) -> None:
        super().__init__()
        self.saves: list[tuple[int | None, bool, bool | None]] = []

    def save(self, *args: Any, **kwargs: Any) -> None:
        hard = args[0] if args else kwargs.get("hard_state")
        entries_from = args[1] if len(args) > 1 else kwargs.get("entries_from")
        self.saves.append(
            (None if hard is None else hard.commit, entries_from is not None, kwargs.get("sync"))
        )
        super().save(*args, **kwargs)


def spied_leader() -> tuple[Clock, RaftDriver, SpyStore]:
    clock, drivers, _, stores = cluster(3, SpyStore)
    run(clock, 1.0)
    leader = leader_of(drivers)
    store = stores[leader.core.id]
    assert isinstance(store, SpyStore)
    store.saves.clear()
    return clock, leader, store


def test_a_kept_commit_index_is_saved_once_without_an_fsync() -> None:
    clock, leader, store = spied_leader()
    index = committed(clock, leader.submit(b"x"))
    clock.advance(TICK)
    assert store.saves[-1] == (index, False, False)  # the commit index alone, not synced
    assert [s for s in store.saves if not s[1]] == [(index, False, False)]


def test_the_timer_saves_nothing_when_the_next_save_carried_it() -> None:
    clock, leader, store = spied_leader()
    index = committed(clock, leader.submit(b"x"))
    leader.submit(b"y")
    clock.advance(0)
    assert store.saves[-1] == (index, True, True)  # carried by the save of "y"
    count = len(store.saves)
    leader._save_commit()  # the timer, before "y" commits: nothing kept, so no empty transaction
    assert len(store.saves) == count


def test_a_kept_commit_index_that_cannot_be_saved_stops_the_node_and_says_why() -> None:
    clock, leader, store = quiet_leader()
    committed(clock, leader.submit(b"x"))
    store.broken = True
    clock.advance(TICK)  # the timer's save fails: no exception into the reactor
    assert not leader.running
    assert leader.stopped_by is not None and leader.stopped_by.check(StorageError)


def test_a_writer_whose_thread_cannot_start_fails_the_write(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    writer = ThreadWriter(TurnReactor())
    failures: list[Failure] = []
    writer.write(lambda: None).addErrback(failures.append)  # no exception into the driver
    assert failures and failures[0].check(RuntimeError)


def test_a_failed_job_fails_its_own_deferred_and_the_later_ones_still_run() -> None:
    reactor = TurnReactor()
    writer = ThreadWriter(reactor)
    ran: list[str] = []
    outcomes: list[object] = []

    def broken() -> None:
        raise OSError("disk full")

    for job in (partial(ran.append, "a"), broken, partial(ran.append, "c")):
        writer.write(job).addBoth(outcomes.append)
    reactor.clock.advance(0)
    reactor.clock.advance(0)
    writer.stop()
    assert ran == ["a", "c"]
    for f, args in reactor.from_threads:
        f(*args)
    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], Failure) and outcomes[1].check(OSError)
