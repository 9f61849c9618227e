"""Rules of the core that mutation testing found untested (docs/verification.md): each test here kills
mutants of garlicfarm/raft/core.py that the rest of the suite let live. Hand-driven cores, no clock."""

from __future__ import annotations

import random

import attrs

from garlicfarm.raft import core as core_module
from garlicfarm.raft.core import SNAPSHOT_NOT_NEEDED, RaftCore
from garlicfarm.raft.types import Role
from garlicfarm.storage.interface import HardState, SnapshotMeta, StoredState
from garlicfarm.wire import (
    AddServerRequest,
    AddServerResponse,
    AppendEntriesRequest,
    AppendEntriesResponse,
    ClientRequest,
    ClusterServer,
    Configuration,
    InstallSnapshotRequest,
    InstallSnapshotResponse,
    JoinClusterRequest,
    JoinClusterResponse,
    LeaveClusterRequest,
    LeaveClusterResponse,
    LogEntry,
    LogPack,
    RemoveServerRequest,
    RemoveServerResponse,
    Request,
    RequestVoteRequest,
    RequestVoteResponse,
    SnapshotSyncRequest,
    SyncLogRequest,
    SyncLogResponse,
)
from tests.raft.harness import (
    GUARDED,
    PAPER,
    Cluster,
    append,
    append_response,
    configuration,
    entry,
    log_of,
    reply_of,
    store_with,
    vote,
)


def follower_with(*terms: int, term: int = 3) -> Cluster:
    """Node 1 of three holds ``terms``; nothing else runs (its peers only exist on paper)."""
    return Cluster(3, PAPER, stores={1: store_with(log_of(*terms), HardState(term, None, 0))})


# ------------------------------------------------------------------------------------ commit, durably


def test_a_follower_saves_the_commit_index_it_learns_and_only_when_it_moves() -> None:
    c = follower_with(1, 1, 1)
    c.ready(1)
    c.step(1, append(2, 1, 3, 3, 1, commit=2))
    rd = c.ready(1)
    assert rd.hard_state == HardState(3, None, 2)
    c.step(1, append(2, 1, 3, 3, 1, commit=2))  # the same commit index again: nothing to save
    assert c.ready(1).hard_state is None
    c.step(1, append(2, 1, 3, 3, 1, commit=1))  # an older one never moves it back
    assert c.ready(1).hard_state is None and c[1].commit == 2


def test_a_leader_saves_the_commit_index_when_it_commits() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    c.propose(1, b"x")
    c.stabilize()
    assert c.stores[1].load().hard_state.commit == c[1].log.last_index == c[1].commit


def test_a_leader_never_commits_an_older_terms_entry_by_counting_replicas() -> None:
    """Figure 8, at the rule itself: entry 2 (term 2) is on a majority, the term-3 entry is not."""
    c = Cluster(3, PAPER, stores={1: store_with(log_of(1, 2), HardState(2, None, 1))})
    c.step(1, append(2, 1, 2, 2, 2, commit=1))  # a peer said it holds entry 2 of term 2
    c.elect(1)
    leader = c[1]
    assert leader.term == 3 and leader.log.last_index == 3  # the term-start entry
    c.drop()
    leader.step(append_response(2, 1, 3, 3, accepted=True))  # entry 2 acknowledged, entry 3 not
    assert leader.commit == 1
    leader.step(append_response(2, 1, 3, 4, accepted=True))  # now the term-3 entry: both commit
    assert leader.commit == 3


# ------------------------------------------------------------------------------------ the leader's view


def test_a_refusal_moves_next_back_one_step_towards_the_hint_but_never_below_match() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    for _ in range(5):
        c.propose(1, b"x")
    c.stabilize()
    leader = c[1]
    pr = leader.progress[2]
    last = leader.log.last_index
    assert pr.match == last and pr.next == last + 1
    leader.step(append_response(2, 1, leader.term, 1, accepted=False))  # a hint below what it acknowledged
    assert pr.next == pr.match + 1
    c.drop()
    pr.match = 2  # an acknowledgement the leader has forgotten: probe down from the top
    pr.next = last + 1
    leader.step(append_response(2, 1, leader.term, last + 5, accepted=False))  # a hint past the end
    assert pr.next == last


