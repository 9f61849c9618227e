"""The rules of the Raft paper (§5), one per test, after etcd-io/raft's ``raft_paper_test.go``.

Most tests run the paper's algorithm (:data:`PAPER`: no pre-vote, no check-quorum). Where this core
deliberately differs, the docstring says how the rule was adapted:

* a new leader appends one Configuration entry restating the configuration (its term-start no-op), so
  its first entry of the term is at ``last_index + 1`` before any client entry;
* a stale-term request is answered with a rejection carrying the current term (etcd drops it);
* a rejected AppendEntries carries a hint (``next_index``) instead of only "no".
"""

from __future__ import annotations

import random

import attrs
import pytest

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.types import PRE_VOTE_MARKER, RaftOptions, Role
from garlicfarm.storage.interface import HardState
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.wire import (
    AppendEntriesRequest,
    AppendEntriesResponse,
    Application,
    Configuration,
    LogEntry,
    RequestVoteRequest,
    RequestVoteResponse,
)
from tests.raft.harness import (
    FIGURE7_FOLLOWERS,
    FIGURE7_LEADER,
    GUARDED,
    PAPER,
    Cluster,
    append,
    append_response,
    configuration,
    entry,
    log_of,
    sends_of,
    store_with,
    terms,
    vote,
    vote_response,
)

ET = PAPER.election_ticks


def single(
    log: tuple[LogEntry, ...] = (), hard_state: HardState | None = None, options: RaftOptions = PAPER
) -> Cluster:
    """A 3-server cluster where only node 1 is driven (by hand); it starts from ``log``/``hard_state``."""
    return Cluster(3, options, stores={1: store_with(log, hard_state)})


def make_candidate(c: Cluster, i: int = 1) -> None:
    c.campaign(i)
    assert c[i].role in (Role.CANDIDATE, Role.PRE_CANDIDATE)


# ------------------------------------------------------------------------------------------ §5.1 terms


@pytest.mark.parametrize("role", [Role.FOLLOWER, Role.PRE_CANDIDATE, Role.CANDIDATE, Role.LEADER])
def test_update_term_from_message(role: Role) -> None:
    """§5.1: a server that sees a larger term adopts it and reverts to follower."""
    c = single(options=GUARDED if role is Role.PRE_CANDIDATE else PAPER)
    if role in (Role.CANDIDATE, Role.PRE_CANDIDATE):
        make_candidate(c)
    elif role is Role.LEADER:
        c.elect(1)
    assert c[1].role is role
    c.step(1, append(2, 1, term=5, prev_index=0, prev_term=0))
    assert (c[1].role, c[1].term, c[1].leader_id) == (Role.FOLLOWER, 5, 2)


def test_update_term_from_response() -> None:
    """§5.1: a larger term in a response also makes a leader step down (adopting the term)."""
    c = single()
    c.elect(1)
    c.step(1, append_response(2, 1, term=7, next_index=1, accepted=False))
    assert (c[1].role, c[1].term, c[1].leader_id, c[1].voted_for) == (Role.FOLLOWER, 7, None, None)
    assert c.ready(1).hard_state == HardState(7, None, 0)


def test_reject_stale_term_message() -> None:
    """§5.1: a request with a stale term is rejected. Adapted: etcd drops it; this core answers with a
    rejection carrying its term, so that a deposed leader or candidate learns it is stale."""
    c = single(log_of(1), HardState(term=2))
    c.step(1, append(2, 1, term=1, prev_index=1, prev_term=1, entries=[entry(1)], commit=1))
    c.step(1, vote(3, 1, term=1, last_index=9, last_term=1))
    rd = c.ready(1)
    assert [(type(r.message), r.message.term, r.message.accepted) for r in rd.replies] == [
        (AppendEntriesResponse, 2, False),
        (RequestVoteResponse, 2, False),
    ]
    assert rd.hard_state is None and rd.entries_from is None
    assert (c[1].term, c[1].leader_id, c[1].voted_for, c[1].log.last_index) == (2, None, None, 1)


# ------------------------------------------------------------------------------------------ §5.2 elections


def test_start_as_follower() -> None:
    """§5.2: servers start up as followers."""
    core = RaftCore(1, MemoryLogStore().load(), random.Random(1), configuration(3), PAPER)
    assert (core.role, core.term, core.voted_for, core.leader_id, core.commit) == (
        Role.FOLLOWER,
        0,
        None,
        None,
        0,
    )
    assert not core.has_ready()


