"""Leadership transfer (Raft dissertation §3.10): the leader stops taking requests, brings a voter up
to date, then sends it TimeoutNow; the voter campaigns at once with a vote the lease does not refuse."""

from __future__ import annotations

import attrs

from garlicfarm.raft.types import TIMEOUT_NOW_MARKER, TRANSFER_VOTE_MARKER, Role, is_vote_grant
from garlicfarm.wire import (
    AddServerResponse,
    AppendEntriesRequest,
    AppendEntriesResponse,
    ClusterServer,
    RequestVoteRequest,
    RequestVoteResponse,
)
from garlicfarm.wire.codec import decode, encode
from garlicfarm.wire.messages import AddServerRequest
from garlicfarm.wire.payloads import LogEntry
from tests.raft.harness import GUARDED, Cluster, Envelope, client_request, reply_of, vote

ET = GUARDED.election_ticks
#: features as a real node negotiates them: a peer that said nothing speaks none
NEGOTIATED = attrs.evolve(GUARDED, negotiated_pre_vote=True)


def _timeout_now(env: Envelope) -> bool:
    m = env.message
    return isinstance(m, RequestVoteRequest) and m.commit_index == TIMEOUT_NOW_MARKER


def _target(c: Cluster) -> int | None:
    return c[1].transfer_target


def _settled(c: Cluster) -> None:
    c.elect_and_settle(1)
    c.propose(1, b"x")
    c.stabilize()


def test_transfer_hands_over_without_an_election_timeout() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    old_term = c[1].term
    assert c[1].transfer_leadership(2) == 2
    c.stabilize()  # no tick: TimeoutNow, a transfer vote, the new leader's first append
    assert c[2].is_leader() and c[2].term == old_term + 1
    assert (c[1].role, c[1].leader_id, c[3].leader_id) == (Role.FOLLOWER, 2, 2)
    assert c[1].transfer_target is None


def _one_behind(lagging: int) -> Cluster:
    """A settled farm led by 1 where ``lagging`` missed the last entry."""
    c = Cluster(3, GUARDED)
    _settled(c)
    c.isolate(lagging)
    c.propose(1, b"behind")
    c.stabilize()
    return c


def test_default_target_is_the_most_caught_up_voter() -> None:
    assert _one_behind(2)[1].transfer_leadership() == 3


def test_a_lagging_target_is_caught_up_before_timeout_now() -> None:
    c = _one_behind(3)
    c.heal()
    assert c[1].transfer_leadership(3) == 3
    c.flush()
    assert not c.take(_timeout_now)  # it lacks entries: no TimeoutNow yet
    for _ in range(ET):  # the lost appends are sent again on heartbeats, then TimeoutNow
        c.tick(1)
        c.stabilize()
    assert c[3].is_leader()
    assert [e.value for e in c.log(3)] == [e.value for e in c.log(1)][: len(c.log(3))]


def test_client_requests_and_changes_are_refused_while_handing_over() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    c.isolate(2)  # TimeoutNow cannot arrive: the transfer stays pending
    c[1].transfer_leadership(2)
    last = c[1].log.last_index
    handle = c.client(1, client_request(b"late"))
    answer = reply_of(c, handle, AppendEntriesResponse)
    assert (answer.accepted, answer.destination) == (False, 2)  # "ask server 2"
    assert c[1].log.last_index == last  # refused, so not appended: a retry elsewhere is no duplicate
    assert c[1].change_refusal() == "handing the leadership over to server 2"
    add = c.step(1, AddServerRequest(entries=(LogEntry(0, ClusterServer(4, "sim://4")),)))
    assert not reply_of(c, add, AddServerResponse).accepted


def test_transfer_is_abandoned_after_an_election_timeout() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    c.isolate(2)
    c[1].transfer_leadership(2)
    c.tick(1, ET - 1)
    assert _target(c) == 2
    c.tick(1)
    assert _target(c) is None and c[1].is_leader()
    handle = c.client(1, client_request(b"again"))
    c.stabilize()
    assert c.client_replies[handle].accepted


def test_a_lost_timeout_now_is_sent_again_with_the_next_heartbeat() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    c[1].transfer_leadership(2)
    c.flush()
    assert c.drop(_timeout_now) == 1
    c.tick(1, GUARDED.heartbeat_ticks)
    c.flush()
    assert len(c.take(_timeout_now)) == 1


def test_timeout_now_only_from_our_leader_in_our_term() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    term = c[1].term
    forged = RequestVoteRequest(
        source=3,
        destination=2,
        term=term,
        last_log_term=term,
        last_log_index=c[1].log.last_index,
        commit_index=TIMEOUT_NOW_MARKER,
    )
    handle = c.step(2, forged)
    answer = reply_of(c, handle, RequestVoteResponse, node=2)
    assert not answer.accepted and answer.next_index == TIMEOUT_NOW_MARKER
    assert c[2].role is Role.FOLLOWER and c[2].term == term


def test_timeout_now_refused_by_a_follower_missing_entries() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    leader = c[1]
    stale = RequestVoteRequest(
        source=1,
        destination=2,
        term=leader.term,
        last_log_term=leader.term,
        last_log_index=leader.log.last_index + 5,
        commit_index=TIMEOUT_NOW_MARKER,
    )
    handle = c.step(2, stale)
    assert not reply_of(c, handle, RequestVoteResponse, node=2).accepted
    assert c[2].role is Role.FOLLOWER


