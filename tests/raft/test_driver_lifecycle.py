"""The driver's life and what it tells its caller: defaults, the first tick, submitting before start,
refusals that name the leader, failures blamed on the right party, and the role/leader log lines.
Mutation testing of garlicfarm/raft/driver.py found these unchecked (docs/verification.md)."""

from __future__ import annotations

import random
from typing import Any

import attrs
import pytest
from twisted.internet.defer import CancelledError
from twisted.internet.task import Clock
from twisted.logger import LogLevel
from twisted.python.failure import Failure

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import EntryRefused, NodeStopped, NotLeader, RaftDriver
from garlicfarm.storage.interface import StorageError
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.wire import AppendEntriesResponse, Application, ClientRequest, LogEntry
from garlicfarm.wire.types import NO_LEADER
from tests.raft.farm import Farm, Machine, outcome
from tests.raft.harness import append, vote
from tests.raft.test_driver_edges import ONE, OPTIONS, THREE, FailingTransport, Picky, driver_with
from tests.raft.test_driver_says import driver_lines


def unstarted(**kwargs: Any) -> RaftDriver:
    store = MemoryLogStore()
    core = RaftCore(1, store.load(), random.Random(1), THREE, OPTIONS)
    return RaftDriver(core, store, Clock(), FailingTransport(CancelledError()), **kwargs)


def failure_lines(lines: list[tuple[LogLevel, str]]) -> list[str]:
    return [text.splitlines()[0] for level, text in lines if level is LogLevel.critical]


def test_the_documented_defaults() -> None:
    driver = unstarted()
    assert (driver.tick_seconds, driver.submit_timeout, driver.change_timeout) == (0.05, 10.0, 3600.0)
    assert driver.snapshot_every == 5000
    assert (driver.running, driver.stopped_by) == (False, None)


def test_nothing_is_accepted_before_start() -> None:
    driver = unstarted()
    with pytest.raises(NodeStopped, match=r"^the node is not running$"):
        outcome(driver.submit(b"x"))


def test_the_first_tick_comes_one_interval_after_start() -> None:
    clock, driver = driver_with(FailingTransport(CancelledError()), fixed_rate=True)
    assert driver.core._election_elapsed == 0
    clock.advance(0.01)
    assert driver.core._election_elapsed == 1


def test_a_sleeping_driver_wakes_first_at_the_election_timeout() -> None:
    clock, driver = driver_with(FailingTransport(CancelledError()))
    timeout = driver.core._randomized_timeout
    assert driver._timer is not None and driver._timer.getTime() == pytest.approx(timeout * 0.01)
    clock.advance(0.01)
    assert driver.core._election_elapsed == 0  # nothing was due: the ticks are counted when one is
    clock.advance(0.01 * (timeout - 1) + 1e-9)
    assert driver.core.role.value == "pre-candidate" and driver.core._election_elapsed == 0


def test_a_refused_entry_says_why() -> None:
    clock, leader = driver_with(FailingTransport(CancelledError()), ONE, state_machine=Picky())
    for _ in range(50):
        clock.advance(0.01)
    assert leader.core.is_leader()
    with pytest.raises(EntryRefused, match=r"not for this farm"):
        outcome(leader.submit(b"x"))


def refusal(destination: int) -> AppendEntriesResponse:
    return AppendEntriesResponse(source=1, destination=destination, term=5, next_index=0, accepted=False)


def test_an_entry_that_did_not_commit_names_the_leader_and_where_it_is() -> None:
    driver = unstarted()
    with pytest.raises(NotLeader) as known:
        driver._committed_index(refusal(2))
    assert (known.value.leader_id, known.value.endpoint) == (2, "tcp://127.0.0.1:9002")
    with pytest.raises(NotLeader) as unknown:
        driver._committed_index(refusal(NO_LEADER))
    assert (unknown.value.leader_id, unknown.value.endpoint) == (None, None)
    accepted = AppendEntriesResponse(source=1, destination=1, term=5, next_index=8, accepted=True)
    assert driver._committed_index(accepted) == 7


class Boom(Exception):
    pass


def test_a_core_that_fails_on_a_tick_stops_the_node_and_says_so() -> None:
    with driver_lines() as lines:
        clock, driver = driver_with(FailingTransport(CancelledError()))

        def tick(count: int = 1) -> None:
            raise Boom("a bug")

        driver.core.tick = tick  # type: ignore[method-assign]
        clock.advance(1.0)  # past the election timeout: a tick is due
    assert not driver.running and isinstance(driver.stopped_by.value, Boom)  # type: ignore[union-attr]
    assert failure_lines(lines) == ["the Raft core failed; stopping this node"]


