"""Bugs the simulator found (issue 14), each pinned by a rule test.

* A refused vote request restarted the follower's election timer: a candidate whose log is behind,
  ticking faster, held back the one server that could win, round after round (plain votes).
* A finished snapshot transfer moved a voter's matchIndex to the snapshot's end on an answer that
  names no snapshot: a late answer from an earlier transfer read the same, and the leader counted
  entries the follower never had.
* A leader that removed itself lost its majority (or crashed) before that removal committed: it
  would not campaign, being outside its latest configuration, and the remaining member could not win
  without it, its log being behind. The farm never committed again (seed 4691, 5 nodes).
"""

from __future__ import annotations

import random

from garlicfarm.raft.core import SNAPSHOT_NOT_NEEDED, RaftCore
from garlicfarm.raft.progress import ProgressState
from garlicfarm.storage.interface import HardState, StoredState
from garlicfarm.wire import (
    ClusterServer,
    Configuration,
    InstallSnapshotResponse,
    LogEntry,
    RemoveServerRequest,
)
from tests.raft.harness import PAPER, Cluster, log_of, store_with, vote


def remove(c: Cluster, leader: int, server: int) -> None:
    c.step(leader, RemoveServerRequest(entries=(LogEntry(0, ClusterServer(server)),)))


def test_a_leader_that_removed_itself_finishes_the_change_after_a_crash() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(3)
    remove(c, 3, 2)
    c.stabilize()
    assert c[3].voters() == {1, 3} and c[3].commit == c[3].config_index
    c.isolate(3)
    remove(c, 3, 3)  # appended on server 3 only: its latest configuration is {1}, uncommitted
    c.stabilize()
    assert c[3].voters() == {1} and c[3].config_index > c[3].commit
    assert c[1].voters() == {1, 3}
    c.crash(3)
    c.restart(3)
    c.heal()
    assert c[3].electable() and not c[1].log.last_index >= c[3].log.last_index
    for _ in range(20 * PAPER.election_ticks):
        for i in (1, 3):
            c.tick(i)
        c.stabilize()
        if c[1].is_leader() and c[1].voters() == {1}:
            break
    assert c[1].is_leader() and c[1].voters() == {1} and c[1].commit == c[1].log.last_index
    assert c[3].removed and not c[3].electable()


def test_a_refused_vote_request_does_not_restart_the_election_timer() -> None:
    c = Cluster(3, PAPER, stores={1: store_with(log_of(1, 1, 1))})
    follower = c[1]
    c.tick(1, 5)
    before = follower._election_elapsed
    c.step(1, vote(3, 1, term=follower.term + 1, last_index=0, last_term=0))  # behind: refused
    c.ready(1)
    assert follower.term > 0 and follower.voted_for is None
    assert follower._election_elapsed == before


def test_a_granted_vote_restarts_it() -> None:
    c = Cluster(3, PAPER)
    follower = c[1]
    c.tick(1, 5)
    c.step(1, vote(3, 1, term=follower.term + 1, last_index=0, last_term=0))
    c.ready(1)
    assert follower.voted_for == 3
    assert follower._election_elapsed == 0


def test_a_finished_snapshot_transfer_does_not_set_match_without_a_probe() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    for n in range(5):
        c.propose(1, f"e{n}".encode())
        c.stabilize()
    leader = c[1]
    pr = leader.progress[2]
    match_before = pr.match
    leader.compact(leader.applied, b"state")
    pr.become_snapshot(leader.log.snapshot_index)
    pr.snapshot_expect = len(b"state")
    pr.match = 0  # as if the follower had lost track: only a proven position may set it again
    late = InstallSnapshotResponse(
        source=2, destination=1, term=leader.term, next_index=SNAPSHOT_NOT_NEEDED, accepted=True
    )
    leader.step(late)
    assert pr.state is ProgressState.PROBE
    assert pr.match == 0, "an answer naming no snapshot moved matchIndex"
    assert pr.next == leader.log.snapshot_index + 1
    c.stabilize()  # the probe at the snapshot's end is answered: now it is proven
    assert pr.match >= match_before


def test_a_server_left_out_only_by_uncommitted_configurations_is_electable() -> None:
    """Seed 4948: the term-start entry of a leader outside its configuration repeats that configuration;
    it is still uncommitted, so the server is still electable (what counts is the commit index)."""
    servers = {i: ClusterServer(i, f"sim://{i}") for i in (1, 4, 5)}
    three = Configuration(1, 0, (servers[1], servers[4], servers[5]))
    two = Configuration(2, 1, (servers[1], servers[4]))
    again = Configuration(3, 2, (servers[1], servers[4]))
    entries = (LogEntry(1, three), LogEntry(1, two), LogEntry(2, again))
    for commit, electable in ((1, True), (2, False), (3, False)):
        stored = StoredState(HardState(2, None, commit), None, 1, entries)
        core = RaftCore(5, stored, random.Random(5), None, PAPER)
        assert core.voters() == {1, 4}
        assert core.electable() is electable, commit
