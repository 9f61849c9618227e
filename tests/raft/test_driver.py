"""The Twisted driver: Deferreds, ticks from a Clock, persistence before I/O."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, cast

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.logger import ILogObserver, formatEvent, globalLogPublisher
from twisted.python.failure import Failure

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import CommitTimeout, NodeStopped, NotLeader, RaftDriver
from garlicfarm.raft.types import RaftOptions
from garlicfarm.storage.interface import LogStore, StorageError
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire import Application, ClusterServer, Configuration, LogEntry, Request, Response

TICK = 0.01
OPTIONS = RaftOptions(election_ticks=10, heartbeat_ticks=2)


class LocalTransport:
    """Delivers requests to other drivers in the same process after one reactor turn."""

    def __init__(self, clock: Clock, cluster: dict[int, RaftDriver], me: int) -> None:
        self.clock = clock
        self.cluster = cluster
        self.me = me

    def send(self, to: int, message: Request, endpoint: str | None = None) -> Deferred[Response]:
        d: Deferred[Response] = Deferred()

        def deliver() -> None:
            peer = self.cluster.get(to)
            if peer is None or not peer.running:
                return  # lost: the sender's core recovers by retrying on its own schedule
            peer.handle_request(message).chainDeferred(d)

        self.clock.callLater(0.001, deliver)
        return d


def make_cluster(
    n: int, stores: dict[int, LogStore] | None = None
) -> tuple[Clock, dict[int, RaftDriver], dict[int, list[tuple[int, bytes]]]]:
    clock = Clock()
    bootstrap = Configuration(
        0, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:{9000 + i}") for i in range(1, n + 1))
    )
    drivers: dict[int, RaftDriver] = {}
    applied: dict[int, list[tuple[int, bytes]]] = {}
    for i in range(1, n + 1):
        store = stores[i] if stores else MemoryLogStore()
        core = RaftCore(i, store.load(), random.Random(i), bootstrap, OPTIONS)
        applied[i] = []

        def on_apply(index: int, entry: LogEntry, sink: list[tuple[int, bytes]] = applied[i]) -> None:
            if isinstance(entry.value, Application):
                sink.append((index, entry.value.data))

        drivers[i] = RaftDriver(
            core, store, clock, LocalTransport(clock, drivers, i), TICK, on_apply, group_commit=True
        )
    for d in drivers.values():
        d.start()
    return clock, drivers, applied


def run(clock: Clock, seconds: float) -> None:
    for _ in range(round(seconds / 0.001)):
        clock.advance(0.001)


def leader_of(drivers: dict[int, RaftDriver]) -> RaftDriver:
    leaders = [d for d in drivers.values() if d.running and d.core.is_leader()]
    assert len(leaders) == 1, [d.status()["role"] for d in drivers.values()]
    return leaders[0]


def error_of(d: Deferred[Any]) -> BaseException:
    failures: list[Failure] = []

    def collect(failure: Failure) -> None:
        failures.append(failure)

    d.addErrback(collect)
    assert failures, "deferred has not failed"
    error = failures[0].value
    assert error is not None
    return error


def result_of(d: Deferred[int]) -> int:
    out: list[int] = []
    d.addCallback(out.append)
    assert out, "deferred has not fired"
    return out[0]


def test_elects_and_commits_on_every_node() -> None:
    clock, drivers, applied = make_cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    d = leader.submit(b'{"n":1}')
    run(clock, 0.2)
    index = result_of(d)
    assert all((index, b'{"n":1}') in applied[i] for i in drivers)


def test_submit_to_follower_names_the_leader() -> None:
    clock, drivers, _ = make_cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    follower = next(d for d in drivers.values() if d is not leader)
    error = error_of(follower.submit(b"{}"))
    assert isinstance(error, NotLeader)
    assert error.leader_id == leader.core.id
    assert error.endpoint == f"tcp://127.0.0.1:{9000 + leader.core.id}"
    assert str(error).startswith(f"not the leader; the leader is server {leader.core.id} at tcp://")


def test_no_leader_known() -> None:
    _, drivers, _ = make_cluster(3)
    error = error_of(drivers[1].submit(b"{}"))
    assert isinstance(error, NotLeader)
    assert error.leader_id is None
    assert "no leader is known" in str(error)


def test_commit_timeout_when_the_majority_is_gone() -> None:
    clock, drivers, _ = make_cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    for other in drivers.values():
        if other is not leader:
            other.stop()
    d = leader.submit(b"{}")
    run(clock, leader.submit_timeout + 0.1)
    assert isinstance(error_of(d), CommitTimeout)


def test_failover_and_durable_restart(tmp_path: Path) -> None:
    stores: dict[int, LogStore] = {i: SQLiteLogStore(tmp_path / f"n{i}.db") for i in (1, 2, 3)}
    clock, drivers, applied = make_cluster(3, stores)
    run(clock, 1.0)
    first = leader_of(drivers)
    index = result_of(_submit_and_run(clock, first, b'{"a":1}'))
    first.stop()
    run(clock, 1.0)
    second = leader_of(drivers)
    assert second is not first
    index2 = result_of(_submit_and_run(clock, second, b'{"b":2}'))
    assert index2 > index
    # the old leader comes back from its SQLite file and catches up
    old_id = first.core.id
    stores[old_id].close()
    stores[old_id] = SQLiteLogStore(tmp_path / f"n{old_id}.db")
    bootstrap = second.core.config
    core = RaftCore(old_id, stores[old_id].load(), random.Random(99), bootstrap, OPTIONS)
    applied[old_id].clear()

    def on_apply(i: int, entry: LogEntry) -> None:
        if isinstance(entry.value, Application):
            applied[old_id].append((i, entry.value.data))

    drivers[old_id] = RaftDriver(
        core, stores[old_id], clock, LocalTransport(clock, drivers, old_id), TICK, on_apply
    )
    drivers[old_id].start()
    run(clock, 1.0)
    assert (index, b'{"a":1}') in applied[old_id]
    assert (index2, b'{"b":2}') in applied[old_id]


def _submit_and_run(clock: Clock, driver: RaftDriver, data: bytes) -> Deferred[int]:
    d = driver.submit(data)
    run(clock, 0.3)
    return d


class CountingStore:
    """A log store that counts the entries of every save (and delegates everything)."""

    def __init__(self, store: LogStore, saves: list[int]) -> None:
        self._store = store
        self._saves = saves

    def save(self, hard_state: Any, entries_from: Any, entries: Any, *, sync: bool = True) -> None:
        self._saves.append(len(entries))
        self._store.save(hard_state, entries_from, entries, sync=sync)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_group_commit_writes_one_batch_per_reactor_turn() -> None:
    """Requests arriving in one reactor turn share one store transaction and one AppendEntries."""
    clock, drivers, applied = make_cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    saves: list[int] = []
    sent: list[object] = []
    leader.store = CountingStore(leader.store, saves)  # type: ignore[assignment]
    send = leader.transport.send

    def counting_send(to: int, message: Any, endpoint: Any = None) -> Any:
        sent.append(message)
        return send(to, message, endpoint)

    leader.transport.send = counting_send  # type: ignore[method-assign]
    submitted = [leader.submit(b"[%d]" % i) for i in range(50)]
    assert saves == [] and sent == []  # nothing yet: the turn has not ended
    clock.advance(0)
    assert saves == [50]
    assert len(sent) == 2  # one AppendEntries to each follower, holding all fifty
    run(clock, 0.1)
    indexes = [result_of(d) for d in submitted]
    assert indexes == list(range(indexes[0], indexes[0] + 50))
    assert all(len([x for x in applied[i] if x[0] in indexes]) == 50 for i in drivers)


class FullDisk(MemoryLogStore):
    def save(self, *args: object, **kwargs: object) -> None:
        raise StorageError("database or disk is full")


def test_storage_failure_stops_the_node_and_fails_waiters() -> None:
    clock, drivers, _ = make_cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    leader.store = FullDisk()
    submitted = leader.submit(b"{}")
    clock.advance(0)  # group commit: the store is written at the end of the reactor turn
    error = error_of(submitted)
    assert not leader.running
    assert isinstance(error, NodeStopped)
    assert "disk is full" in str(error)
    run(clock, 1.5)
    assert leader_of(drivers) is not leader  # the others elect a new leader


def test_submit_after_stop() -> None:
    _, drivers, _ = make_cluster(1)
    drivers[1].stop()
    assert isinstance(error_of(drivers[1].submit(b"{}")), NodeStopped)


@pytest.mark.parametrize("n", [1, 5])
def test_cluster_sizes(n: int) -> None:
    clock, drivers, applied = make_cluster(n)
    run(clock, 1.5)
    leader = leader_of(drivers)
    index = result_of(_submit_and_run(clock, leader, b"[1]"))
    assert all((index, b"[1]") in applied[i] for i in drivers)


def test_a_backlog_is_applied_across_reactor_turns() -> None:
    """Thousands of committed entries are applied a Ready at a time, yielding between Readies, so
    ticks (heartbeats) are never held back for long."""
    clock, drivers, applied = make_cluster(1)
    run(clock, 0.5)
    leader = leader_of(drivers)
    limit = leader.core.options.max_apply_per_ready
    submitted = [leader.submit(b"[%d]" % i) for i in range(3 * limit)]
    drain = leader._drain
    assert drain is not None and drain.active()
    drain.cancel()
    leader._process()  # one reactor turn: persist and commit (a single node) two Readies' worth
    assert leader._drain is not None and leader._drain.active()  # the rest in a later turn
    assert applied[1] == []  # applied two turns later, once this turn's messages left
    leader._apply_queued()
    assert 0 < len(applied[1]) <= 2 * limit  # at most two Readies' worth at a time
    clock.advance(0)  # (a Clock runs the later turns at once; the reactor runs ticks and I/O between)
    assert len(applied[1]) >= 3 * limit
    assert all(result_of(d) > 0 for d in submitted)


def test_answers_leave_before_the_entries_are_applied() -> None:
    """A commit's answers (a follower's acknowledgement, a leader's to its clients) are written in the
    turn the commit is known; the state machine applies the entries two turns later, once the
    socket sent them, so that its work does not delay the next commit on any node."""
    clock, drivers, applied = make_cluster(1)
    run(clock, 0.5)
    leader = leader_of(drivers)
    answered: list[int] = []
    leader.submit(b"[7]").addCallback(answered.append)
    drain = leader._drain
    assert drain is not None
    drain.cancel()
    leader._process()
    assert answered and applied[1] == []
    now = [call for call in clock.getDelayedCalls() if call.getTime() == clock.seconds()]
    assert [getattr(call, "func", None) for call in now] == [leader._apply_next_turn]  # a turn, then another
    clock.advance(0)
    assert applied[1] == [(answered[0], b"[7]")]


def test_role_term_and_leader_changes_are_logged_once_each_and_announced() -> None:
    """Regression (issue 16): elections, leader changes and step-downs left no line in the log."""
    events: list[dict[str, Any]] = []
    observer = cast(ILogObserver, events.append)
    globalLogPublisher.addObserver(observer)
    try:
        clock, drivers, _ = make_cluster(3)
        leaders: dict[int, list[int | None]] = {i: [] for i in drivers}
        for i, d in drivers.items():
            d.on_leader_change.append(leaders[i].append)
        run(clock, 2.0)
        leader = leader_of(drivers)
    finally:
        globalLogPublisher.removeObserver(observer)
    lines = [formatEvent(e) for e in events if e.get("log_namespace", "").endswith("RaftDriver")]
    assert any(line.startswith("leader in term") for line in lines), lines
    assert sum(line.startswith(f"server {leader.core.id} leads term") for line in lines) == 2
    for i, seen in leaders.items():
        assert seen and seen[-1] == leader.core.id, (i, seen)
