"""When the driver applies committed entries: two reactor turns after their Ready's messages and
answers left, in the log's order, a bounded batch at a time, and before a snapshot from the leader
replaces the state; a failure there stops the node and names the entry."""

from __future__ import annotations

import random

from twisted.internet.task import Clock

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import RaftDriver
from garlicfarm.raft.types import InstalledSnapshot, Ready, Send
from garlicfarm.storage.interface import SnapshotMeta, StorageError
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.snapshots import MemorySnapshotStore
from garlicfarm.wire import Application, ClusterServer, Configuration, LogEntry, RequestVoteRequest
from tests.raft.test_driver import OPTIONS, TICK, LocalTransport, run
from tests.raft.test_driver_writer import BrokenSnapshotFile, single, stop_reasons


class Machine:
    """Records what it is given; ``fail_at`` makes its apply of that index raise."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int | bytes]] = []
        self.fail_at: int | None = None
        self.snapshot_fails = False

    def apply(self, index: int, entry: LogEntry) -> None:
        if index == self.fail_at:
            raise ValueError("a bug in the application")
        if isinstance(entry.value, Application):
            self.calls.append(("apply", index))

    def check(self, entry: LogEntry) -> str | None:
        return None

    def check_snapshot(self, data: bytes) -> str | None:
        return None

    def snapshot(self) -> bytes:
        if self.snapshot_fails:
            raise RuntimeError("a bug in the snapshot")
        return b"state"

    def restore(self, data: bytes) -> None:
        self.calls.append(("restore", data))

    @property
    def applied(self) -> list[int]:
        return [index for what, index in self.calls if isinstance(index, int)]


def leader(
    snapshots: MemorySnapshotStore | None = None, snapshot_every: int = 10**9
) -> tuple[Clock, RaftDriver, Machine]:
    """A farm of one, leading: what it commits, it commits at once."""
    clock = Clock()
    store = MemoryLogStore()
    bootstrap = Configuration(0, 0, (ClusterServer(1, "tcp://127.0.0.1:9001"),))
    core = RaftCore(1, store.load(), random.Random(1), bootstrap, OPTIONS)
    machine = Machine()
    driver = RaftDriver(
        core,
        store,
        clock,
        LocalTransport(clock, {}, 1),
        TICK,
        state_machine=machine,
        snapshots=snapshots or MemorySnapshotStore(),
        snapshot_every=snapshot_every,
        group_commit=True,
    )
    driver.start()
    run(clock, 0.5)
    assert core.is_leader()
    return clock, driver, machine


def one_turn(driver: RaftDriver) -> None:
    """Drain what is ready, as the end of a reactor turn does, without running later turns."""
    drain = driver._drain
    if drain is not None and drain.active():
        drain.cancel()
    driver._process()


def due_now(clock: Clock) -> list[object]:
    now = clock.seconds()
    return [getattr(call, "func", None) for call in clock.getDelayedCalls() if call.getTime() == now]


def test_a_turn_asks_once_for_the_apply_however_many_readies_committed() -> None:
    clock, driver, machine = leader()
    limit = driver.core.options.max_apply_per_ready
    for i in range(3 * limit):
        driver.submit(b"[%d]" % i)
    one_turn(driver)  # two Readies, each committing up to max_apply_per_ready entries
    assert machine.applied == []
    assert due_now(clock).count(driver._apply_next_turn) == 1  # one apply, two turns from now
    clock.advance(0)
    assert len(machine.applied) == 3 * limit
    assert machine.applied == sorted(machine.applied)


def test_a_backlog_is_applied_two_readies_worth_at_a_time_with_a_turn_in_between() -> None:
    clock, driver, machine = leader()
    limit = driver.core.options.max_apply_per_ready
    for i in range(5 * limit):
        driver.submit(b"[%d]" % i)
    for _ in range(3):
        one_turn(driver)
    assert len(driver._to_apply) > 2 * limit
    for call in clock.getDelayedCalls():
        if getattr(call, "func", None) == driver._apply_next_turn:
            call.cancel()  # the apply those turns asked for: run by hand instead
    driver._apply_queued()
    assert len(machine.applied) == 2 * limit
    assert due_now(clock) == [driver._apply_queued]  # the rest in the next turn
    driver.submit(b"[late]")
    one_turn(driver)  # a commit meanwhile does not ask again: the apply already asked for is enough
    assert due_now(clock) == [driver._apply_queued]
    clock.advance(0)
    assert len(machine.applied) == 5 * limit + 1
    assert machine.applied == sorted(machine.applied)
    driver.submit(b"[after]")
    one_turn(driver)  # nothing pending: a new commit asks again
    assert due_now(clock).count(driver._apply_next_turn) == 1


def test_what_committed_before_a_snapshot_is_applied_before_it_replaces_the_state() -> None:
    clock, driver, machine = leader()
    first = driver.core.log.last_index + 1
    driver.submit(b"[1]")
    driver.submit(b"[2]")
    one_turn(driver)
    assert machine.applied == []
    meta = SnapshotMeta(first + 10, driver.core.term, driver.core.config)
    driver._dispatch(Ready(snapshot=InstalledSnapshot(meta, b"from the leader")))
    assert machine.calls == [("apply", first), ("apply", first + 1), ("restore", b"from the leader")]
    assert driver._machine_index == first + 10
    clock.advance(0)
    assert machine.calls[-1] == ("restore", b"from the leader")  # nothing applied twice


def test_a_state_machine_failing_on_an_entry_stops_the_node_and_names_it() -> None:
    clock, driver, machine = leader()
    index = driver.core.log.last_index + 1
    machine.fail_at = index
    driver.submit(b"[1]")
    one_turn(driver)
    why = stop_reasons(lambda: clock.advance(0))
    assert why == [f"the state machine failed on log entry {index}"]
    assert not driver.running and driver.stopped_by is not None
    assert driver.stopped_by.check(ValueError)


def test_a_snapshot_that_cannot_be_taken_after_an_apply_stops_the_node() -> None:
    clock, driver, machine = leader(snapshot_every=2)
    machine.snapshot_fails = True
    driver.submit(b"[1]")
    one_turn(driver)
    why = stop_reasons(lambda: clock.advance(0))
    assert why == ["the Raft core failed"]  # no entry was being applied: none is blamed
    assert not driver.running


def test_a_snapshot_file_that_cannot_be_written_after_an_apply_stops_the_node() -> None:
    clock, driver, _ = leader(BrokenSnapshotFile(), snapshot_every=2)
    driver.submit(b"[1]")
    one_turn(driver)
    why = stop_reasons(lambda: clock.advance(0))
    assert why == ["storage failed, so that it cannot act on lost state"]
    assert not driver.running and driver.stopped_by is not None
    assert driver.stopped_by.check(StorageError)


def test_the_snapshot_is_taken_at_the_index_just_applied() -> None:
    clock, driver, machine = leader(snapshot_every=3)
    while driver.core.log.last_index < 3:
        driver.submit(b"[x]")
        run(clock, 0.01)
    assert driver.running
    assert driver.core.log.snapshot_index == machine.applied[-1] == driver._machine_index


class BrokenTransport:
    def send(self, to: int, message: object, endpoint: str | None = None) -> None:
        raise RuntimeError("a bug in the transport")


def test_a_failure_before_any_apply_blames_no_entry() -> None:
    """Nothing was being applied when sending failed: the message must not name a log entry."""
    driver, _ = single(MemoryLogStore(), MemorySnapshotStore())  # nothing applied yet
    driver.transport = BrokenTransport()  # type: ignore[assignment]
    message = RequestVoteRequest(source=1, destination=2, term=9, last_log_term=0, last_log_index=0)
    why = stop_reasons(lambda: driver._dispatch(Ready(sends=(Send(2, message),))))
    assert why == ["the Raft core failed"]
    assert not driver.running