def test_leader_bcast_beat() -> None:
    """§5.2: a leader sends empty AppendEntries (heartbeats) to every follower every heartbeat period."""
    c = Cluster(3, attrs.evolve(PAPER, heartbeat_ticks=3))
    c.elect_and_settle(1)
    c.tick(1, 2)
    assert c.ready(1).sends == ()
    c.tick(1)
    beats = sends_of(c.ready(1), AppendEntriesRequest)
    assert sorted(m.destination for m in beats) == [2, 3]
    for m in beats:
        assert (m.term, m.entries, m.last_log_index, m.last_log_term, m.commit_index) == (1, (), 1, 1, 1)


@pytest.mark.parametrize("role", [Role.FOLLOWER, Role.CANDIDATE])
def test_start_election_on_timeout(role: Role) -> None:
    """§5.2: on election timeout a follower (or a candidate, §5.2 "starts a new election") increments
    its term, votes for itself and sends RequestVote to every other server."""
    c = single(log_of(1, 1), HardState(term=1))
    if role is Role.CANDIDATE:
        make_candidate(c)
    assert c[1].role is role
    term = c[1].term
    rd = c.campaign(1)
    assert (c[1].role, c[1].term, c[1].voted_for) == (Role.CANDIDATE, term + 1, 1)
    requests = sends_of(rd, RequestVoteRequest)
    assert sorted(m.destination for m in requests) == [2, 3]
    for m in requests:
        assert (m.term, m.last_log_index, m.last_log_term) == (term + 1, 2, 1)
        assert m.commit_index != PRE_VOTE_MARKER


@pytest.mark.parametrize(
    ("size", "votes", "expected"),
    [
        (1, {}, Role.LEADER),
        (3, {2: True, 3: True}, Role.LEADER),
        (3, {2: True}, Role.LEADER),
        (5, {2: True, 3: True, 4: True, 5: True}, Role.LEADER),
        (5, {2: True, 3: True, 4: True}, Role.LEADER),
        (5, {2: True, 3: True}, Role.LEADER),
        # return to follower state if it receives a vote denial from a majority
        (3, {2: False, 3: False}, Role.FOLLOWER),
        (5, {2: False, 3: False, 4: False, 5: False}, Role.FOLLOWER),
        (5, {2: True, 3: False, 4: False, 5: False}, Role.FOLLOWER),
        # stay in candidate if it does not obtain the majority
        (3, {}, Role.CANDIDATE),
        (5, {2: True}, Role.CANDIDATE),
        (5, {2: False, 3: False}, Role.CANDIDATE),
        (5, {}, Role.CANDIDATE),
    ],
)
def test_leader_election_in_one_round_rpc(size: int, votes: dict[int, bool], expected: Role) -> None:
    """§5.2: a candidate wins with votes from a majority, loses on denials from a majority, and
    otherwise stays a candidate. (Losing makes it a follower at once, as in etcd.)"""
    c = Cluster(size)
    c.campaign(1)
    for voter, granted in votes.items():
        c.step(1, vote_response(voter, 1, term=1, granted=granted))
    assert (c[1].role, c[1].term) == (expected, 1)


@pytest.mark.parametrize(
    ("voted_for", "candidate", "granted"),
    [(None, 2, True), (None, 3, True), (2, 2, True), (3, 3, True), (2, 3, False), (3, 2, False)],
)
def test_follower_vote(voted_for: int | None, candidate: int, granted: bool) -> None:
    """§5.2: a server votes for at most one candidate in a term, first come first served."""
    c = single(hard_state=HardState(term=1, voted_for=voted_for))
    c.step(1, vote(candidate, 1, term=1, last_index=0, last_term=0))
    rd = c.ready(1)
    (reply,) = rd.replies
    assert (reply.message.term, reply.message.accepted) == (1, granted)
    assert c[1].voted_for == (candidate if granted else voted_for)


@pytest.mark.parametrize("term", [1, 2])
def test_candidate_fallback(term: int) -> None:
    """§5.2: a candidate that hears AppendEntries from a leader of at least its term returns to follower."""
    c = single()
    make_candidate(c)
    assert c[1].term == 1
    c.step(1, append(2, 1, term=term, prev_index=0, prev_term=0))
    assert (c[1].role, c[1].term, c[1].leader_id) == (Role.FOLLOWER, term, 2)


