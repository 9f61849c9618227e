"""What the driver answers and when: deadlines per kind of request, refusals, membership changes
asked of a follower, snapshots handed to the state machine and stores, and how a stop is reported.
Mutation testing of garlicfarm/raft/driver.py found these unchecked (docs/verification.md)."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.defer import CancelledError
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.task import Clock
from twisted.logger import LogLevel
from twisted.python.failure import Failure

from garlicfarm.raft.driver import ChangeRefused, CommitTimeout, NodeStopped, NotLeader, RaftDriver
from garlicfarm.raft.types import Role
from garlicfarm.storage.interface import SnapshotMeta
from garlicfarm.storage.snapshots import MemorySnapshotStore
from garlicfarm.wire import AppendEntriesResponse, ClientRequest, LogEntry
from tests.raft.farm import Farm, Machine, outcome
from tests.raft.harness import append, append_response, client_request, entry, vote_response
from tests.raft.test_driver_edges import ONE, FailingTransport, Picky, driver_with
from tests.raft.test_driver_says import driver_lines
from tests.raft.test_edge_rules import snapshot_chunk


def leader_of_three(**kwargs: Any) -> tuple[Clock, RaftDriver]:
    """Node 1 leads a farm of three whose other members no longer answer: nothing more commits."""
    clock, driver = driver_with(FailingTransport(CancelledError()), **kwargs)
    for _ in range(100):  # it pre-campaigns; every request fails: answer one pre-vote, then one vote
        clock.advance(0.01)
        core = driver.core
        if core.role is Role.PRE_CANDIDATE:
            core.step(vote_response(2, 1, core.term + 1, granted=True, pre=True))
        elif core.role is Role.CANDIDATE:
            core.step(vote_response(2, 1, core.term, granted=True))
        driver._process()
        if core.is_leader():
            break
    assert driver.core.is_leader()
    # server 2 acknowledges the term-start entry: it commits, and a configuration change may start
    core.step(append_response(2, 1, core.term, core.log.last_index + 1, accepted=True))
    driver._process()
    assert core.commit == core.log.last_index
    return clock, driver


def test_a_client_request_gets_submit_timeout_and_a_change_gets_change_timeout() -> None:
    clock, driver = leader_of_three(submit_timeout=5.0, change_timeout=30.0)
    entry = driver.handle_request(client_request(b"x"))
    change = driver.remove_server(3)
    clock.advance(5.0)
    with pytest.raises(CommitTimeout, match=r"^no commit decision within 5s; it may still commit$"):
        outcome(entry)
    assert not change.called
    clock.advance(25.0)
    with pytest.raises(CommitTimeout, match=r"^no commit decision within 30s; it may still commit$"):
        outcome(change)
    with pytest.raises(CommitTimeout, match=r"within 5s"):
        d = driver.submit(b"y")
        clock.advance(5.0)
        outcome(d)


def test_a_follower_asked_for_a_change_names_the_leader() -> None:
    _clock, driver = driver_with(FailingTransport(CancelledError()))
    driver.handle_request(append(2, 1, 4, 0, 0))
    with pytest.raises(NotLeader) as added:
        outcome(driver.add_server(4, "tcp://127.0.0.1:9004"))
    assert (added.value.leader_id, added.value.endpoint) == (2, "tcp://127.0.0.1:9002")
    with pytest.raises(NotLeader) as removed:
        outcome(driver.remove_server(3))
    assert (removed.value.leader_id, removed.value.endpoint) == (2, "tcp://127.0.0.1:9002")


def test_a_follower_redirects_a_client_request_rather_than_judging_it() -> None:
    _clock, driver = driver_with(FailingTransport(CancelledError()), state_machine=Picky())
    driver.handle_request(append(2, 1, 4, 0, 0))
    answer = outcome(driver.handle_request(client_request(b"x")))
    assert isinstance(answer, AppendEntriesResponse) and (answer.accepted, answer.destination) == (False, 2)


def test_a_refused_client_request_is_answered_in_the_leaders_term() -> None:
    clock, driver = driver_with(FailingTransport(CancelledError()), ONE, state_machine=Picky())
    for _ in range(50):
        clock.advance(0.01)
    answer = outcome(driver.handle_request(client_request(b"x")))
    assert isinstance(answer, AppendEntriesResponse)
    assert (answer.term, answer.next_index, answer.accepted, answer.destination) == (
        driver.core.term,
        0,
        False,
        1,
    )
    assert driver.core.term > 0


def test_only_membership_changes_are_logged_as_such() -> None:
    with driver_lines() as lines:
        _clock, driver = leader_of_three()
        driver.handle_request(client_request(b"x"))
        driver.handle_request(ClientRequest(entries=(LogEntry(0, client_request(b"y").entries[0].value),)))
        driver.remove_server(3)
    info = [text for level, text in lines if level is LogLevel.info and ": asked" in text]
    assert info == ["remove server 3: asked"]


def test_a_stopped_node_says_so() -> None:
    _clock, driver = leader_of_three()
    pending = driver.handle_request(client_request(b"x"))
    driver.stop()
    with pytest.raises(NodeStopped, match=r"^the node stopped$"):
        outcome(pending)
    with pytest.raises(NodeStopped, match=r"^the node is not running$"):
        outcome(driver.handle_request(client_request(b"y")))


class Silent(Exception):
    """An exception without a message."""


def test_a_failure_is_handed_to_the_failure_callbacks_and_named_in_status() -> None:
    _clock, driver = leader_of_three()
    seen: list[Failure] = []
    driver.on_failure.append(seen.append)
    with driver_lines():
        try:
            raise Silent()
        except Silent:
            failure = Failure()
        driver._fail(failure, "a test")
    assert seen == [failure] and driver.stopped_by is failure
    assert driver.core.status()["stopped_by"] == "Silent"


def test_a_snapshot_from_the_leader_is_checked_whole_then_stored_then_the_old_one_pruned() -> None:
    class Recording(Machine):
        def __init__(self) -> None:
            super().__init__()
            self.checked: list[bytes] = []

        def check_snapshot(self, data: bytes) -> str | None:
            self.checked.append(data)
            return None

        def restore(self, data: bytes) -> None:
            pass

    class Spy(MemorySnapshotStore):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[tuple[str, int | None]] = []

        def save(self, meta: SnapshotMeta, data: bytes) -> None:
            self.calls.append(("save", meta.last_index))
            super().save(meta, data)

        def prune(self, keep: SnapshotMeta | None) -> None:
            self.calls.append(("prune", None if keep is None else keep.last_index))
            super().prune(keep)

    machine, snapshots = Recording(), Spy()
    _clock, driver = driver_with(
        FailingTransport(CancelledError()), state_machine=machine, snapshots=snapshots
    )
    driver.handle_request(snapshot_chunk(9, 0, b"abc", False))
    driver.handle_request(snapshot_chunk(9, 3, b"def", True))
    assert driver.running and machine.checked == [b"abcdef"]
    assert snapshots.calls == [("save", 9), ("prune", 9)]
    assert driver.store.load().snapshot is not None


def test_a_snapshot_from_the_leader_needs_no_snapshot_store() -> None:
    class Quiet(Machine):
        def check_snapshot(self, data: bytes) -> str | None:
            return None

        def restore(self, data: bytes) -> None:
            pass

    _clock, driver = driver_with(FailingTransport(CancelledError()), state_machine=Quiet())
    driver.handle_request(snapshot_chunk(9, 0, b"abc", True))
    assert driver.running and driver.core.log.snapshot_index == 9


def test_a_failed_send_is_logged_with_why() -> None:
    with driver_lines() as lines:
        clock, _driver = driver_with(FailingTransport(ConnectionRefusedError("no route")))
        for _ in range(50):
            clock.advance(0.01)
    debug = [
        text for level, text in lines if level is LogLevel.debug and text.startswith("request to server")
    ]
    assert debug and all(text.endswith("Connection was refused by other side: no route.") for text in debug)


def test_a_change_overtaken_by_a_new_leader_names_that_leader() -> None:
    _clock, driver = leader_of_three()
    core = driver.core
    before = core.log.last_index
    change = driver.remove_server(3)
    assert core.config_index == before + 1
    # server 2 won a later term and overwrote the configuration entry: the change did not happen
    driver.handle_request(
        append(2, 1, core.term + 1, before, core.term, [entry(core.term + 1)], commit=before + 1)
    )
    with pytest.raises(NotLeader) as lost:
        outcome(change)
    assert (lost.value.leader_id, lost.value.endpoint) == (2, "tcp://127.0.0.1:9002")


def test_a_refused_change_names_what_was_asked() -> None:
    _clock, driver = leader_of_three()
    driver.remove_server(3)  # pending: a second change must wait
    with pytest.raises(
        ChangeRefused, match=r"^cannot remove server 2: a configuration change is still being"
    ):
        outcome(driver.remove_server(2))


def test_waiting_requests_cost_no_reactor_timer_each() -> None:
    """One deadline queue checked every tick, not a callLater per request (the profile showed ~5 %
    of a loaded leader's time in Twisted's timer heap)."""
    farm = Farm(1)
    leader = farm.wait_for_leader()
    before = len(farm.clock.getDelayedCalls())
    waiting = [leader.submit(b"v%d" % i) for i in range(100)]
    # at most the end-of-turn drain, the apply two turns on and the commit index's save
    assert len(farm.clock.getDelayedCalls()) <= before + 3
    waiting += [leader.submit(b"w%d" % i) for i in range(100)]
    assert len(farm.clock.getDelayedCalls()) <= before + 3
    farm.run(0.05)
    assert all(d.called for d in waiting)


def test_every_waiting_request_times_out_not_only_the_last() -> None:
    farm = Farm(3)
    leader = farm.wait_for_leader()
    others = [i for i in farm.drivers if i != leader.core.id]
    farm.cut |= {(leader.core.id, i) for i in others} | {(i, leader.core.id) for i in others}
    first = leader.submit(b"first")
    farm.run(0.03)  # less than an election timeout: it still leads
    second = leader.submit(b"second")
    farm.run(leader.submit_timeout + 1)
    for d in (first, second):
        with pytest.raises(CommitTimeout):
            outcome(d)


def test_a_timeout_callback_that_waits_on_another_deadline_does_not_kill_the_ticker() -> None:
    """A CommitTimeout errback may start a request with another timeout length (a membership change
    after a failed submit): the expiry loop must not trip over the deadline queue it iterates, or
    the tick's LoopingCall dies and the node with it."""
    farm = Farm(3)
    leader = farm.wait_for_leader()
    others = [i for i in farm.drivers if i != leader.core.id]
    farm.cut |= {(leader.core.id, i) for i in others} | {(i, leader.core.id) for i in others}
    failed: list[object] = []

    def retry_elsewhere(failure: Failure) -> None:
        failed.append(failure.value)
        leader._expire_after(10**6, leader.submit_timeout * 7)  # a deadline of a length not seen yet

    leader.submit(b"lost").addErrback(retry_elsewhere)
    farm.run(leader.submit_timeout + 1)
    assert [type(e) for e in failed] == [CommitTimeout]
    assert leader.running and leader._timer is not None and leader._timer.active()


