"""Pre-vote (Raft dissertation §9.6) and check-quorum (§6.2, §4.2.3): a server that was cut off cannot
depose a healthy leader, and a leader that lost its majority steps down."""

from __future__ import annotations

import attrs

from garlicfarm.raft.types import PRE_VOTE_MARKER, Role
from garlicfarm.wire import AppendEntriesRequest, RequestVoteRequest, RequestVoteResponse
from tests.raft.harness import GUARDED, Cluster, Envelope, Predicate, response, sends_of, vote, vote_response

ET = GUARDED.election_ticks
#: pre-vote without check-quorum, so that a follower grants a pre-vote even while it follows a leader
PRE_VOTE_ONLY = attrs.evolve(GUARDED, check_quorum=False)


def _from_to(src: int, dst: int) -> Predicate:
    def check(env: Envelope) -> bool:
        return (env.src, env.dst) == (src, dst)

    return check


def test_pre_candidate_keeps_its_term() -> None:
    """§9.6: on timeout a pre-candidate asks "would you vote for me in term+1?" without changing its
    term or vote, so it has nothing to persist."""
    c = Cluster(3, GUARDED)
    rd = c.campaign(1)
    assert (c[1].role, c[1].term, c[1].voted_for) == (Role.PRE_CANDIDATE, 0, None)
    assert rd.hard_state is None
    requests = sends_of(rd, RequestVoteRequest)
    assert sorted(m.destination for m in requests) == [2, 3]
    assert all((m.term, m.commit_index) == (1, PRE_VOTE_MARKER) for m in requests)


def test_isolated_follower_does_not_raise_its_term_nor_depose_leader_on_return() -> None:
    """§9.6: a partitioned follower times out again and again without raising its term; when it is
    reconnected, the healthy leader keeps its term and leadership."""
    c = Cluster(3, GUARDED)
    c.elect_and_settle(1)
    term = c[1].term
    c.isolate(3)
    c.tick_all(10 * ET)
    assert (c[3].role, c[3].term) == (Role.PRE_CANDIDATE, term)
    assert c[1].is_leader()
    c.heal()
    c.tick_all(3 * ET)
    assert c[1].is_leader() and c[1].term == term
    assert [(c[i].role, c[i].term, c[i].leader_id) for i in (2, 3)] == [(Role.FOLLOWER, term, 1)] * 2


def test_late_pre_vote_grant_is_not_a_vote() -> None:
    """§9.6: a pre-vote grant that arrives after the pre-candidate became a candidate is not counted as
    a vote in the real election (it promised nothing and persisted nothing)."""
    c = Cluster(3, GUARDED)
    c.campaign(1)
    c.stabilize(lambda env: isinstance(env.message, RequestVoteRequest))  # both grants now on the wire
    grants = c.take(lambda env: isinstance(env.message, RequestVoteResponse))
    assert [(e.src, response(e).accepted, response(e).next_index) for e in grants] == [
        (2, True, PRE_VOTE_MARKER),
        (3, True, PRE_VOTE_MARKER),
    ]
    c.deliver_one(grants[0])
    assert (c[1].role, c[1].term) == (Role.CANDIDATE, 1)
    c.deliver_one(grants[1])  # term 1 = the candidate's term: it must still not count
    assert (c[1].role, c[1].term) == (Role.CANDIDATE, 1)
    c.stabilize(lambda env: isinstance(env.message, RequestVoteRequest | RequestVoteResponse))
    assert c[1].is_leader()  # the real votes do count


def test_late_real_vote_grant_is_not_a_pre_vote() -> None:
    """§9.6: a real vote granted for an earlier election of this term does not count as a pre-vote (it
    says nothing about the next term)."""
    c = Cluster(3, GUARDED)
    c.campaign(1)
    c.step(1, vote_response(2, 1, term=1, granted=True, pre=True))
    assert (c[1].role, c[1].term) == (Role.CANDIDATE, 1)
    c.wire.clear()
    c.campaign(1)  # the term-1 election timed out: back to pre-voting, for term 2
    assert (c[1].role, c[1].term) == (Role.PRE_CANDIDATE, 1)
    c.step(1, vote_response(3, 1, term=1, granted=True))  # node 3's term-1 vote, late
    assert (c[1].role, c[1].term) == (Role.PRE_CANDIDATE, 1)


def test_late_pre_vote_grant_does_not_change_term() -> None:
    """§9.6: a pre-vote grant that arrives after its sender rejoined the leader changes nothing: the
    grant's term is one nobody is in, so adopting it would disrupt the healthy leader."""
    c = Cluster(3, PRE_VOTE_ONLY)
    c.elect_and_settle(1)
    c.wire.clear()
    c.campaign(3)
    assert (c[3].role, c[3].term) == (Role.PRE_CANDIDATE, 1)
    c.drop(_from_to(3, 1))
    c.deliver(_from_to(3, 2))
    c.ready(2)
    (grant,) = c.take(_from_to(2, 3))
    assert (response(grant).term, response(grant).accepted) == (2, True)
    c.tick(1)  # the leader's heartbeat reaches node 3 before the grant does
    c.ready(1)
    c.deliver(_from_to(1, 3))
    assert (c[3].role, c[3].term, c[3].leader_id) == (Role.FOLLOWER, 1, 1)
    c.deliver_one(grant)
    assert (c[3].role, c[3].term, c[3].leader_id) == (Role.FOLLOWER, 1, 1)
    c.tick_all(2)
    assert c[1].is_leader() and c[1].term == 1


