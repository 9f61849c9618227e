"""The driver with a log store writer that takes time (the service's writer thread): messages wait for
the writes they depend on, in order; a leader's AppendEntries do not wait for its own write (Raft
dissertation §10.2.1), and its own log counts towards a commit only once that write ended."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from functools import partial
from queue import SimpleQueue
from typing import Any, cast

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.logger import ILogObserver, globalLogPublisher
from twisted.python.failure import Failure

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import RaftDriver
from garlicfarm.raft.types import InstalledSnapshot, Ready
from garlicfarm.raft.writers import InlineWriter, ThreadWriter
from garlicfarm.storage.interface import HardState, SnapshotMeta, StorageError
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.snapshots import MemorySnapshotStore
from garlicfarm.wire import (
    AppendEntriesRequest,
    AppendEntriesResponse,
    ClusterServer,
    Configuration,
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


def cluster(n: int, store_class: type[BreakableStore] = BreakableStore) -> Cluster:
    clock = Clock()
    ids = range(1, n + 1)
    bootstrap = Configuration(0, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:{9000 + i}") for i in ids))
    drivers: dict[int, RaftDriver] = {}
    writers = {i: ManualWriter() for i in ids}
    stores = {i: store_class() for i in ids}
    for i in ids:
        core = RaftCore(i, stores[i].load(), random.Random(i), bootstrap, OPTIONS)
        transport = LocalTransport(clock, drivers, i)
        drivers[i] = RaftDriver(core, stores[i], clock, transport, TICK, group_commit=True, writer=writers[i])
    for d in drivers.values():
        d.start()
    return clock, drivers, writers, stores


def single(store: MemoryLogStore, snapshots: MemorySnapshotStore) -> tuple[RaftDriver, Configuration]:
    """A driver of server 1 of three whose peers never answer: for what it does on its own."""
    bootstrap = Configuration(0, 0, (ClusterServer(1, "a"), ClusterServer(2, "b"), ClusterServer(3, "c")))
    core = RaftCore(1, store.load(), random.Random(1), bootstrap, OPTIONS)
    clock = Clock()
    driver = RaftDriver(core, store, clock, LocalTransport(clock, {}, 1), TICK, snapshots=snapshots)
    driver.start()
    return driver, bootstrap


def stop_reasons(action: Callable[[], object]) -> list[str]:
    """Run ``action``; the reasons the driver logged for stopping (their ``what``)."""
    events: list[dict[str, Any]] = []
    observe = cast(ILogObserver, events.append)
    globalLogPublisher.addObserver(observe)
    try:
        action()
    finally:
        globalLogPublisher.removeObserver(observe)
    return [e["what"] for e in events if "what" in e]


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
    clock.advance(0)  # at once: no tick or message needed once the write ended
    assert len(committed) == 1


def test_answers_wait_in_order_for_the_writes_pending_before_them() -> None:
    """A leader with its own entries still being written steps down: its answers as a follower
    (which acknowledge its log) wait for those writes, and leave in the order they were made."""
    clock, drivers, writers, stores = cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    me, term = leader.core.id, leader.core.term
    other = next(i for i in drivers if i != me)
    writers[me].auto = False
    leader.submit(b"x").addErrback(lambda _: None)
    clock.advance(0)
    assert writers[me].queue  # its own entry, being written
    last = leader.core.log.last_index

    def append(prev: int, prev_term: int) -> AppendEntriesRequest:
        return AppendEntriesRequest(
            source=other,
            destination=me,
            term=term + 1,
            last_log_term=prev_term,
            last_log_index=prev,
            commit_index=0,
            entries=(),
        )

    first = leader.handle_request(append(last, term))  # a newer leader: it steps down
    second = leader.handle_request(append(last, term))
    clock.advance(0)
    assert not leader.core.is_leader()
    assert not first.called and not second.called
    order: list[str] = []

    def seen(response: Response, what: str) -> Response:
        order.append(what)
        return response

    first.addCallback(seen, "first")
    second.addCallback(seen, "second")
    writers[me].finish(1)  # only its own entry: the new term's write is still pending
    assert order == []
    writers[me].finish()
    assert order == ["first", "second"]
    assert isinstance(first.result, AppendEntriesResponse) and first.result.accepted
    assert stores[me].load().hard_state.term == term + 1
    assert stored_last(stores[me]) == last


def test_a_follower_with_nothing_pending_writes_at_once() -> None:
    """Handing a write to a thread and back costs more than it saves when the answer waits for it."""
    clock, drivers, writers, _ = cluster(3)
    run(clock, 1.0)
    leader = leader_of(drivers)
    for i in drivers:
        writers[i].auto = False
    leader.submit(b"x")
    run(clock, 0.05)
    followers = [i for i in drivers if i != leader.core.id]
    assert all(not writers[i].queue for i in followers)
    assert writers[leader.core.id].queue


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


class FailingCompaction(BreakableStore):
    saves_after_failure = 0
    failed = False

    def compact(self, snapshot: SnapshotMeta) -> None:
        self.failed = True
        raise StorageError("disk full")

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.failed:
            self.saves_after_failure += 1
        super().save(*args, **kwargs)


def test_nothing_reaches_the_disk_after_a_failed_write() -> None:
    """A snapshot from the leader whose compaction fails: the hard state that names the snapshot's
    commit index must not be saved over the log the compaction did not replace (the simulator found
    it: a restart then applied a stale entry as committed)."""
    store = FailingCompaction()
    driver, bootstrap = single(store, MemorySnapshotStore())
    meta = SnapshotMeta(5, 1, bootstrap)
    driver._handle(Ready(snapshot=InstalledSnapshot(meta, b"state"), hard_state=HardState(1, None, 5)))
    assert not driver.running
    assert store.failed and store.saves_after_failure == 0


class RecordingStore(BreakableStore):
    def __init__(self) -> None:
        super().__init__()
        self.saves: list[tuple[bool, bool]] = []  # (holds entries, sync)

    def save(self, *args: Any, sync: bool = True, **kwargs: Any) -> None:
        entries_from = args[1] if len(args) > 1 else kwargs.get("entries_from")
        self.saves.append((entries_from is not None, sync))
        super().save(*args, sync=sync, **kwargs)


def test_entries_are_synced_and_the_commit_index_alone_is_not() -> None:
    clock, drivers, _, stores = cluster(3, RecordingStore)  # every write inline
    run(clock, 1.0)
    leader = leader_of(drivers)
    leader.submit(b"x")
    run(clock, 0.2)
    store = stores[leader.core.id]
    assert isinstance(store, RecordingStore)
    saves = store.saves
    assert all(sync is True for entries, sync in saves if entries)
    assert (False, False) in saves  # the commit index, saved without an fsync


def test_an_installed_snapshot_is_what_the_state_machine_holds() -> None:
    store = BreakableStore()
    driver, bootstrap = single(store, MemorySnapshotStore())
    driver._handle(Ready(snapshot=InstalledSnapshot(SnapshotMeta(5, 1, bootstrap), b"state")))
    assert driver.running
    assert driver._machine_index == 5
    assert store.load().snapshot == SnapshotMeta(5, 1, bootstrap)


class BrokenPrune(MemorySnapshotStore):
    def prune(self, keep: SnapshotMeta | None) -> None:
        raise OSError("read-only file system")


def test_a_failure_after_a_write_stops_the_node() -> None:
    """The previous snapshot file cannot be removed once the compaction ended: the node stops and says
    why (an exception there must not escape into the reactor)."""
    driver, bootstrap = single(BreakableStore(), BrokenPrune())
    installed = Ready(snapshot=InstalledSnapshot(SnapshotMeta(5, 1, bootstrap), b"state"))
    why = stop_reasons(lambda: driver._handle(installed))
    assert not driver.running
    assert driver.stopped_by is not None and driver.stopped_by.check(OSError)
    assert "the driver failed after a write to the log store" in why


class BrokenSnapshotFile(MemorySnapshotStore):
    def save(self, meta: SnapshotMeta, data: bytes) -> None:
        raise StorageError("cannot write snapshot: no space left on device")


class RefusingStore(BreakableStore):
    def save(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug in the store")


def _drain_with(driver: RaftDriver, ready: Ready) -> list[str]:
    """Drain ``ready`` through the driver's loop; what it logged as the reason it stopped."""
    queue = [ready]
    driver.core.has_ready = lambda: bool(queue)  # type: ignore[method-assign]
    driver.core.ready = queue.pop  # type: ignore[method-assign]
    return stop_reasons(driver._process)