def test_a_failure_in_the_deadline_queue_stops_the_node_loudly() -> None:
    farm = Farm(3)
    leader = farm.wait_for_leader()
    leader._deadlines = None  # type: ignore[assignment]  # any bug in the expiry path
    with driver_lines() as lines:
        farm.run(0.05)
    assert not leader.running and leader.stopped_by is not None
    assert any("request deadlines failed; stopping this node" in text for _level, text in lines)


def test_a_request_times_out_at_the_first_tick_past_its_deadline_whatever_waits_beside_it() -> None:
    """Requests of two timeout lengths wait at once: the node sleeps until the earlier deadline of
    the two queues, not until the later one or its next election timeout."""
    clock, driver = leader_of_three(submit_timeout=5.0, change_timeout=30.0)
    asked = clock.seconds()
    entry = driver.handle_request(client_request(b"x"))
    change = driver.remove_server(3)
    failed_at: list[float] = []
    entry.addErrback(lambda f: failed_at.append(clock.seconds()))
    while not failed_at:
        clock.advance(0.001)
    assert asked + 5.0 <= failed_at[0] < asked + 5.0 + driver.tick_seconds + 1e-9
    assert not change.called
    change.addErrback(lambda f: None)


def test_a_removed_server_with_requests_still_waiting_sleeps_until_their_deadline() -> None:
    """A leader that removed itself may not campaign (no tick of its own is ever due) while an
    entry it appended after its removal still waits for its decision: it sleeps until the deadline
    and answers."""
    farm = Farm(3)
    leader = farm.wait_for_leader()
    lid = leader.core.id
    removed = leader.remove_server(lid)
    waiting = leader.submit(b"late")
    farm.run(leader.submit_timeout + 1.0)
    assert outcome(removed) is None and not leader.core.electable()
    assert leader.running and leader.stopped_by is None
    with pytest.raises(CommitTimeout):
        outcome(waiting)


def test_proposals_that_do_not_commit_are_counted_as_failed_once_each() -> None:
    clock, driver = leader_of_three(submit_timeout=5.0)
    timed_out = [driver.handle_request(client_request(b"x")) for _ in range(2)]
    clock.advance(5.0)
    for d in timed_out:
        with pytest.raises(CommitTimeout):
            outcome(d)
    assert (driver.proposals.committed, driver.proposals.failed, driver.proposals.refused) == (0, 2, 0)
    driver.core.set_transfer_support(2, True)
    driver.transfer_leadership(2)
    handing_over = driver.handle_request(client_request(b"y"))  # refused: the leader is handing over
    clock.advance(0.01)
    assert not outcome(handing_over).accepted
    assert (driver.proposals.committed, driver.proposals.failed, driver.proposals.refused) == (0, 3, 0)