def test_timeout_now_answer_is_not_a_vote() -> None:
    answer = RequestVoteResponse(
        source=2, destination=1, term=3, next_index=TIMEOUT_NOW_MARKER, accepted=True
    )
    assert not is_vote_grant(answer)


def test_the_lease_refuses_a_plain_vote_but_not_a_transfer_vote() -> None:
    """§4.2.3: a follower that hears from its leader ignores a vote request, unless the request says
    the leader handed over (the dissertation's "leadership transfer" flag; here a commitIndex marker)."""
    c = Cluster(3, GUARDED)
    _settled(c)
    term, last = c[1].term, c[1].log.last_index
    plain = c.step(3, vote(2, 3, term + 1, last, term))
    assert not reply_of(c, plain, RequestVoteResponse, node=3).accepted
    assert c[3].term == term
    transfer = c.step(3, vote(2, 3, term + 1, last, term, commit=TRANSFER_VOTE_MARKER))
    assert reply_of(c, transfer, RequestVoteResponse, node=3).accepted
    assert c[3].term == term + 1


def test_not_the_leader_cannot_transfer() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    assert c[2].transfer_leadership() is None


def test_a_peer_without_the_feature_is_never_the_target() -> None:
    c = Cluster(3, NEGOTIATED)
    _settled(c)
    c[1].set_transfer_support(2, False)  # JRaft: it would read the marker as a commit index
    assert c[1].transfer_leadership(2) is None
    assert c[1].transfer_leadership() is None  # server 3 said nothing either
    c[1].set_transfer_support(3, True)
    assert c[1].transfer_leadership() == 3
    c.flush()
    sent = [e.message for e in c.take(_timeout_now)]
    assert [m.destination for m in sent] == [3]


def test_transfer_votes_go_only_to_peers_with_the_feature() -> None:
    c = Cluster(3, NEGOTIATED)
    _settled(c)
    c[1].set_transfer_support(2, True)
    c[2].set_transfer_support(3, False)
    c[2].set_transfer_support(1, True)
    c[1].transfer_leadership(2)
    c.stabilize(lambda env: not isinstance(env.message, RequestVoteRequest) or _timeout_now(env))
    votes = {
        e.dst: e.message.commit_index
        for e in c.take(lambda env: isinstance(env.message, RequestVoteRequest))
        if isinstance(e.message, RequestVoteRequest)
    }
    assert votes == {1: TRANSFER_VOTE_MARKER, 3: c[2].commit}


def test_pending_requests_of_the_old_leader_are_answered_after_the_handover() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    handle = c.client(1, client_request(b"in flight"))
    c.ready(1)  # appended and sent, not yet acknowledged
    c[1].transfer_leadership(2)
    c.stabilize()
    assert c[2].is_leader()
    c.tick(2, GUARDED.heartbeat_ticks)
    c.stabilize()
    assert c.client_replies[handle].accepted


def test_append_entries_from_the_old_leader_after_handover_are_stale() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    term = c[1].term
    c[1].transfer_leadership(2)
    c.stabilize()
    old = AppendEntriesRequest(
        source=1, destination=3, term=term, last_log_term=0, last_log_index=0, commit_index=0
    )
    handle = c.step(3, old)
    assert not reply_of(c, handle, AppendEntriesResponse, node=3).accepted


def test_every_message_of_a_handover_encodes() -> None:
    """The markers must pass the codec's range checks: a TimeoutNow that could not be encoded stopped
    the leader of a real farm (bench/rolling.py found it)."""
    c = Cluster(3, GUARDED)
    _settled(c)
    c[1].transfer_leadership(2)
    for _ in range(20):
        c.flush()
        for env in c.wire:
            assert decode(encode(env.message)) == env.message
        c.deliver()
    assert c[2].is_leader()


def test_the_most_caught_up_voter_wins_even_with_a_higher_id_behind() -> None:
    assert _one_behind(3)[1].transfer_leadership() == 2


def test_among_equally_caught_up_voters_the_lowest_id_is_chosen() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    assert c[1].transfer_leadership() == 2


def test_timeout_now_goes_once_until_the_next_heartbeat() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    c[1].transfer_leadership(2)
    c.flush()
    assert len(c.take(_timeout_now)) == 1
    last = c[1].log.last_index
    c.step(
        1, AppendEntriesResponse(source=2, destination=1, term=c[1].term, next_index=last + 1, accepted=True)
    )
    c.flush()
    assert c.take(_timeout_now) == []  # a late answer from the target does not send it again


def test_only_the_targets_answers_can_trigger_timeout_now() -> None:
    c = Cluster(3, GUARDED)
    _settled(c)
    c.isolate(2)
    c.propose(1, b"2 lacks this")
    c.stabilize()
    c[1].transfer_leadership(2)
    last = c[1].log.last_index
    c.step(
        1, AppendEntriesResponse(source=3, destination=1, term=c[1].term, next_index=last + 1, accepted=True)
    )
    c.flush()
    assert c.take(_timeout_now) == []  # server 3 is caught up, but it is not the target