def test_check_quorum_leader_steps_down_after_election_timeout() -> None:
    """§6.2: a leader that has not heard from a majority for an election timeout steps down (keeping its
    term). Its voters were heard from when it won: they count for the first check, so cut off at once,
    it steps down at the second, two election timeouts after it won."""
    c = Cluster(3, GUARDED)
    c.elect(1)
    c.isolate(1)
    c.tick(1, 2 * ET - 1)
    assert c[1].is_leader()
    c.tick(1)
    assert (c[1].role, c[1].term, c[1].leader_id) == (Role.FOLLOWER, 1, None)


def test_a_new_leaders_voters_count_for_its_first_quorum_check_only() -> None:
    """Over slow links (I2P) a new leader's first AppendEntries may be answered after more than an
    election timeout: its voters keep it in office through the first check, not beyond."""
    c = Cluster(3, GUARDED)
    c.elect(1)
    assert any(pr.recent_active for pr in c[1].progress.values())
    c.isolate(1)
    c.tick(1, ET)
    assert c[1].is_leader()  # the first window: its voters were heard from
    assert not any(pr.recent_active for pr in c[1].progress.values())
    c.tick(1, ET)
    assert c[1].role is Role.FOLLOWER  # nothing heard in the second


def test_only_granted_votes_count_for_the_first_quorum_check() -> None:
    c = Cluster(3, GUARDED)
    core = c[1]
    core._votes = {2: True, 3: False}  # as a candidate's tally stands when it wins
    core._become_leader()
    assert {peer: pr.recent_active for peer, pr in core.progress.items()} == {2: True, 3: False}


def test_check_quorum_counts_followers_heard_within_last_timeout() -> None:
    """§6.2: followers heard from in the last election timeout keep the leader in office for one more
    check; cut off from them, it is a follower within two election timeouts."""
    c = Cluster(3, GUARDED)
    c.elect_and_settle(1)
    c.isolate(1)
    c.tick(1, ET)
    assert c[1].is_leader()
    c.tick(1, ET)
    assert (c[1].role, c[1].term) == (Role.FOLLOWER, 1)


def test_without_check_quorum_a_cut_off_leader_stays_leader() -> None:
    """§6.2 (contrast): the paper's leader has no such check; cut off, it believes it leads forever."""
    c = Cluster(3, attrs.evolve(GUARDED, check_quorum=False))
    c.elect(1)
    c.isolate(1)
    c.tick(1, 10 * ET)
    assert c[1].is_leader()


def test_follower_in_lease_rejects_vote_without_adopting_term() -> None:
    """§4.2.3: a follower that heard from its leader within election_ticks refuses a vote request, even
    of a higher term, and does not adopt that term; once the lease is over it votes normally."""
    c = Cluster(3, GUARDED)
    c.elect_and_settle(1)
    request = vote(3, 2, term=5, last_index=c[2].log.last_index, last_term=c[2].log.last_term)
    c.step(2, request)
    rd = c.ready(2)
    (reply,) = rd.replies
    assert (reply.message.accepted, reply.message.term) == (False, 1)
    assert rd.hard_state is None
    assert (c[2].term, c[2].voted_for, c[2].leader_id) == (1, 1, 1)  # still its term-1 vote

    c.wire.clear()
    c.tick(2, ET)  # no heartbeat arrives: the lease runs out
    c.ready(2)
    c.step(2, request)
    (reply,) = c.ready(2).replies
    assert (reply.message.accepted, reply.message.term) == (True, 5)
    assert (c[2].term, c[2].voted_for) == (5, 3)


def test_leader_in_lease_ignores_higher_term_vote_request() -> None:
    """§4.2.3, §6.2: with check-quorum a leader refuses a higher-term vote request without stepping down."""
    c = Cluster(3, GUARDED)
    c.elect_and_settle(1)
    c.step(1, vote(3, 1, term=5, last_index=9, last_term=9))
    (reply,) = c.ready(1).replies
    assert (reply.message.accepted, reply.message.term) == (False, 1)
    assert c[1].is_leader() and c[1].term == 1


def test_pre_vote_answer_carries_marker() -> None:
    """§9.6 (this design's wire form): a pre-vote answer carries PRE_VOTE_MARKER in next_index and, if
    granted, the term asked about, without the voter changing its term."""
    c = Cluster(3, GUARDED)
    c.step(2, vote(1, 2, term=1, last_index=0, last_term=0, pre=True))
    rd = c.ready(2)
    (reply,) = rd.replies
    assert (reply.message.accepted, reply.message.term, reply.message.next_index) == (
        True,
        1,
        PRE_VOTE_MARKER,
    )
    assert rd.hard_state is None
    assert (c[2].term, c[2].voted_for) == (0, None)


def test_leader_heartbeat_ends_pre_candidacy() -> None:
    """§9.6: a pre-candidate that hears from a leader of its term goes back to following it."""
    c = Cluster(3, GUARDED)
    c.elect_and_settle(1)
    c.campaign(3)
    assert c[3].role is Role.PRE_CANDIDATE
    c.wire.clear()
    c.tick(1)
    beats = sends_of(c.ready(1), AppendEntriesRequest)
    assert beats
    c.deliver(lambda env: env.dst == 3)
    assert (c[3].role, c[3].leader_id, c[3].term) == (Role.FOLLOWER, 1, 1)