def _ticks_to_timeout(core: RaftCore) -> int:
    term, role = core.term, core.role
    for n in range(1, 4 * ET):
        core.tick()
        if (core.term, core.role) != (term, role):
            return n
    raise AssertionError("never timed out")


def test_follower_election_timeout_randomized() -> None:
    """§5.2: election timeouts are chosen randomly from a fixed interval, [ET, 2 ET) here."""
    seen = {
        _ticks_to_timeout(RaftCore(1, MemoryLogStore().load(), random.Random(seed), configuration(3), PAPER))
        for seed in range(300)
    }
    assert seen == set(range(ET, 2 * ET))


def test_candidate_election_timeout_randomized() -> None:
    """§5.2: a candidate picks a fresh random timeout for each new election, from [ET, 2 ET)."""
    core = RaftCore(1, MemoryLogStore().load(), random.Random(7), configuration(3), PAPER)
    _ticks_to_timeout(core)
    assert core.role is Role.CANDIDATE
    seen = {_ticks_to_timeout(core) for _ in range(300)}
    assert seen == set(range(ET, 2 * ET))


def test_followers_election_timeout_nonconflict() -> None:
    """§5.2: randomized timeouts make it rare for several followers to time out at once (etcd's bound:
    under 30% of rounds for 5 servers; about 23% expected)."""
    rounds, conflicts = 1000, 0
    for r in range(rounds):
        cores = [
            RaftCore(i, MemoryLogStore().load(), random.Random(r * 10 + i), configuration(5), PAPER)
            for i in range(1, 6)
        ]
        fired = 0
        while not fired:
            for core in cores:
                core.tick()
            fired = sum(core.role is not Role.FOLLOWER for core in cores)
        conflicts += fired > 1
    assert conflicts / rounds <= 0.3


# ------------------------------------------------------------------------------------------ §5.3 replication


def _settled_leader(size: int = 3) -> Cluster:
    c = Cluster(size)
    c.elect_and_settle(1)
    assert c[1].commit == 1  # its term-start Configuration entry
    return c


def test_leader_start_replication() -> None:
    """§5.3: the leader appends a command to its log, then sends AppendEntries for it to every follower.
    Adapted: index 1 is the leader's term-start Configuration entry, so the command goes to index 2."""
    c = _settled_leader()
    c.propose(1, b"x")
    rd = c.ready(1)
    assert (rd.entries_from, rd.entries) == (2, (entry(1, b"x"),))
    requests = sends_of(rd, AppendEntriesRequest)
    assert sorted(m.destination for m in requests) == [2, 3]
    for m in requests:
        assert (m.term, m.last_log_index, m.last_log_term, m.commit_index) == (1, 1, 1, 1)
        assert m.entries == (entry(1, b"x"),)


def test_leader_commit_entry() -> None:
    """§5.3: once a majority has it the leader commits and applies the entry, and later AppendEntries
    carry the new commit index to the followers, which apply it too."""
    c = _settled_leader()
    c.propose(1, b"x")
    c.stabilize()
    assert c[1].commit == 2
    assert c.applied[1][-1] == (2, entry(1, b"x"))
    c.tick(1)
    beats = sends_of(c.ready(1), AppendEntriesRequest)
    assert [m.commit_index for m in beats] == [2, 2]
    c.stabilize()
    assert [c.applied[i][-1] for i in (2, 3)] == [(2, entry(1, b"x"))] * 2


@pytest.mark.parametrize(
    ("size", "acceptors", "committed"),
    [
        (1, set(), True),
        (3, set(), False),
        (3, {2}, True),
        (3, {2, 3}, True),
        (5, set(), False),
        (5, {2}, False),
        (5, {2, 3}, True),
        (5, {2, 3, 4}, True),
        (5, {2, 3, 4, 5}, True),
    ],
)
def test_leader_acknowledge_commit(size: int, acceptors: set[int], committed: bool) -> None:
    """§5.3: an entry is committed (and the client answered) once the leader has replicated it on a
    majority, itself included."""
    c = _settled_leader(size)
    handle = c.propose(1, b"x")
    c.stabilize(lambda env: {env.src, env.dst} <= {1, *acceptors})
    assert (c[1].commit == 2) is committed
    assert (handle in c.client_replies) is committed


