"""Terms, votes and stepping down: rules that mutation testing of garlicfarm/raft/core.py found
untested (docs/verification.md). Hand-driven cores, no clock."""

from __future__ import annotations

import attrs
import pytest

from garlicfarm.raft.types import Role
from garlicfarm.wire import (
    AddServerRequest,
    AddServerResponse,
    AppendEntriesRequest,
    ClusterServer,
    LeaveClusterRequest,
    LeaveClusterResponse,
    LogEntry,
    RequestVoteResponse,
)
from tests.raft.harness import PAPER, Cluster, append, sends_of, vote, vote_response
from tests.raft.test_edge_rules import ask, follower_with, remove
from tests.raft.test_join_edges import joining


def test_a_candidate_that_steps_down_in_its_own_term_keeps_its_vote() -> None:
    c = Cluster(3, PAPER)
    c.campaign(1)
    core = c[1]
    term = core.term
    assert (core.role, core.voted_for) == (Role.CANDIDATE, 1)
    c.step(1, append(2, 1, term, 0, 0))  # 2 won this term
    assert (core.role, core.term, core.voted_for) == (Role.FOLLOWER, term, 1)
    c.ready(1)
    assert c.stores[1].load().hard_state.voted_for == 1


def test_a_leader_stepping_down_during_a_join_answers_the_operator_at_once() -> None:
    c, leader, handle = joining()
    leader.step(vote_response(2, 1, leader.term + 1, granted=False))  # a later term: step down
    c.flush()
    answer = c.client_replies[handle]
    assert isinstance(answer, AddServerResponse) and answer.accepted is False
    assert leader.status()["joining"] is None and leader.change_refusal() == "not the leader"


def test_a_leader_that_steps_down_waits_a_whole_election_timeout() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    core = c[1]
    core.step(vote_response(2, 1, core.term + 1, granted=False))
    assert core.role is Role.FOLLOWER
    c.tick(1, core._randomized_timeout - 1)
    assert core.role is Role.FOLLOWER
    c.tick(1)
    assert core.status()["role"] == Role.CANDIDATE.value


def test_a_candidate_refused_by_a_later_term_adopts_it() -> None:
    c = Cluster(3, PAPER)
    c.campaign(1)
    core = c[1]
    later = core.term + 5
    core.step(vote_response(2, 1, later, granted=False))
    assert (core.role, core.term, core.voted_for) == (Role.FOLLOWER, later, None)


def test_a_pre_candidate_refused_by_a_later_term_adopts_it() -> None:
    c = Cluster(3, attrs.evolve(PAPER, pre_vote=True))
    c.campaign(1)
    core = c[1]
    assert core.role is Role.PRE_CANDIDATE
    later = core.term + 5
    core.step(vote_response(2, 1, later, granted=False, pre=True))
    assert (core.role, core.term) == (Role.FOLLOWER, later)


def test_a_pre_vote_grant_for_another_term_is_not_counted() -> None:
    c = Cluster(3, attrs.evolve(PAPER, pre_vote=True))
    c.campaign(1)
    core = c[1]
    term = core.term
    core.step(vote_response(2, 1, term + 2, granted=True, pre=True))  # not the term it would campaign in
    assert (core.role, core.term) == (Role.PRE_CANDIDATE, term)
    core.step(vote_response(2, 1, term + 1, granted=True, pre=True))  # this one is: a majority, it campaigns
    assert (core.role, core.term) == (Role.CANDIDATE, term + 1)


def test_a_candidate_adopting_a_later_term_from_a_vote_request_starts_its_timeout_over() -> None:
    """A follower keeps its timer on such a request (only a granted vote restarts it); a candidate
    steps down into a new timeout."""
    c = follower_with(1, 1, 1, term=3)
    c.campaign(1)
    core = c[1]
    c.tick(1, 3)
    term = core.term
    c.step(1, vote(2, 1, term + 1, 1, 1))  # a shorter log: refused, but the term is adopted
    assert (core.role, core.term, core.voted_for) == (Role.FOLLOWER, term + 1, None)
    c.tick(1, core._randomized_timeout - 1)
    assert core.role is Role.FOLLOWER


def test_answers_that_name_no_index_carry_zero() -> None:
    c = follower_with(1)
    handle = c.step(1, LeaveClusterRequest(source=2, destination=1, term=3))
    [reply] = [r.message for r in c.ready(1).replies if r.handle == handle]
    assert isinstance(reply, LeaveClusterResponse) and (reply.accepted, reply.next_index) == (True, 0)
    guarded = Cluster(3, attrs.evolve(PAPER, check_quorum=True))
    guarded.elect_and_settle(1)
    handle = guarded.step(2, vote(3, 2, guarded[2].term + 1, 9, 9))  # refused: 2 hears from a leader
    [reply] = [r.message for r in guarded.ready(2).replies if r.handle == handle]
    assert isinstance(reply, RequestVoteResponse) and (reply.accepted, reply.next_index) == (False, 0)


def test_a_request_without_a_handle_is_refused_plainly() -> None:
    core = Cluster(3, PAPER)[1]
    with pytest.raises(ValueError, match=r"^a request needs a handle to reply to$"):
        core.step(append(2, 1, 3, 0, 0))


def test_appends_over_the_byte_budget_carry_one_entry_each() -> None:
    per_entry = 13 + 40
    c = Cluster(3, attrs.evolve(PAPER, max_bytes_per_append=per_entry + 10))
    c.elect_and_settle(1)
    for k in range(3):
        c.propose(1, b"%040d" % k)
    sizes = [len(s.entries) for s in sends_of(c.ready(1), AppendEntriesRequest) if s.destination == 2]
    assert sizes == [1, 1, 1]


def test_a_refused_change_is_answered_with_the_leaders_term_and_no_index() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    handle = ask(c, 1, AddServerRequest(entries=(LogEntry(0, ClusterServer(2, "sim://elsewhere")),)))
    c.flush()
    answer = c.client_replies[handle]
    assert isinstance(answer, AddServerResponse)
    assert (answer.accepted, answer.next_index, answer.term, answer.destination) == (False, 0, c[1].term, 1)


def test_a_leader_outside_its_configuration_counts_only_the_new_voters_for_check_quorum() -> None:
    """Leader 1 removed itself; the configuration {2, 3} cannot commit while 3 is down. Hearing from 2
    alone is not a majority of {2, 3}: within two election timeouts it steps down."""
    options = attrs.evolve(PAPER, check_quorum=True)
    c = Cluster(3, options)
    c.elect_and_settle(1)
    c.crash(3)
    ask(c, 1, remove(1))
    leader = c[1]
    assert leader.voters() == {2, 3} and leader.is_leader()
    for _ in range(2 * options.election_ticks):  # 3 was heard within the first window
        c.tick(1)
        c.stabilize()
    assert not leader.is_leader()
