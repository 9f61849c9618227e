"""Replication details of this design: the follower's commit bound, the rejection hint, and recovery of
a pipeline whose AppendEntries was lost."""

from __future__ import annotations

import attrs

from garlicfarm.raft.progress import Progress, ProgressState
from garlicfarm.storage.interface import HardState
from garlicfarm.wire import AppendEntriesRequest, AppendEntriesResponse
from tests.raft.harness import (
    FIGURE7_FOLLOWERS,
    FIGURE7_LEADER,
    GUARDED,
    PAPER,
    Cluster,
    Envelope,
    append,
    log_of,
    sends_of,
    store_with,
    terms,
    vote_response,
)


def test_follower_commit_bounded_by_verified_index() -> None:
    """Figure 2 (commitIndex = min(leaderCommit, index of last new entry)): a follower whose log runs
    past what an AppendEntries verified (stale entries of an old term) commits only the verified part."""
    c = Cluster(3, PAPER, stores={1: store_with(log_of(1, 1, 2, 2), HardState(term=2, commit=1))})
    c.step(1, append(2, 1, term=3, prev_index=2, prev_term=1, commit=3))
    rd = c.ready(1)
    assert c[1].commit == 2
    assert [index for index, _ in rd.committed] == [1, 2]
    (reply,) = rd.replies
    assert (reply.message.accepted, reply.message.next_index) == (True, 3)


def test_reject_hint_skips_a_whole_conflicting_term() -> None:
    """§5.3 (the optimization after Figure 7): a rejection names the first index of the follower's
    conflicting term, and the leader retries there, skipping the term in one round trip."""
    stores = {
        1: store_with(log_of(*FIGURE7_LEADER), HardState(term=8, commit=3)),
        2: store_with(log_of(*FIGURE7_FOLLOWERS["f"]), HardState(term=7)),
    }
    c = Cluster(3, PAPER, stores=stores)
    c.isolate(3)
    c.campaign(1)
    c.step(1, vote_response(3, 1, term=9, granted=True))
    assert c[1].is_leader()
    c.ready(1)
    probes: list[int] = []
    hints: list[int] = []

    def watch(env: Envelope) -> bool:
        m = env.message
        if isinstance(m, AppendEntriesRequest) and env.dst == 2:
            probes.append(m.last_log_index)
        elif isinstance(m, AppendEntriesResponse) and not m.accepted:
            hints.append(m.next_index)
        return True

    c.stabilize(watch)
    assert hints == [7, 4]  # f's term-3 run starts at 7, its term-2 run at 4
    assert probes[:3] == [10, 6, 3]
    assert c.log(2) == c.log(1)


def test_heartbeat_resumes_stalled_pipeline() -> None:
    """§5.3 ("retries AppendEntries indefinitely"): with one AppendEntries in flight allowed, losing it
    must not stall the follower forever; heartbeats notice and resend."""
    c = Cluster(3, attrs.evolve(GUARDED, max_inflight=1))
    c.elect_and_settle(1)
    c.propose(1, b"x")
    c.ready(1)
    assert c.drop(lambda env: env.dst == 2) == 1  # the AppendEntries carrying x to node 2 is lost
    c.stabilize()
    assert c[1].commit == 2  # node 3 acknowledged
    c.propose(1, b"y")
    assert [m.destination for m in sends_of(c.ready(1), AppendEntriesRequest)] == [3]  # 2's pipe is full
    c.stabilize()
    beats = 0
    while c[1].progress[2].match < 3 and beats < 10:
        c.tick(1)
        c.stabilize()
        beats += 1
    assert c[1].progress[2].match == 3, "node 2 never received x and y"
    assert beats == 2  # the second heartbeat without progress sends the follower back to probing
    assert terms(c.log(2)) == [1, 1, 1]


def state_of(pr: Progress) -> ProgressState:
    """(read through a call: mypy would take an asserted state for the state ever after)"""
    return pr.state


def test_a_link_that_comes_up_gets_the_probe_its_leader_sent_into_the_void_at_once() -> None:
    """A new leader's first AppendEntries to a follower it had no link to was lost; when the link
    comes up the leader sends it again then, not at its next heartbeat (which would carry no entries:
    a probe waits for its answer)."""
    c = Cluster(3, GUARDED)
    c.elect(1)
    assert c.drop(lambda env: env.dst == 2) == 1  # the probe with the term's first entry
    c.stabilize()
    pr = c[1].progress[2]
    c.tick(1, GUARDED.heartbeat_ticks)  # a heartbeat goes (empty: the probe waits for its answer)
    c.flush()
    assert c.drop(lambda env: env.dst == 2) == 1
    c.stabilize()
    assert state_of(pr) is ProgressState.PROBE and pr.paused and pr.stalled_beats == 1
    c[1].link_up(2)
    assert pr.stalled_beats == 0  # the probe's resend is counted from now
    (probe,) = sends_of(c.ready(1), AppendEntriesRequest)
    assert isinstance(probe, AppendEntriesRequest)
    assert probe.destination == 2 and probe.entries == (c.log(1)[-1],)
    c.stabilize()
    assert c.log(2) == c.log(1) and state_of(pr) is ProgressState.REPLICATE


def test_a_replicating_peers_new_link_restarts_from_what_it_acknowledged() -> None:
    c = Cluster(3, GUARDED)
    c.elect_and_settle(1)
    pr = c[1].progress[2]
    assert state_of(pr) is ProgressState.REPLICATE
    c.propose(1, b"x")
    c.ready(1)
    c.drop(lambda env: env.dst == 2)  # in flight on the link that went down
    c[1].link_up(2)
    assert state_of(pr) is ProgressState.PROBE and pr.next == pr.match + 1 and not pr.inflight
    assert [m.destination for m in sends_of(c.ready(1), AppendEntriesRequest)] == [2]
    c.stabilize()
    assert c.log(2) == c.log(1)


def test_a_link_up_changes_nothing_but_for_a_leader_and_a_peer_it_replicates_to() -> None:
    c = Cluster(3, GUARDED)
    c.elect_and_settle(1)
    c[2].link_up(1)  # a follower sends nothing
    c[1].link_up(9)  # not a member
    c[1].progress[3].become_snapshot(1)
    c[1].link_up(3)  # a snapshot's chunk goes again with the heartbeat
    assert not c[2].has_ready() and not sends_of(c.ready(1), AppendEntriesRequest)