def test_an_acknowledgement_of_entries_the_leader_never_sent_is_ignored() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    leader = c[1]
    commit = leader.commit
    leader.step(append_response(2, 1, leader.term, leader.log.last_index + 10, accepted=True))
    assert leader.progress[2].match <= leader.log.last_index and leader.commit == commit


def test_a_probe_client_request_asks_who_leads() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    next_index = c[1].log.last_index + 1
    on_leader = c.client(1, ClientRequest(entries=()))
    on_follower = c.client(2, ClientRequest(entries=()))
    answers = [r.handle for r in c.ready(1).replies]
    c.propose(1, b"later")  # the next commit: nothing more for the probe
    c.stabilize()
    c.tick(1, PAPER.heartbeat_ticks)
    answers += [r.handle for r in c.ready(1).replies]
    assert answers == [on_leader]  # one answer, at once
    yes, no = c.client_replies[on_leader], c.client_replies[on_follower]
    assert isinstance(yes, AppendEntriesResponse) and isinstance(no, AppendEntriesResponse)
    assert (yes.accepted, yes.next_index) == (True, next_index)
    assert (no.accepted, no.destination) == (False, 1)  # a follower names the leader
    assert c[1].log.last_index == c[2].log.last_index  # a probe appends nothing


# ------------------------------------------------------------------------------------ membership


def ask(c: Cluster, i: int, request: Request) -> int:
    """An operator's request to node ``i``; the returned handle keys its answer."""
    handle = c.step(i, request)
    assert handle is not None
    return handle


def add(server: int) -> AddServerRequest:
    return AddServerRequest(entries=(LogEntry(0, ClusterServer(server, f"sim://{server}")),))


def remove(server: int) -> RemoveServerRequest:
    return RemoveServerRequest(entries=(LogEntry(0, ClusterServer(server)),))


def test_adding_a_member_under_another_endpoint_is_refused() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    handle = ask(c, 1, AddServerRequest(entries=(LogEntry(0, ClusterServer(2, "sim://elsewhere")),)))
    c.flush()
    answer = c.client_replies[handle]
    assert isinstance(answer, AddServerResponse) and answer.accepted is False
    assert c[1].voters() == {1, 2, 3}


def test_a_second_change_while_one_is_pending_is_refused_both_ways() -> None:
    c = Cluster(4, PAPER)
    c.elect_and_settle(1)
    c.cut |= {(1, 3), (1, 4)}  # the removal cannot commit yet
    first = ask(c, 1, remove(2))
    c.stabilize()
    assert first not in c.client_replies
    second_add = ask(c, 1, add(5))
    second_remove = ask(c, 1, remove(3))
    c.flush()
    a, r = c.client_replies[second_add], c.client_replies[second_remove]
    assert isinstance(a, AddServerResponse) and a.accepted is False
    assert isinstance(r, RemoveServerResponse) and r.accepted is False
    assert c[1].config.endpoint_of(5) is None and 3 in c[1].voters()


def test_the_status_names_the_last_refused_change_until_a_change_is_accepted() -> None:
    """``change_refused`` is what an operator's console shows as the cause of a refusal: each refusal
    replaces it (adds and removes alike) and an accepted change clears it."""
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)

    def shown() -> object:
        return c[1].status()["change_refused"]

    ask(c, 1, AddServerRequest(entries=(LogEntry(0, ClusterServer(2, "sim://elsewhere")),)))
    assert shown() == {"server": 2, "why": "server 2 is already a member, at sim://2"}
    ask(c, 1, remove(3))
    assert shown() is None
    ask(c, 1, remove(2))  # the removal of 3 is not committed yet
    assert shown() == {
        "server": 2,
        "why": "a configuration change is still being committed; one configuration change at a time",
    }
    c.stabilize()
    assert c[1].voters() == {1, 2}
    ask(c, 1, add(4))
    assert shown() is None


def test_the_invitation_names_the_index_it_will_take_and_the_configuration_it_follows() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    leader = c[1]
    ask(c, 1, add(4))
    join = next(s.message for s in c.ready(1).sends if s.to == 4)
    invitation = join.entries[0].value
    assert isinstance(invitation, Configuration)
    assert invitation.log_index == leader.log.last_index + 1
    assert invitation.last_log_index == leader.config_index
    assert [s.id for s in invitation.servers] == [1, 2, 3, 4]