@pytest.mark.parametrize("log", [(), (2,), (1,), (1, 2)])
def test_leader_commit_preceding_entries(log: tuple[int, ...]) -> None:
    """§5.3: committing an entry commits all preceding entries, including those of earlier leaders.
    Adapted: the first entry of the new term is the leader's Configuration entry."""
    stores = {i: store_with(log_of(*log) if i == 1 else (), HardState(term=2)) for i in (1, 2, 3)}
    c = Cluster(3, stores=stores)
    c.elect(1)
    c.propose(1, b"x")
    c.stabilize()
    applied = [e for _, e in c.applied[1]]
    assert terms(applied) == [*log, 3, 3]
    assert isinstance(applied[-2].value, Configuration)
    assert applied[-1] == entry(3, b"x")


@pytest.mark.parametrize(
    ("count", "commit"),
    [(1, 1), (2, 2), (2, 1), (2, 0), (1, 3)],
)
def test_follower_commit_entry(count: int, commit: int) -> None:
    """§5.3: a follower that learns an entry is committed applies it (and everything before it);
    it never commits past what this AppendEntries verified."""
    c = single(hard_state=HardState(term=1))
    ents = [entry(1, b"e%d" % i) for i in range(1, count + 1)]
    c.step(1, append(2, 1, term=1, prev_index=0, prev_term=0, entries=ents, commit=commit))
    rd = c.ready(1)
    expected = min(commit, count)
    assert c[1].commit == expected
    assert rd.committed == tuple(enumerate(ents[:expected], start=1))


@pytest.mark.parametrize(
    ("prev_term", "prev_index", "accepted", "next_index"),
    [
        (0, 0, True, 1),  # the position before the log always matches
        (1, 1, True, 2),
        (2, 2, True, 3),
        (1, 2, False, 2),  # a term mismatch at 2: retry from 2 (index 1 is committed)
        (3, 3, False, 3),  # past the end of our log: retry from our end
    ],
)
def test_follower_check_append(prev_term: int, prev_index: int, accepted: bool, next_index: int) -> None:
    """§5.3: a follower refuses AppendEntries whose (prevLogIndex, prevLogTerm) is not in its log.
    Adapted: the answer's next_index is the last verified index + 1, or on refusal where to retry."""
    c = single(log_of(1, 2), HardState(term=2, commit=1))
    c.step(1, append(2, 1, term=2, prev_index=prev_index, prev_term=prev_term, commit=1))
    (reply,) = c.ready(1).replies
    assert (reply.message.accepted, reply.message.next_index, reply.message.term) == (
        accepted,
        next_index,
        2,
    )


@pytest.mark.parametrize(
    ("prev_index", "prev_term", "new_terms", "log_terms", "unstable_from"),
    [
        (2, 2, (3,), [1, 2, 3], 3),
        (1, 1, (3, 4), [1, 3, 4], 2),  # conflict at 2: truncate there, append
        (0, 0, (1,), [1, 2], None),  # already there: nothing to write, nothing truncated
        (0, 0, (3,), [3], 1),  # conflict at 1: the whole log goes
    ],
)
def test_follower_append_entries(
    prev_index: int,
    prev_term: int,
    new_terms: tuple[int, ...],
    log_terms: list[int],
    unstable_from: int | None,
) -> None:
    """§5.3: a follower deletes an existing entry that conflicts with a new one (same index, different
    term) and all that follow it, then appends the new entries it lacks."""
    c = single(log_of(1, 2), HardState(term=2))
    ents = [entry(t, b"new%d" % (prev_index + k)) for k, t in enumerate(new_terms, start=1)]
    c.step(1, append(2, 1, term=4, prev_index=prev_index, prev_term=prev_term, entries=ents))
    rd = c.ready(1)
    assert rd.entries_from == unstable_from
    assert terms(c.log(1)) == log_terms
    (reply,) = rd.replies
    assert (reply.message.accepted, reply.message.next_index) == (True, prev_index + len(ents) + 1)