def test_a_snapshot_file_that_cannot_be_written_stops_the_node() -> None:
    driver, bootstrap = single(BreakableStore(), BrokenSnapshotFile())
    why = _drain_with(driver, Ready(snapshot=InstalledSnapshot(SnapshotMeta(5, 1, bootstrap), b"state")))
    assert not driver.running
    assert driver.stopped_by is not None and driver.stopped_by.check(StorageError)
    assert why == ["storage failed, so that it cannot act on lost state"]


def test_a_write_that_fails_without_a_storage_error_stops_the_node_too() -> None:
    driver, _ = single(RefusingStore(), MemorySnapshotStore())
    why = _drain_with(driver, Ready(hard_state=HardState(2, 1, 0)))
    assert not driver.running
    assert driver.stopped_by is not None and driver.stopped_by.check(RuntimeError)
    assert why == ["a write to the log store failed, so that it cannot act on lost state"]


def test_a_failing_core_stops_the_node_and_says_so() -> None:
    driver, _ = single(BreakableStore(), MemorySnapshotStore())
    failures: list[Failure] = []
    driver.on_failure.append(failures.append)
    driver.core.has_ready = lambda: True  # type: ignore[method-assign]

    def broken() -> Ready:
        raise RuntimeError("a bug in the core")

    driver.core.ready = broken  # type: ignore[method-assign]
    why = stop_reasons(driver._process)
    assert not driver.running
    assert len(failures) == 1 and failures[0].check(RuntimeError)
    assert why == ["the Raft core failed"]