def test_a_failure_after_applying_is_not_blamed_on_the_state_machine() -> None:
    with driver_lines() as lines:
        clock, driver = driver_with(FailingTransport(CancelledError()), ONE, state_machine=Machine())

        def raise_on_change(leader: int | None) -> None:
            raise Boom("a listener's bug")

        driver.on_leader_change.append(raise_on_change)
        for _ in range(50):
            clock.advance(0.01)
    assert not driver.running
    assert failure_lines(lines) == ["the Raft core failed; stopping this node"]


def test_a_failure_before_anything_is_applied_is_the_cores() -> None:
    with driver_lines() as lines:
        driver = unstarted()

        def ready() -> None:
            raise Boom("a bug")

        driver.start()  # one pass that goes well first
        driver.core.has_ready = lambda: True  # type: ignore[method-assign]
        driver.core.ready = ready  # type: ignore[method-assign,assignment]
        driver._process()
    assert failure_lines(lines) == ["the Raft core failed; stopping this node"]


class BadRestore(Machine):
    def restore(self, data: bytes) -> None:
        raise Boom("cannot restore")


def test_a_snapshot_the_state_machine_cannot_restore_is_named_by_its_index() -> None:
    from tests.raft.test_edge_rules import snapshot_chunk

    with driver_lines() as lines:
        _clock, driver = driver_with(FailingTransport(CancelledError()), state_machine=BadRestore())
        driver.core.snapshot_check = lambda data: None
        driver.handle_request(snapshot_chunk(9, 0, b"abc", True))
    assert not driver.running
    assert failure_lines(lines) == ["the state machine failed on log entry 9; stopping this node"]


def test_without_a_snapshot_store_the_log_is_never_compacted() -> None:
    clock, driver = driver_with(
        FailingTransport(CancelledError()),
        ONE,
        state_machine=Machine(),
        snapshot_every=2,
    )
    for _ in range(50):
        clock.advance(0.01)
    for k in range(5):
        driver.submit(b"%d" % k)
        clock.advance(0.01)
    assert driver.running and driver.core.applied >= 5 and driver.core.log.snapshot_index == 0


def test_an_answer_nobody_waits_for_any_more_is_dropped_quietly() -> None:
    """A request that timed out is forgotten; its answer may still come (the core decides later)."""
    clock, driver = driver_with(FailingTransport(CancelledError()), ONE)
    for _ in range(50):
        clock.advance(0.01)
    driver.core._pending_reply(999, AppendEntriesResponse, accepted=True, next_index=2)
    driver._process()
    assert driver.running


def test_learning_the_leader_of_the_same_term_is_one_line() -> None:
    with driver_lines() as lines:
        _clock, driver = driver_with(FailingTransport(CancelledError()))
        term = driver.core.term
        driver.handle_request(append(2, 1, term, 0, 0))
    info = [text for level, text in lines if level is LogLevel.info and "started" not in text]
    assert info == [f"server 2 leads term {term}"]


def test_a_new_term_is_one_line_with_the_old_one() -> None:
    with driver_lines() as lines:
        _clock, driver = driver_with(FailingTransport(CancelledError()))
        driver.handle_request(append(2, 1, 4, 0, 0))
    info = [text for level, text in lines if level is LogLevel.info and "started" not in text]
    assert info == ["follower in term 4; leader 2 (was follower in term 0)", "server 2 leads term 4"]


class BrokenStore(MemoryLogStore):
    def save(self, *args: Any, **kwargs: Any) -> None:
        raise StorageError("disk full")


def test_a_storage_failure_stops_the_node_and_says_so() -> None:
    store = BrokenStore()
    core = RaftCore(1, store.load(), random.Random(1), ONE, OPTIONS)
    clock = Clock()
    driver = RaftDriver(core, store, clock, FailingTransport(CancelledError()), 0.01)
    with driver_lines() as lines:
        driver.start()
        for _ in range(50):
            clock.advance(0.01)
    assert not driver.running
    assert failure_lines(lines) == ["storage failed, so that it cannot act on lost state; stopping this node"]


def test_start_says_which_node_in_which_term() -> None:
    with driver_lines() as lines:
        driver_with(FailingTransport(CancelledError()))
    assert (LogLevel.info, "raft node 1 started in term 0") in lines


