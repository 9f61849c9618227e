"""Backing off after an election lost by refusal (docs/raft.md, "Backing off").

A candidate whose real votes are refused by voters that had no reason but its log (they did not vouch
for it in a pre-vote round and were not campaigning in its term) waits longer before its next term:
the lower end of its election timeout is multiplied by 4 per such election, up to ``max_backoff_ticks``,
and is back to normal once it hears a leader of its term, grants a vote or wins. With JRaft peers (no
pre-vote) each of its terms made them reset their own timers: without backing off, a lagging node kept
a 2 JRaft + 1 garlicfarm farm leaderless (tests/interop). Only timing changes: terms, votes and the log
rules are untouched.
"""

from __future__ import annotations

import attrs

from garlicfarm.raft.types import PRE_VOTE_MARKER, RaftOptions, Role
from garlicfarm.wire import RequestVoteRequest
from tests.raft.harness import (
    GUARDED,
    PAPER,
    Cluster,
    append,
    log_of,
    sends_of,
    store_with,
    vote,
    vote_response,
)

#: plain votes (as with JRaft peers), 10-20 tick timeouts, backing off up to 50 ticks
PLAIN = attrs.evolve(PAPER, max_backoff_ticks=50)


def role(c: Cluster, i: int) -> Role:
    """Node ``i``'s role now (a function, so that mypy does not narrow it across steps)."""
    return c[i].role


def lagging(options: RaftOptions = PLAIN) -> Cluster:
    """Node 1 holds one entry, nodes 2 and 3 two: they refuse node 1's votes for its log."""
    stores = {1: store_with(log_of(1)), 2: store_with(log_of(1, 1)), 3: store_with(log_of(1, 1))}
    return Cluster(3, options, stores=stores)


def lose_refused(c: Cluster) -> int:
    """Tick node 1 until it campaigns (returns the ticks it waited), deliver its votes: both refused."""
    waited = 0
    while True:
        c.tick(1)
        waited += 1
        rd = c.ready(1)
        if sends_of(rd, RequestVoteRequest):
            break
        assert waited < 1000
    term = c[1].term
    c.stabilize()
    assert role(c, 1) is Role.FOLLOWER and c[1].term == term
    return waited


def test_votes_refused_by_a_majority_back_off() -> None:
    c = lagging()
    lose_refused(c)
    assert c[1].election_backoff == 1
    assert 40 <= c[1]._randomized_timeout < 80  # 4 * 10, randomized as always: [4n, 8n)
    assert c[2].term == c[3].term == c[1].term  # they adopted its term (plain Raft), voted for nobody


def test_the_timeout_grows_up_to_the_bound() -> None:
    c = lagging()
    lose_refused(c)
    waits = [lose_refused(c) for _ in range(6)]
    assert c[1].election_backoff == 7
    assert 40 <= waits[0] < 80  # the wait after one refused election
    assert all(50 <= w < 100 for w in waits[1:])  # 160 capped at 50: [50, 100)
    assert c[1].term == 7  # a term per election, no faster


def test_the_bound_is_never_below_the_election_timeout() -> None:
    c = lagging(attrs.evolve(PLAIN, max_backoff_ticks=5))
    lose_refused(c)
    assert c[1].election_backoff == 1 and 10 <= c[1]._randomized_timeout < 20


def test_hearing_a_leader_resets_it() -> None:
    c = lagging()
    lose_refused(c)
    lose_refused(c)
    assert c[1].election_backoff == 2
    term = c[1].term
    c.step(1, append(2, 1, term, 1, 1))  # a leader of our term
    assert c[1].election_backoff == 0 and 10 <= c[1]._randomized_timeout < 20
    assert c[1].leader_id == 2


def test_an_old_leader_does_not_reset_it() -> None:
    c = lagging()
    lose_refused(c)
    c.step(1, append(2, 1, c[1].term - 1, 1, 1))  # refused: a stale term
    assert c[1].election_backoff == 1


def test_granting_a_vote_resets_it() -> None:
    c = lagging()
    lose_refused(c)
    c.step(1, vote(3, 1, c[1].term + 1, last_index=2, last_term=1))
    assert c[1].voted_for == 3 and c[1].election_backoff == 0 and 10 <= c[1]._randomized_timeout < 20