# ------------------------------------------------------------------------------------ snapshots


def snapshot_chunk(
    last_index: int, offset: int, data: bytes, done: bool, term: int = 3
) -> InstallSnapshotRequest:
    chunk = SnapshotSyncRequest(last_index, 1, configuration(3), offset, data, done)
    return InstallSnapshotRequest(
        source=2,
        destination=1,
        term=term,
        last_log_term=1,
        last_log_index=last_index,
        entries=(LogEntry(1, chunk),),
    )


def test_a_snapshot_at_or_below_the_commit_index_is_not_needed() -> None:
    c = follower_with(1, 1, 1, 1)
    c.step(1, append(2, 1, 3, 4, 1, commit=4))
    c.ready(1)
    handle = c.step(1, snapshot_chunk(3, 0, b"old", True))
    assert handle is not None
    rd = c.ready(1)
    answer = next(r.message for r in rd.replies if r.handle == handle)
    assert isinstance(answer, InstallSnapshotResponse)
    assert (answer.accepted, answer.next_index) == (True, SNAPSHOT_NOT_NEEDED)
    assert rd.snapshot is None and c[1].log.snapshot_index == 0 and c[1].log.last_index == 4


def test_snapshot_chunks_out_of_order_are_answered_with_the_offset_wanted() -> None:
    c = follower_with(1)
    c.step(1, snapshot_chunk(9, 0, b"abc", False))
    c.ready(1)
    late = c.step(1, snapshot_chunk(9, 6, b"ghi", False))  # skips bytes 3..5
    rd = c.ready(1)
    answer = next(r.message for r in rd.replies if r.handle == late)
    assert (answer.accepted, answer.next_index) == (False, 3)
    ok = c.step(1, snapshot_chunk(9, 3, b"def", False))
    answer = next(r.message for r in c.ready(1).replies if r.handle == ok)
    assert (answer.accepted, answer.next_index) == (True, 6)
    # a chunk of another snapshot that does not start at 0 cannot be placed: start over
    other = c.step(1, snapshot_chunk(12, 3, b"xyz", False))
    answer = next(r.message for r in c.ready(1).replies if r.handle == other)
    assert (answer.accepted, answer.next_index) == (False, 0)
    # and the transfer under way is kept: its next chunk still fits
    more = c.step(1, snapshot_chunk(9, 6, b"ghi", False))
    answer = next(r.message for r in c.ready(1).replies if r.handle == more)
    assert (answer.accepted, answer.next_index) == (True, 9)


def test_a_candidate_that_hears_a_snapshot_from_the_leader_of_its_term_follows_it() -> None:
    candidate = Cluster(3, PAPER)
    candidate.campaign(1)
    assert candidate[1].role is Role.CANDIDATE
    term = candidate[1].term
    candidate.step(1, snapshot_chunk(9, 0, b"abc", False, term=term))
    after = candidate[1]
    assert (after.role, after.leader_id, after.term) == (Role.FOLLOWER, 2, term)


def test_an_installed_snapshot_brings_its_configuration_and_commit_index_in_force() -> None:
    """The snapshot's configuration replaces the ones of the log it replaces (statement deletion:
    nothing checked it; a server would count votes and commits in a configuration long gone)."""
    four = Configuration(7, 0, tuple(ClusterServer(i, f"sim://{i}") for i in range(1, 5)))
    grown = LogEntry(1, Configuration(2, 0, configuration(3).servers[:2]))  # {1, 2}: replaced below
    c = Cluster(3, PAPER, stores={1: store_with((entry(1), grown), HardState(3, None, 0))})  # term 3 already
    assert c[1].voters() == {1, 2}
    chunk = SnapshotSyncRequest(9, 2, four, 0, b"state", True)
    c.step(
        1,
        InstallSnapshotRequest(
            source=2, destination=1, term=3, last_log_term=2, last_log_index=9, entries=(LogEntry(2, chunk),)
        ),
    )
    rd = c.ready(1)
    assert (c[1].log.snapshot_index, c[1].voters(), c[1].config_index) == (9, frozenset({1, 2, 3, 4}), 9)
    assert c[1].config_at(9).ids() == {1, 2, 3, 4} and c[1].quorum() == 3
    # a snapshot holds only committed entries: the commit index reaches its end, durably
    assert c[1].commit == 9 and rd.hard_state is not None and rd.hard_state.commit == 9