def _figure7(follower: tuple[int, ...]) -> Cluster:
    """Leader 1 (Figure 7's log, term 8), follower 2 (one of a-f, term 7); node 3 is a black hole that
    votes for the leader."""
    stores = {
        1: store_with(log_of(*FIGURE7_LEADER), HardState(term=8, commit=len(FIGURE7_LEADER))),
        2: store_with(log_of(*follower), HardState(term=7)),
    }
    c = Cluster(3, stores=stores)
    c.isolate(3)
    c.campaign(1)
    c.step(1, vote_response(3, 1, term=9, granted=True))
    assert c[1].is_leader() and c[1].term == 9
    return c


@pytest.mark.parametrize("name", sorted(FIGURE7_FOLLOWERS))
def test_leader_sync_follower_log(name: str) -> None:
    """§5.3, Figure 7: the leader brings any follower's log into agreement with its own, whatever the
    follower is missing or has extra. Adapted: the leader's term-start entry is index 11."""
    c = _figure7(FIGURE7_FOLLOWERS[name])
    c.propose(1, b"x")
    c.stabilize()
    assert c.log(2) == c.log(1)
    assert terms(c.log(1)) == [*FIGURE7_LEADER, 9, 9]
    c.tick(1)  # the next heartbeat tells the follower the commit index
    c.stabilize()
    assert c[1].commit == c[2].commit == 12


# ------------------------------------------------------------------------------------------ §5.4 safety


@pytest.mark.parametrize(("log", "term"), [((1,), 2), ((1, 2), 3)])
def test_vote_request(log: tuple[int, ...], term: int) -> None:
    """§5.4.1: RequestVote carries the candidate's last log index and last log term."""
    c = single()
    ents = log_of(*log)
    c.step(1, append(2, 1, term=term - 1, prev_index=0, prev_term=0, entries=ents))
    c.ready(1)
    rd = c.campaign(1)
    requests = sends_of(rd, RequestVoteRequest)
    assert sorted(m.destination for m in requests) == [2, 3]
    for m in requests:
        assert (m.term, m.last_log_index, m.last_log_term) == (term, len(log), log[-1])


@pytest.mark.parametrize(
    ("log", "last_term", "last_index", "granted"),
    [
        ((1,), 1, 1, True),  # same last term, same length
        ((1,), 1, 2, True),  # same last term, longer
        ((1, 1), 1, 1, False),  # same last term, shorter
        ((1,), 2, 1, True),  # later last term
        ((1,), 2, 2, True),
        ((1, 1), 2, 1, True),  # later last term beats a longer log
        ((2,), 1, 1, False),  # earlier last term
        ((2,), 1, 2, False),  # earlier last term, even if longer
        ((2, 1), 1, 1, False),
    ],
)
def test_voter(log: tuple[int, ...], last_term: int, last_index: int, granted: bool) -> None:
    """§5.4.1: a voter denies its vote to a candidate whose log is less up to date than its own
    (compare last terms, then lengths)."""
    c = single(log_of(*log), HardState(term=2))
    c.step(1, vote(2, 1, term=3, last_index=last_index, last_term=last_term))
    (reply,) = c.ready(1).replies
    assert (reply.message.term, reply.message.accepted) == (3, granted)


@pytest.mark.parametrize(("acked", "commit"), [(1, 0), (2, 0), (3, 3)])
def test_leader_only_commits_log_from_current_term(acked: int, commit: int) -> None:
    """§5.4.2: a leader never commits an earlier term's entry by counting replicas; it commits its own
    term's entry, and the earlier ones with it. Adapted: index 3 is the term-start entry."""
    stores = {i: store_with(log_of(1, 2) if i == 1 else (), HardState(term=2)) for i in (1, 2, 3)}
    c = Cluster(3, stores=stores)
    c.elect(1)
    assert (c[1].term, c[1].log.last_index, c[1].log.last_term) == (3, 3, 3)
    c.step(1, append_response(2, 1, term=3, next_index=acked + 1, accepted=True))
    assert c[1].commit == commit


def test_applied_entries_are_application_payloads() -> None:
    """§5.3 (sanity): what the leader applies is exactly what the client proposed, in order."""
    c = _settled_leader()
    for data in (b"a", b"b", b"c"):
        c.propose(1, data)
    c.stabilize()
    values = [e.value for _, e in c.applied[1] if isinstance(e.value, Application)]
    assert values == [Application(b"a"), Application(b"b"), Application(b"c")]
