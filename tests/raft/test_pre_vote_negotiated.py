"""Pre-vote only with peers that negotiated it ([raft] pre_vote = "auto", issue 15).

JRaft takes a pre-vote for a real vote (it raises its term), and ignores a refusal that carries a lower
term. So a JRaft peer gets plain Raft: real votes only, and no lease-based refusal of its votes.
"""

from __future__ import annotations

import attrs

from garlicfarm.raft.types import PRE_VOTE_MARKER, Role
from garlicfarm.wire import RequestVoteRequest
from tests.raft.harness import GUARDED, Cluster, sends_of, vote

AUTO = attrs.evolve(GUARDED, negotiated_pre_vote=True)


def test_pre_votes_go_only_to_peers_that_speak_it() -> None:
    """A peer without pre-vote counts as a pre-vote grant (it decides in the real round); the pre-vote
    speakers still decide whether the real round happens when the others cannot make a quorum."""
    c = Cluster(5, AUTO)
    c[1].set_pre_vote_support(2, False)  # a JRaft peer
    for peer in (3, 4, 5):
        c[1].set_pre_vote_support(peer, True)
    rd = c.campaign(1)
    requests = sends_of(rd, RequestVoteRequest)
    assert [(m.destination, m.commit_index) for m in requests] == [(p, PRE_VOTE_MARKER) for p in (3, 4, 5)]
    assert (c[1].role, c[1].term) == (Role.PRE_CANDIDATE, 0)
    c.stabilize(lambda env: env.dst == 3 or env.src == 3)  # one more grant: self, JRaft, 3 = quorum
    assert (c[1].role, c[1].term) == (Role.CANDIDATE, 1)
    real = [e.message for e in c.wire if isinstance(e.message, RequestVoteRequest) and e.message.term == 1]
    # (the one to 3 was delivered by the stabilize above)
    assert sorted(m.destination for m in real if m.commit_index != PRE_VOTE_MARKER) == [2, 4, 5]


def test_without_pre_vote_peers_the_campaign_is_a_plain_one() -> None:
    """With two JRaft peers (2 JRaft + 1 garlicfarm) the pre-vote round is decided at once: the real
    votes are what the JRaft peers decide on, and they never see a pre-vote."""
    c = Cluster(3, AUTO)
    c[1].set_pre_vote_support(2, False)
    c[1].set_pre_vote_support(3, False)
    rd = c.campaign(1)
    requests = sends_of(rd, RequestVoteRequest)
    assert sorted(m.destination for m in requests) == [2, 3]
    assert all(m.commit_index != PRE_VOTE_MARKER and m.term == 1 for m in requests)
    assert (c[1].role, c[1].term, c[1].voted_for) == (Role.CANDIDATE, 1, 1)


def test_without_negotiation_every_peer_is_asked_for_a_pre_vote_whatever_it_said() -> None:
    """``pre_vote = true`` (not "auto"): what a handshake said is not asked; every peer gets a
    pre-vote (statement deletion: the check of the mode was unchecked)."""
    c = Cluster(3, GUARDED)
    c[1].set_pre_vote_support(2, False)
    requests = sends_of(c.campaign(1), RequestVoteRequest)
    assert sorted((m.destination, m.commit_index) for m in requests) == [
        (2, PRE_VOTE_MARKER),
        (3, PRE_VOTE_MARKER),
    ]
    assert (c[1].role, c[1].term) == (Role.PRE_CANDIDATE, 0)


def test_unknown_peers_are_asked_for_pre_votes() -> None:
    """Before a handshake says otherwise a peer is asked for a pre-vote; the transport drops it if the
    connection it would use shows the peer does not speak pre-vote (tests/net)."""
    c = Cluster(3, AUTO)
    requests = sends_of(c.campaign(1), RequestVoteRequest)
    assert all(m.commit_index == PRE_VOTE_MARKER for m in requests) and len(requests) == 2


def test_jraft_vote_in_lease_is_a_plain_vote() -> None:
    """A follower inside its lease refuses a pre-vote speaker's vote without adopting its term
    (test_elections_guarded) but answers a JRaft candidate as plain Raft does: adopt the term, grant if
    the log is up to date. A lower-term refusal would be ignored by JRaft and only stall failover."""
    c = Cluster(3, AUTO)
    c.elect_and_settle(1)
    c[2].set_pre_vote_support(3, False)
    request = vote(3, 2, term=5, last_index=c[2].log.last_index, last_term=c[2].log.last_term)
    c.step(2, request)
    rd = c.ready(2)
    (reply,) = rd.replies
    assert (reply.message.accepted, reply.message.term) == (True, 5)
    assert rd.hard_state is not None and rd.hard_state.voted_for == 3  # persisted before the reply
    assert (c[2].term, c[2].voted_for, c[2].role) == (5, 3, Role.FOLLOWER)


def test_leader_in_lease_steps_down_for_a_jraft_vote() -> None:
    c = Cluster(3, AUTO)
    c.elect_and_settle(1)
    c[1].set_pre_vote_support(3, False)
    c.step(1, vote(3, 1, term=5, last_index=9, last_term=9))
    (reply,) = c.ready(1).replies
    assert (reply.message.accepted, reply.message.term) == (True, 5)
    assert (c[1].role, c[1].term) == (Role.FOLLOWER, 5)


def test_lease_still_refuses_pre_vote_speakers_and_unknown_mode_is_unchanged() -> None:
    for options, support in ((AUTO, True), (GUARDED, False)):
        c = Cluster(3, options)
        c.elect_and_settle(1)
        c[2].set_pre_vote_support(3, support)  # ignored when pre-vote is not negotiated ("on")
        c.step(2, vote(3, 2, term=5, last_index=c[2].log.last_index, last_term=c[2].log.last_term))
        (reply,) = c.ready(2).replies
        assert (reply.message.accepted, reply.message.term) == (False, 1)


def test_stale_log_jraft_candidate_is_refused_but_its_term_is_adopted() -> None:
    """Plain Raft's vote rule still holds: the term moves on, the vote is refused for a stale log."""
    c = Cluster(3, AUTO)
    c.elect_and_settle(1)
    c[2].set_pre_vote_support(3, False)
    c.step(2, vote(3, 2, term=5, last_index=0, last_term=0))
    (reply,) = c.ready(2).replies
    assert (reply.message.accepted, reply.message.term) == (False, 5)
    assert (c[2].term, c[2].voted_for) == (5, None)