def test_truncation_rolls_back_a_configuration_it_removes() -> None:
    four = tuple(ClusterServer(i, f"sim://{i}") for i in range(1, 5))
    grown = LogEntry(2, Configuration(2, 0, four))
    c = Cluster(3, PAPER, stores={1: store_with((entry(1), grown), HardState(2, None, 1))})
    assert c[1].voters() == {1, 2, 3, 4}
    c.step(1, append(2, 1, 3, 1, 1, [entry(3)], commit=1))  # a new leader overwrites index 2
    assert c[1].voters() == {1, 2, 3}
    assert c[1].config_index == 0


# ------------------------------------------------------------------------------------ votes


def test_a_pre_vote_is_granted_only_for_a_later_term_and_an_up_to_date_log() -> None:
    c = follower_with(1, 2, term=2)
    core = c[1]
    cases = {
        "same term": vote(2, 1, 2, 2, 2, pre=True),
        "stale log": vote(2, 1, 3, 1, 1, pre=True),
        "good": vote(2, 1, 3, 2, 2, pre=True),
    }
    handles = {name: c.step(1, m) for name, m in cases.items()}
    replies = {r.handle: r.message for r in c.ready(1).replies}
    answers = {name: replies[h] for name, h in handles.items() if h is not None}
    assert {name: a.accepted for name, a in answers.items()} == {
        "same term": False,
        "stale log": False,
        "good": True,
    }
    assert answers["stale log"].term == 2  # a refusal carries our term, a grant the one asked about
    assert answers["good"].term == 3
    assert (core.term, core.voted_for) == (2, None)  # a pre-vote promises and persists nothing


def test_a_refused_real_vote_leaves_the_election_timer_running_and_a_grant_restarts_it() -> None:
    c = follower_with(1, 2, term=2)
    core = c[1]
    c.tick(1, 3)
    c.step(1, vote(2, 1, 3, 1, 1))  # a later term but a stale log: term adopted, vote refused
    assert core.term == 3 and core.voted_for is None
    assert core._election_elapsed == 3
    c.step(1, vote(3, 1, 3, 2, 2))
    granted = c[1]
    assert (granted.voted_for, granted._election_elapsed) == (3, 0)


# ------------------------------------------------------------------------------------ check-quorum


def test_a_leader_that_hears_from_less_than_a_majority_steps_down() -> None:
    c = Cluster(5, GUARDED)
    c.elect_and_settle(1)
    c.isolate(1)
    c.cut -= {(1, 2), (2, 1)}  # one follower still answers: 2 of 5 is not a majority
    for _ in range(3 * GUARDED.election_ticks):
        c.tick(1)
        c.tick(2)
        c.stabilize()
        if not c[1].is_leader():
            break
    assert not c[1].is_leader()


def test_a_leader_that_hears_from_a_majority_stays() -> None:
    c = Cluster(5, GUARDED)
    c.elect_and_settle(1)
    c.cut |= {(1, 4), (4, 1), (1, 5), (5, 1)}  # 1, 2 and 3: a majority
    for _ in range(3 * GUARDED.election_ticks):
        c.tick(1)
        c.stabilize()
    assert c[1].is_leader()


# ------------------------------------------------------------------------------------ joining, leaving


def test_a_server_invited_to_join_follows_the_inviter_and_says_where_its_log_ends() -> None:
    stored = store_with(log_of(1, 1), HardState(1, None, 0))
    c = Cluster(3, PAPER, stores={1: stored})
    core = c[1]
    core.removed = True
    c.tick(1, 4)
    invitation = Configuration(9, 5, (*configuration(3).servers, ClusterServer(4, "sim://4")))
    join = JoinClusterRequest(source=2, destination=1, term=3, entries=(LogEntry(3, invitation),))
    handle = c.step(1, join)
    answer = next(r.message for r in c.ready(1).replies if r.handle == handle)
    assert isinstance(answer, JoinClusterResponse)
    assert (answer.accepted, answer.next_index, answer.destination) == (True, 3, 2)
    assert (core.role, core.leader_id, core.term, core.removed) == (Role.FOLLOWER, 2, 3, False)
    assert core.join_config == invitation and core._election_elapsed == 0


