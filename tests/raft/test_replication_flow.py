"""Replication details of this design: the follower's commit bound, the rejection hint, and recovery of
a pipeline whose AppendEntries was lost."""

from __future__ import annotations

import attrs

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
