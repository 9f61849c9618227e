"""A leader's and a starting server's details that mutation testing of garlicfarm/raft/core.py found
unchecked (docs/verification.md). Hand-driven cores, no clock."""

from __future__ import annotations

import random

import attrs

from garlicfarm.raft.core import RaftCore
from garlicfarm.storage.interface import HardState, SnapshotMeta, StoredState
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.wire import (
    ClusterServer,
    Configuration,
    InstallSnapshotRequest,
    JoinClusterRequest,
    LeaveClusterRequest,
    LogEntry,
    SnapshotSyncRequest,
)
from tests.raft.harness import PAPER, Cluster, append, append_response, configuration, entry, sends_of
from tests.raft.test_edge_rules import ask, remove
from tests.raft.test_join_edges import joining


def test_a_leader_that_removes_itself_tells_no_one_to_leave() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    ask(c, 1, remove(1))
    c.stabilize(lambda env: not isinstance(env.message, LeaveClusterRequest))
    assert c[1].removed and c[2].voters() == {2, 3}
    assert [env for env in c.wire if isinstance(env.message, LeaveClusterRequest)] == []


def test_a_leader_that_learns_a_later_term_from_an_answer_has_it_to_save() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    leader = c[1]
    later = leader.term + 3
    leader.step(append_response(2, 1, later, 0, accepted=False))
    assert leader.has_ready()
    assert c.ready(1).hard_state == HardState(later, None, leader.commit)


def test_a_candidate_has_a_status_without_progress() -> None:
    c = Cluster(3, PAPER)
    c.campaign(1)
    status = c[1].status()
    assert (status["role"], status["progress"]) == ("candidate", {})


def test_a_leaders_check_quorum_windows_are_whole_election_timeouts() -> None:
    options = attrs.evolve(PAPER, check_quorum=True)
    c = Cluster(3, options)
    c.elect_and_settle(1)
    leader = c[1]
    for _ in range(options.election_ticks):
        c.tick(1)
        c.stabilize()
        if leader._election_elapsed == 0:
            break
    assert leader._election_elapsed == 0  # a window just ended
    c.tick(1, options.election_ticks - 1)
    assert leader._election_elapsed == options.election_ticks - 1


def test_a_silent_joiner_is_sent_its_request_again_every_two_heartbeats() -> None:
    options = attrs.evolve(PAPER, heartbeat_ticks=2, election_ticks=10)
    c, _leader, _ = joining(options, entries=2)
    resent: list[int] = []
    for tick in range(1, 9):
        c.tick(1)
        rd = c.ready(1)
        c.drop()
        if [s for s in rd.sends if isinstance(s.message, JoinClusterRequest)]:
            resent.append(tick)
    assert resent == [4, 8]


def test_a_configuration_inside_a_batch_is_recorded_at_its_own_index() -> None:
    four = Configuration(3, 0, (*configuration(3).servers, ClusterServer(4, "sim://4")))
    c = Cluster(3, PAPER)
    follower = c[1]
    batch = [entry(1), entry(1), LogEntry(1, four), entry(1)]
    c.step(1, append(2, 1, 1, 0, 0, batch))
    assert follower.config_index == 3 and follower.voters() == {1, 2, 3, 4}


def test_a_server_with_no_configuration_waits_to_be_invited() -> None:
    core = RaftCore(4, StoredState(HardState(0, None, 0), None, 1, ()), random.Random(0), None, PAPER)
    assert core.voters() == frozenset() and core.config.servers == ()
    for _ in range(5 * PAPER.election_ticks):
        core.tick()
    assert core.status()["role"] == "follower" and not core.has_ready()


def test_a_restarted_leader_sends_the_snapshot_it_was_restarted_with() -> None:
    store = MemoryLogStore()
    store.compact(SnapshotMeta(5, 1, configuration(3)))
    store.save(HardState(1, None, 5))
    options = attrs.evolve(PAPER, snapshot_chunk=4)
    c = Cluster(3, PAPER, stores={1: store})
    core = RaftCore(
        1, store.load(), random.Random(0), configuration(3), options, snapshot_data=b"restored state"
    )
    c.cores[1] = core
    c.elect(1)
    c.drop()
    core.step(append_response(3, 1, core.term, 1, accepted=False))  # 3 lacks everything: the snapshot
    [request] = [s for s in sends_of(c.ready(1), InstallSnapshotRequest) if s.destination == 3]
    chunk = request.entries[0].value
    assert isinstance(chunk, SnapshotSyncRequest) and (chunk.last_log_index, chunk.data) == (5, b"rest")