def test_a_server_told_to_leave_stops_following() -> None:
    c = follower_with(1)
    c.step(1, append(2, 1, 3, 1, 1))
    assert c[1].leader_id == 2
    leave = LeaveClusterRequest(source=2, destination=1, term=3, commit_index=7)
    handle = c.step(1, leave)
    answer = next(r.message for r in c.ready(1).replies if r.handle == handle)
    assert isinstance(answer, LeaveClusterResponse) and answer.accepted is True
    gone = c[1]
    # removed by the configuration the leader committed by index 7 (what the operator is told)
    assert (gone.removed, gone.leader_id, gone.removed_by) == (True, None, 7)
    c.tick(1, 4 * PAPER.election_ticks)
    assert c[1].role is Role.FOLLOWER  # a removed server never campaigns


def test_the_removed_server_is_told_to_leave_as_soon_as_its_removal_commits() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    ask(c, 1, remove(3))
    rd = c.ready(1)
    assert not any(isinstance(s.message, LeaveClusterRequest) for s in rd.sends)
    c.deliver(lambda e: e.dst == 2)  # only server 2 gets the configuration: with the leader, a majority
    c.flush()
    c.deliver(lambda e: e.dst == 1 and e.src == 2)
    rd = c.ready(1)
    leaves = [s for s in rd.sends if isinstance(s.message, LeaveClusterRequest)]
    assert [(s.to, s.endpoint) for s in leaves] == [(3, "sim://3")]
    # once: later commits do not tell it again
    c.take(lambda e: e.dst == 3)
    c.propose(1, b"after")
    later: list[object] = []
    for _ in range(3):
        c.tick(1, PAPER.heartbeat_ticks)
        later += [e.message for e in c.take(lambda e: e.dst == 3)]
        c.flush()
        later += [e.message for e in c.take(lambda e: e.dst == 3)]
        c.deliver(lambda e: 3 not in (e.src, e.dst))
        c.flush()
    assert c[1].commit == c[1].log.last_index and later == []


# ------------------------------------------------------------------------------------ batching, answers


def test_appends_are_cut_at_the_byte_budget_but_always_carry_one_entry() -> None:
    per_entry = 13 + 40  # the estimate of an entry of 40 bytes of data
    c = Cluster(3, attrs.evolve(PAPER, max_bytes_per_append=3 * per_entry))
    c.elect_and_settle(1)
    for k in range(7):
        c.propose(1, b"%040d" % k)
    sizes = [len(s.message.entries) for s in c.ready(1).sends if s.to == 2]
    assert sizes == [3, 3, 1]  # exactly three fit
    c.stabilize()
    c.propose(1, b"x" * 500)  # larger than the budget on its own: sent alone, not never
    sizes = [len(s.message.entries) for s in c.ready(1).sends if s.to == 2]
    assert sizes == [1]


def test_each_request_type_is_answered_with_its_own_response_type() -> None:
    core_module._RESPONSE_FOR.clear()  # the table is built on first use: build it here, under test
    expected = {
        ClientRequest: AppendEntriesResponse,
        AppendEntriesRequest: AppendEntriesResponse,
        RequestVoteRequest: RequestVoteResponse,
        AddServerRequest: AddServerResponse,
        RemoveServerRequest: RemoveServerResponse,
        JoinClusterRequest: JoinClusterResponse,
        LeaveClusterRequest: LeaveClusterResponse,
        InstallSnapshotRequest: InstallSnapshotResponse,
        SyncLogRequest: SyncLogResponse,
    }
    for request, response in expected.items():
        assert core_module._response_class(request()) is response, request


# ------------------------------------------------------------------------------------ catching a joiner up


TERM = 1  # the first election's


def sync_answer(next_index: int, accepted: bool = True) -> SyncLogResponse:
    return SyncLogResponse(source=4, destination=1, term=TERM, next_index=next_index, accepted=accepted)