def test_a_new_leader_says_so_without_naming_itself_as_the_leader() -> None:
    with driver_lines() as lines:
        clock, driver = driver_with(FailingTransport(CancelledError()), ONE)
        for _ in range(50):
            clock.advance(0.01)
    assert driver.core.is_leader()
    roles = [
        text for level, text in lines if level is LogLevel.info and " in term " in text and "(was" in text
    ]
    assert roles[-1] == f"leader in term {driver.core.term} (was follower in term 0)"


def test_a_follower_without_a_leader_says_so_plainly() -> None:
    with driver_lines() as lines:
        _clock, driver = driver_with(FailingTransport(CancelledError()))
        driver.handle_request(vote(2, 1, 5, 0, 0))  # a later term, no leader known
    roles = [text for level, text in lines if level is LogLevel.info and "(was" in text]
    assert roles == ["follower in term 5 (was follower in term 0)"]


def test_with_group_commit_a_drain_handles_two_readies_then_yields() -> None:
    clock, driver = driver_with(FailingTransport(CancelledError()), ONE, group_commit=True)
    for _ in range(50):
        clock.advance(0.01)
    assert driver.core.is_leader()
    core = driver.core
    core.options = attrs.evolve(core.options, max_apply_per_ready=1)
    for k in range(5):  # a backlog: saved in one Ready, then applied one entry per Ready
        core.propose(b"%d" % k, 1000 + k)
    handled: list[int] = []
    ready = core.ready

    def counting() -> Any:
        handled.append(1)
        return ready()

    core.ready = counting  # type: ignore[method-assign]
    driver._process()
    assert len(handled) == 2 and core.applied < core.commit  # the rest on later reactor turns
    clock.advance(0)
    assert len(handled) > 2 and core.applied == core.commit


@pytest.mark.parametrize(
    ("fixed_rate", "group_commit"),
    [(True, False), (False, False), (False, True)],
    ids=["fixed-rate", "sleeping", "group-commit"],
)
def test_a_stopped_driver_leaves_nothing_scheduled_and_nothing_waiting(
    fixed_rate: bool, group_commit: bool
) -> None:
    """Stopping cancels the tick (a LoopingCall or the one timer), the drain, the commit-save timer
    and the apply, and fails what waited: a stopped node embedded in a longer-lived reactor costs
    nothing and never wakes again (statement deletion found each cancellation unchecked)."""
    clock, driver = driver_with(
        FailingTransport(CancelledError()), ONE, fixed_rate=fixed_rate, group_commit=group_commit
    )
    for _ in range(50):
        clock.advance(0.01)
    assert driver.core.is_leader()
    waiting = [driver.submit(b"%d" % k) for k in range(3)]  # a drain is due, the writes not done
    assert any(call.active() for call in clock.getDelayedCalls())
    driver.stop()
    assert [call for call in clock.getDelayedCalls() if call.active()] == []
    assert all(d.called for d in waiting)  # committed before the stop, or failed by it
    assert not driver._held and not driver._to_apply


def test_a_second_stop_keeps_the_first_ones_cause() -> None:
    _clock, driver = driver_with(FailingTransport(CancelledError()), ONE)
    driver.stop(Failure(StorageError("the disk is full")))
    first = driver.stopped_by
    assert first is not None
    driver.stop()
    assert driver.stopped_by is first and not driver.running


def test_a_driver_stopped_in_order_starts_again_and_applies_what_commits() -> None:
    """stop() forgets its timer and its pending apply call: start() on the same driver arms new ones
    (a left-over handle would keep the new timer or the applies from ever being scheduled)."""
    farm = Farm(3)
    farm.submit([b"before"])
    follower = next(i for i, d in farm.drivers.items() if not d.core.is_leader())
    driver = farm.drivers[follower]
    farm.stop(follower)
    farm.submit([b"while stopped"])
    driver.start()
    farm.submit([b"after"])
    farm.run(1.0)
    assert farm.machines[follower].values[-3:] == [b"before", b"while stopped", b"after"]


def test_proposals_are_counted_as_they_end() -> None:
    """The metrics endpoint's counters: each proposal once, by how it ended."""
    farm = Farm(3)
    leader = farm.wait_for_leader()
    farm.submit([b"a", b"b", b"c"])
    assert (leader.proposals.committed, leader.proposals.failed, leader.proposals.refused) == (3, 0, 0)
    clock, picky = driver_with(FailingTransport(CancelledError()), ONE, state_machine=Picky())
    for _ in range(50):
        clock.advance(0.01)
    request = ClientRequest(entries=(LogEntry(0, Application(b"x")),))
    for _ in range(2):
        assert not outcome(picky.handle_request(request)).accepted
    assert (picky.proposals.committed, picky.proposals.failed, picky.proposals.refused) == (0, 0, 2)