class ThreadedClock(Clock):
    """A Clock that takes calls from threads (run when the test says) and records its triggers."""

    def __init__(self) -> None:
        super().__init__()
        self.from_threads: SimpleQueue[tuple[Callable[..., object], tuple[object, ...]]] = SimpleQueue()
        self.triggers: list[tuple[str, str, Callable[[], None]]] = []

    def callFromThread(self, f: Callable[..., object], *args: object) -> None:
        self.from_threads.put((f, args))

    def addSystemEventTrigger(self, phase: str, event: str, f: Callable[[], None]) -> None:
        self.triggers.append((phase, event, f))

    def run_from_threads(self) -> None:
        while not self.from_threads.empty():
            f, args = self.from_threads.get()
            f(*args)


def test_a_turns_jobs_reach_the_thread_two_turns_later_as_one_batch() -> None:
    """One hand-over per reactor turn, after the turn (its messages leave first), and the thread
    stops with the reactor (statement deletion: both were unchecked, a
    ``stop`` handing everything over hid a missing hand-over)."""
    reactor = ThreadedClock()
    writer = ThreadWriter(reactor)
    ran: list[int] = []
    done = [writer.write(partial(ran.append, i)) for i in range(3)]
    assert reactor.triggers == [("during", "shutdown", writer.stop)]
    assert len(reactor.getDelayedCalls()) == 1  # the turn's one hand-over, not one per job
    reactor.advance(0)  # (a Clock runs the second turn's call within the same advance)
    assert reactor.getDelayedCalls() == []
    writer.stop()  # joins the thread once the batch ran
    assert ran == [0, 1, 2] and not any(d.called for d in done)
    reactor.run_from_threads()  # the outcomes come back through the reactor, in order
    assert all(d.called and d.result is None for d in done)


@pytest.mark.parametrize(("given", "name"), [((), "garlicfarm-log-writer"), (("wal",), "wal")])
def test_the_writer_thread_is_a_named_daemon(given: tuple[str, ...], name: str) -> None:
    """The thread carries the writer's name (what a thread dump shows) and is a daemon: a process
    that ends without the reactor's shutdown is not held by it."""
    reactor = ThreadedClock()
    writer = ThreadWriter(reactor, *given)
    seen: list[tuple[str, bool]] = []
    writer.write(lambda: seen.append((threading.current_thread().name, threading.current_thread().daemon)))
    reactor.advance(0)
    writer.stop()
    assert seen == [(name, True)]


def test_a_lone_write_is_handed_over_and_so_is_the_next_turns() -> None:
    """A turn's first write schedules the hand-over, even when it is the turn's only one, and a write
    in a later turn schedules its own."""
    reactor = ThreadedClock()
    writer = ThreadWriter(reactor)
    first = writer.write(lambda: None)
    assert len(reactor.getDelayedCalls()) == 1
    reactor.advance(0)
    second = writer.write(lambda: None)
    assert len(reactor.getDelayedCalls()) == 1
    reactor.advance(0)
    writer.stop()
    reactor.run_from_threads()
    assert first.called and second.called


def test_a_failing_job_fails_its_own_deferred_only() -> None:
    """A job's exception reaches its caller through its Deferred; the jobs after it still run."""
    reactor = ThreadedClock()
    writer = ThreadWriter(reactor)
    ran: list[int] = []

    def broken() -> None:
        raise StorageError("disk full")

    done = [writer.write(partial(ran.append, 1)), writer.write(broken), writer.write(partial(ran.append, 3))]
    reactor.advance(0)
    writer.stop()
    reactor.run_from_threads()
    assert ran == [1, 3]
    failures: list[Failure] = []
    done[1].addErrback(failures.append)
    assert [d.result for d in (done[0], done[2])] == [None, None]
    assert len(failures) == 1 and failures[0].check(StorageError)
    assert str(failures[0].value) == "disk full"


def test_a_writer_stopped_before_any_write_refuses_in_words() -> None:
    """Stopping a writer that never started its thread; a write after ``stop`` fails, saying why
    (the driver stops the node with that failure)."""
    reactor = ThreadedClock()
    writer = ThreadWriter(reactor)
    writer.stop()
    refused: list[Failure] = []
    writer.write(lambda: None).addErrback(refused.append)
    assert len(refused) == 1 and refused[0].check(RuntimeError)
    assert str(refused[0].value) == "the log writer was stopped"
    assert reactor.triggers == [] and reactor.getDelayedCalls() == []