def join_answer(accepted: bool, source: int = 4) -> JoinClusterResponse:
    return JoinClusterResponse(source=source, destination=1, term=TERM, next_index=1, accepted=accepted)


def test_a_joiner_is_caught_up_pack_by_pack_from_index_1_and_joins_within_the_margin() -> None:
    options = attrs.evolve(PAPER, sync_log_entries=4, catch_up_margin=2)
    c = Cluster(3, options)
    c.elect_and_settle(1)
    for k in range(12):
        c.propose(1, b"v%d" % k)
    c.stabilize()
    leader = c[1]
    last = leader.log.last_index
    assert leader.term == TERM and leader.commit == last
    handle = ask(c, 1, add(4))
    c.ready(1)
    leader.step(join_answer(True))
    sent_upto = 0
    while True:
        syncs = [s for s in c.ready(1).sends if isinstance(s.message, SyncLogRequest)]
        assert len(syncs) == 1 and syncs[0].to == 4 and syncs[0].endpoint == "sim://4"
        sync = syncs[0].message
        pack = sync.entries[0].value
        assert isinstance(pack, LogPack)
        assert sync.last_log_index == sent_upto  # from 1, whatever the joiner said its log holds
        assert (sync.commit_index, sync.term) == (leader.commit, TERM)
        assert 1 <= len(pack.entries) <= 4
        sent_upto += len(pack.entries)
        # an answer to an older copy changes nothing: the latest pack is still on its way
        leader.step(sync_answer(sent_upto))
        assert not any(isinstance(s.message, SyncLogRequest) for s in c.ready(1).sends)
        leader.step(sync_answer(sent_upto + 1))
        if 4 in leader.voters():
            break
    # caught up within the margin (2 entries): the configuration with server 4 is appended
    assert sent_upto >= last - 2
    assert leader.config_index == leader.log.last_index and 4 in leader.voters()
    assert handle not in c.client_replies  # answered once that configuration commits
    assert leader.progress[4].match == 0  # proven by its first AppendEntries answer, not the packs


def test_a_joiner_whose_log_contradicts_ours_from_index_1_is_given_up() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    leader = c[1]
    handle = ask(c, 1, add(4))
    c.ready(1)
    leader.step(join_answer(True))
    c.ready(1)
    leader.step(sync_answer(0, accepted=False))
    c.flush()
    answer = c.client_replies[handle]
    assert isinstance(answer, AddServerResponse) and answer.accepted is False
    assert leader.change_refusal() is None and 4 not in leader.voters()


def test_a_refused_invitation_ends_the_join_and_answers_the_operator() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    handle = ask(c, 1, add(4))
    c.ready(1)
    c[1].step(join_answer(False))
    c.flush()
    answer = c.client_replies[handle]
    assert isinstance(answer, AddServerResponse) and answer.accepted is False


def test_join_answers_from_another_server_are_ignored() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    ask(c, 1, add(4))
    c.ready(1)
    c[1].step(join_answer(False, source=2))
    assert c[1].change_refusal() is not None  # still joining server 4


# ------------------------------------------------------------------------------------ what a follower skips


def answer_to(c: Cluster, handle: int | None) -> AppendEntriesResponse:
    return reply_of(c, handle, AppendEntriesResponse)


def test_a_follower_skips_what_it_has_committed_and_appends_the_rest() -> None:
    c = follower_with(1, 1, 1, 1)
    c.step(1, append(2, 1, 3, 4, 1, commit=3))
    c.ready(1)
    assert c[1].commit == 3
    entries = [*log_of(1, 1, 1, 1)[1:], entry(3, b"new")]  # indexes 2..5, from an older prev
    handle = c.step(1, append(2, 1, 3, 1, 1, entries, commit=5))
    answer = answer_to(c, handle)
    assert (answer.accepted, answer.next_index) == (True, 6)
    assert c[1].log.last_index == 5 and c[1].log.term_at(5) == 3 and c[1].commit == 5


def test_an_append_entirely_below_a_snapshot_is_acknowledged_up_to_the_commit_index() -> None:
    snapshot = SnapshotMeta(10, 2, configuration(3))
    stored = StoredState(HardState(3, None, 10), snapshot, 11, ())
    core = RaftCore(1, stored, random.Random(1), configuration(3), PAPER, b"state")
    core.step(append(2, 1, 3, 2, 1, log_of(1, 1, 1)[:3], commit=5), handle=7)
    (reply,) = core.ready().replies
    assert isinstance(reply.message, AppendEntriesResponse)
    assert (reply.message.accepted, reply.message.next_index) == (True, 11)