def test_refusing_a_vote_does_not_reset_it() -> None:
    c = lagging()
    lose_refused(c)
    c.step(1, vote(3, 1, c[1].term + 1, last_index=0, last_term=0))  # a log behind ours
    assert c[1].voted_for is None and c[1].election_backoff == 1


def test_winning_resets_it_and_the_jraft_like_farm_elects() -> None:
    """The lagging node backs off; a node with the longer log campaigns meanwhile and wins with its vote."""
    c = lagging()
    lose_refused(c)
    assert c[1].election_backoff == 1
    c.elect(2)
    assert c[2].is_leader() and c[1].election_backoff == 0  # it granted its vote
    c.stabilize()
    assert c[1].leader_id == 2 and c[1].log.last_index == c[2].log.last_index


def test_a_candidate_that_wins_after_backing_off_is_reset() -> None:
    c = Cluster(3, PLAIN)
    rd = c.campaign(1)
    term = c[1].term
    assert sends_of(rd, RequestVoteRequest)
    c.drop()
    c.step(1, vote_response(2, 1, term, granted=False))
    c.step(1, vote_response(3, 1, term, granted=False))
    assert c[1].election_backoff == 1
    c.elect(1)
    assert c[1].is_leader() and c[1].election_backoff == 0


def test_silence_is_not_a_refusal() -> None:
    """No answers (voters down, or a partition): the candidate times out and campaigns again at the
    usual pace; it backs off only for a refusal."""
    c = Cluster(3, PLAIN)
    c.campaign(1)
    c.drop()
    waited = 0
    while not sends_of(c.ready(1), RequestVoteRequest):
        c.tick(1)
        waited += 1
    assert role(c, 1) is Role.CANDIDATE and c[1].term == 2 and c[1].election_backoff == 0
    assert 10 <= waited <= 20


def test_one_refusal_and_silence_back_off() -> None:
    """One JRaft voter down, the other refusing the lagging node's log: the election cannot be won and
    times out; it backs off (else its terms would keep resetting the live JRaft node's timer)."""
    c = lagging()
    c.crash(3)
    c.campaign(1)
    c.stabilize()
    assert role(c, 1) is Role.CANDIDATE and c[1].election_backoff == 0
    while role(c, 1) is Role.CANDIDATE:
        c.tick(1)
    assert c[1].election_backoff == 1 and c[1].term == 1  # a follower again, no new term yet
    assert not sends_of(c.ready(1), RequestVoteRequest)


def test_a_rivals_refusal_is_a_split_vote() -> None:
    """A voter that asked us for its own vote in our term refuses us because it voted for itself: a
    split vote, not a verdict on our log. The election times out and the next one starts on time."""
    c = Cluster(3, PLAIN)
    c.campaign(1)
    term = c[1].term
    c.drop()
    c.step(1, vote(2, 1, term, last_index=0, last_term=0))  # 2 campaigns in our term too
    c.step(1, vote_response(2, 1, term, granted=False))
    c.ready(1)
    waited = 0
    while not sends_of(c.ready(1), RequestVoteRequest):
        c.tick(1)
        waited += 1
    assert c[1].term == term + 1 and c[1].election_backoff == 0 and waited <= 20


def test_a_pre_vote_vouchers_refusal_is_a_split_vote() -> None:
    """With pre-vote (garlicfarm-only farms) a voter that granted our pre-vote found our log up to date:
    if it then refuses the real vote, it voted for someone else. No backing off."""
    c = Cluster(3, GUARDED)
    c.campaign(1)
    assert role(c, 1) is Role.PRE_CANDIDATE
    c.stabilize(lambda env: getattr(env.message, "commit_index", None) == PRE_VOTE_MARKER or env.dst == 1)
    assert role(c, 1) is Role.CANDIDATE
    term = c[1].term
    c.drop()
    c.step(1, vote_response(2, 1, term, granted=False))
    c.step(1, vote_response(3, 1, term, granted=False))
    assert role(c, 1) is Role.FOLLOWER and c[1].election_backoff == 0


def test_a_failed_pre_vote_round_does_not_back_off() -> None:
    """A lagging node's pre-votes fail without raising anyone's term: nothing to back off from."""
    c = lagging(attrs.evolve(GUARDED, max_backoff_ticks=50))
    for _ in range(3):
        c.campaign(1)
        c.stabilize()
        assert role(c, 1) is Role.FOLLOWER and c[1].term == 0
    assert c[1].election_backoff == 0 and c[2].term == c[3].term == 0
