"""The driver with a log store writer that takes time (the service's writer thread): messages wait for
the writes they depend on, in order; a leader's AppendEntries do not wait for its own write (Raft
dissertation §10.2.1), and its own log counts towards a commit only once that write ended."""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import RaftDriver
from garlicfarm.raft.writers import InlineWriter, ThreadWriter
from garlicfarm.storage.interface import StorageError
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.wire import (
    AppendEntriesRequest,
    AppendEntriesResponse,
    Application,
    ClusterServer,
    Configuration,
    LogEntry,
    Response,
)
from tests.raft.test_driver import OPTIONS, TICK, LocalTransport, leader_of, run


class ManualWriter:
    """Runs each job only when the test says so (or at once while ``auto``), in order."""

    def __init__(self) -> None:
        self.auto = True
        self.queue: list[tuple[Callable[[], None], Deferred[None]]] = []

    def write(self, job: Callable[[], None]) -> Deferred[None]:
        if self.auto and not self.queue:
            return InlineWriter().write(job)
        d: Deferred[None] = Deferred()
        self.queue.append((job, d))
        return d

    def finish(self, count: int | None = None) -> None:
        count = len(self.queue) if count is None else count
        for _ in range(count):
            job, d = self.queue.pop(0)
            try:
                job()
            except Exception:
                d.errback()
            else:
                d.callback(None)

    def stop(self) -> None:
        pass


class BreakableStore(MemoryLogStore):
    broken = False

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.broken:
            raise StorageError("disk full")
        super().save(*args, **kwargs)


Cluster = tuple[Clock, dict[int, RaftDriver], dict[int, ManualWriter], dict[int, BreakableStore]]


def cluster(n: int) -> Cluster:
    clock = Clock()
    ids = range(1, n + 1)
    bootstrap = Configuration(0, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:{9000 + i}") for i in ids))
    drivers: dict[int, RaftDriver] = {}
    writers = {i: ManualWriter() for i in ids}
    stores = {i: BreakableStore() for i in ids}
    for i in ids:
        core = RaftCore(i, stores[i].load(), random.Random(i), bootstrap, OPTIONS)
        transport = LocalTransport(clock, drivers, i)
        drivers[i] = RaftDriver(core, stores[i], clock, transport, TICK, group_commit=True, writer=writers[i])
    for d in drivers.values():
        d.start()
    return clock, drivers, writers, stores


def stored_last(store: BreakableStore) -> int:
    state = store.load()
    base = state.snapshot.last_index if state.snapshot else 0
    return base + len(state.entries)


def test_a_leader_replicates_while_its_own_write_is_pending() -> None:
    clock, drivers, writers, stores = cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    writers[leader.core.id].auto = False
    before = stored_last(stores[leader.core.id])
    done = leader.submit(b"x")
    run(clock, 0.05)
    # the followers have it and acknowledged: a majority without the leader's own disk
    assert done.called and isinstance(done.result, int)
    index = done.result
    assert stored_last(stores[leader.core.id]) == before  # its own write is still pending
    assert writers[leader.core.id].queue
    assert all(stored_last(stores[i]) >= index for i in drivers if i != leader.core.id)
    writers[leader.core.id].finish()
    assert stored_last(stores[leader.core.id]) >= index


def test_a_leader_counts_itself_only_once_written() -> None:
    clock, drivers, writers, _ = cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    follower = next(d for d in drivers.values() if d is not leader)
    follower.stop()  # one follower left: the commit needs the leader's own disk
    writers[leader.core.id].auto = False
    done = leader.submit(b"x")
    run(clock, 0.2)
    committed: list[int] = []
    done.addCallback(committed.append)
    assert not committed, "committed with one durable copy of three"
    writers[leader.core.id].finish()
    run(clock, 0.05)
    assert len(committed) == 1


def test_a_follower_answers_only_once_its_write_ended() -> None:
    clock, drivers, writers, stores = cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    follower = next(d for d in drivers.values() if d is not leader)
    writers[follower.core.id].auto = False
    last = follower.core.log.last_index
    append = AppendEntriesRequest(
        source=leader.core.id,
        destination=follower.core.id,
        term=leader.core.term,
        last_log_term=follower.core.log.last_term,
        last_log_index=last,
        commit_index=0,
        entries=(LogEntry(leader.core.term, Application(b"y")),),
    )
    answer = follower.handle_request(append)
    clock.advance(0)
    assert not answer.called  # the write of the entry has not ended
    assert follower.core.log.last_index == last + 1
    # a heartbeat behind it waits too: answers leave in the order they were made
    beat = follower.handle_request(
        AppendEntriesRequest(
            source=leader.core.id,
            destination=follower.core.id,
            term=leader.core.term,
            last_log_term=leader.core.term,
            last_log_index=last + 1,
            commit_index=0,
            entries=(),
        )
    )
    clock.advance(0)
    assert not beat.called
    order: list[str] = []

    def seen(response: Response, what: str) -> Response:
        order.append(what)
        return response

    answer.addCallback(seen, "append")
    beat.addCallback(seen, "beat")
    writers[follower.core.id].finish()
    assert order == ["append", "beat"]
    assert isinstance(answer.result, AppendEntriesResponse) and answer.result.accepted
    assert stored_last(stores[follower.core.id]) == last + 1


def test_a_failed_write_stops_the_node_and_nothing_it_held_leaves() -> None:
    clock, drivers, writers, stores = cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    follower = next(d for d in drivers.values() if d is not leader)
    writers[follower.core.id].auto = False

    stores[follower.core.id].broken = True
    done = leader.submit(b"x")
    run(clock, 0.05)
    writers[follower.core.id].finish()
    assert not follower.running
    assert follower.stopped_by is not None and follower.stopped_by.check(StorageError)
    run(clock, 0.2)
    assert done.called  # the leader and the third node commit it


def test_the_thread_writer_runs_jobs_in_order_and_stops_after_them() -> None:
    from twisted.internet import reactor as global_reactor

    assert ThreadWriter.usable(global_reactor)
    assert not ThreadWriter.usable(Clock())
    writer = ThreadWriter(global_reactor)
    seen: list[int] = []
    for i in range(50):
        writer.write(partial(seen.append, i))
    writer.stop()  # joins the thread after the queued jobs
    assert seen == list(range(50))
    refused: list[Failure] = []
    writer.write(lambda: None).addErrback(refused.append)
    assert refused and refused[0].check(RuntimeError)