def test_an_append_that_starts_below_a_snapshot_appends_what_lies_beyond_it() -> None:
    """An AppendEntries resent from before our snapshot (the leader's view of us was older) still
    carries entries we lack: skip the covered part, append the rest (statement deletion: dropping
    the skip made the follower drop the whole message and wait for a resend)."""
    snapshot = SnapshotMeta(10, 2, configuration(3))
    stored = StoredState(HardState(3, None, 10), snapshot, 11, ())
    core = RaftCore(1, stored, random.Random(1), configuration(3), PAPER, b"state")
    entries = [entry(2, b"%d" % i) for i in range(9, 13)]  # indexes 9..12, after prev 8
    core.step(append(2, 1, 3, 8, 2, entries, commit=12), handle=7)
    (reply,) = core.ready().replies
    assert isinstance(reply.message, AppendEntriesResponse)
    assert (reply.message.accepted, reply.message.next_index) == (True, 13)
    assert core.log.last_index == 12 and core.log.slice(11, 13) == entries[2:] and core.commit == 12


def test_a_vote_request_of_our_own_term_does_not_unseat_the_leader() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    term = c[1].term
    handle = c.step(1, vote(2, 1, term, 99, term))
    answer = next(r.message for r in c.ready(1).replies if r.handle == handle)
    assert answer.accepted is False
    assert c[1].is_leader() and c[1].term == term
    c.step(2, vote(3, 2, term, 99, term))  # nor a follower's idea of who leads
    assert c[2].leader_id == 1 and c[2].voted_for == 1


# ------------------------------------------------------------------------------------ snapshot limits


def chunk_answer(c: Cluster, handle: int | None) -> InstallSnapshotResponse:
    return reply_of(c, handle, InstallSnapshotResponse)


def test_a_snapshot_exactly_at_the_commit_index_is_not_needed() -> None:
    c = follower_with(1, 1, 1, 1)
    c.step(1, append(2, 1, 3, 4, 1, commit=4))
    c.ready(1)
    answer = chunk_answer(c, c.step(1, snapshot_chunk(4, 0, b"same", True)))
    assert (answer.accepted, answer.next_index) == (True, SNAPSHOT_NOT_NEEDED)


def test_a_snapshot_larger_than_the_limit_is_refused_and_forgotten() -> None:
    c = Cluster(3, attrs.evolve(PAPER, max_snapshot_bytes=6), stores={1: store_with(log_of(1))})
    answer = chunk_answer(c, c.step(1, snapshot_chunk(9, 0, b"abc", False)))
    assert (answer.accepted, answer.next_index) == (True, 3)
    answer = chunk_answer(c, c.step(1, snapshot_chunk(9, 3, b"def", False)))  # exactly the limit: fine
    assert (answer.accepted, answer.next_index) == (True, 6)
    answer = chunk_answer(c, c.step(1, snapshot_chunk(9, 6, b"g", True)))  # one byte more: refused
    assert (answer.accepted, answer.next_index) == (False, 0)
    assert c[1]._incoming is None and c[1].log.snapshot_index == 0
    answer = chunk_answer(c, c.step(1, snapshot_chunk(9, 3, b"def", False)))  # it starts over from 0
    assert (answer.accepted, answer.next_index) == (False, 0)


def test_a_snapshot_the_state_machine_refuses_is_not_installed() -> None:
    c = follower_with(1)
    seen: list[bytes] = []

    def check(data: bytes) -> str | None:
        seen.append(data)
        return "not this farm's"

    c[1].snapshot_check = check
    c.step(1, snapshot_chunk(9, 0, b"abc", False))
    c.ready(1)
    answer = chunk_answer(c, c.step(1, snapshot_chunk(9, 3, b"def", True)))
    assert (answer.accepted, answer.next_index) == (False, 0)
    assert seen == [b"abcdef"] and c[1]._incoming is None and c[1].log.snapshot_index == 0
