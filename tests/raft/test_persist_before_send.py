"""Persist before send (Raft §5.1 "updated on stable storage before responding to RPCs", Figure 2):
whatever a message promises is in the hard state or entries of the same Ready, so a driver that
persists a Ready before sending it never sends a promise it could forget in a crash."""

from __future__ import annotations

from garlicfarm.raft.types import RaftOptions, Role
from garlicfarm.storage.interface import HardState
from garlicfarm.wire import AppendEntriesRequest, RequestVoteRequest
from tests.raft.harness import (
    GUARDED,
    PAPER,
    Cluster,
    append,
    append_response,
    entry,
    sends_of,
    store_with,
    vote,
    vote_response,
)


def test_vote_grant_and_voted_for_in_same_ready() -> None:
    """Figure 2: the Ready that carries a vote grant carries the hard state recording that vote."""
    c = Cluster(3, PAPER, stores={1: store_with((), HardState(term=1))})
    c.step(1, vote(2, 1, term=2, last_index=0, last_term=0))
    rd = c.ready(1)
    (reply,) = rd.replies
    assert reply.message.accepted
    assert rd.hard_state == HardState(term=2, voted_for=2, commit=0)


def test_a_vote_in_a_term_already_adopted_is_persisted_with_its_grant() -> None:
    """The term alone was durable before (adopted earlier, no vote): the grant's Ready must still carry
    the vote. Without it, a crash after the reply forgets the vote and the node can vote again in the
    same term (the simulator found that double vote when this was left out)."""
    c = Cluster(3, PAPER, stores={1: store_with((), HardState(term=2))})
    c.step(1, vote(2, 1, term=2, last_index=0, last_term=0))
    rd = c.ready(1)
    (reply,) = rd.replies
    assert reply.message.accepted
    assert rd.hard_state == HardState(term=2, voted_for=2, commit=0)
    # asked again (a resent request), the node answers the same and has nothing new to persist
    c.step(1, vote(2, 1, term=2, last_index=0, last_term=0))
    again = c.ready(1)
    assert again.replies[0].message.accepted and again.hard_state is None


def test_pre_vote_grant_persists_nothing() -> None:
    """§9.6: a pre-vote grant promises nothing, so its Ready has no hard state to persist."""
    c = Cluster(3, GUARDED, stores={1: store_with((), HardState(term=1))})
    c.step(1, vote(2, 1, term=2, last_index=0, last_term=0, pre=True))
    rd = c.ready(1)
    (reply,) = rd.replies
    assert reply.message.accepted
    assert rd.hard_state is None


def test_candidate_term_and_self_vote_in_same_ready_as_vote_requests() -> None:
    """Figure 2: a candidate's new term and its vote for itself are in the Ready with its RequestVotes."""
    c = Cluster(3, PAPER)
    rd = c.campaign(1)
    assert len(sends_of(rd, RequestVoteRequest)) == 2
    assert rd.hard_state == HardState(term=1, voted_for=1, commit=0)


def test_pre_candidate_turned_candidate_persists_with_its_vote_requests() -> None:
    """§9.6: after winning the pre-vote, the real campaign's term and self-vote are in the Ready with its
    real RequestVotes (and the pre-vote round had nothing to persist)."""
    c = Cluster(3, GUARDED)
    assert c.campaign(1).hard_state is None
    c.step(1, vote_response(2, 1, term=1, granted=True, pre=True))
    assert c[1].role is Role.CANDIDATE
    rd = c.ready(1)
    requests = sends_of(rd, RequestVoteRequest)
    assert [m.term for m in requests] == [1, 1]
    assert all(m.commit_index == 0 for m in requests)  # real votes, not pre-votes
    assert rd.hard_state == HardState(term=1, voted_for=1, commit=0)


def test_follower_append_reply_in_same_ready_as_entries() -> None:
    """Figure 2: a follower acknowledges entries in the Ready that writes them (and its new term)."""
    c = Cluster(3, PAPER)
    ents = [entry(1, b"a"), entry(1, b"b")]
    c.step(1, append(2, 1, term=1, prev_index=0, prev_term=0, entries=ents))
    rd = c.ready(1)
    assert (rd.entries_from, rd.entries) == (1, tuple(ents))
    assert rd.hard_state is not None and rd.hard_state.term == 1
    (reply,) = rd.replies
    assert (reply.message.accepted, reply.message.next_index) == (True, 3)


def test_leader_counts_its_own_entry_only_once_durable() -> None:
    """§10.2.1 (this design): a leader counts its own log towards commit only after advance()."""
    options = RaftOptions(election_ticks=10, heartbeat_ticks=1, pre_vote=False, check_quorum=False)
    c = Cluster(3, options)
    c.elect_and_settle(1)
    c.propose(1, b"x")
    rd = c[1].ready()  # taken, not yet persisted
    assert (rd.entries_from, [m.destination for m in sends_of(rd, AppendEntriesRequest)]) == (2, [2, 3])
    c.step(1, append_response(2, 1, term=1, next_index=3, accepted=True))
    assert c[1].commit == 1  # node 2 and a leader entry that is not durable: no majority
    c.stores[1].save(rd.hard_state, rd.entries_from, rd.entries)
    c[1].advance(rd)
    assert c[1].commit == 2
