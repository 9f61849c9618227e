"""Replication, snapshots and a follower's checks: rules that mutation testing of
garlicfarm/raft/core.py found untested (docs/verification.md). Hand-driven cores, no clock."""

from __future__ import annotations

import attrs
import pytest

from garlicfarm.raft.core import PROBE_RESEND_BEATS, RaftCore
from garlicfarm.raft.progress import ProgressState
from garlicfarm.raft.types import RaftOptions, Role
from garlicfarm.storage.interface import HardState
from garlicfarm.wire import (
    AppendEntriesRequest,
    AppendEntriesResponse,
    InstallSnapshotRequest,
    InstallSnapshotResponse,
    LogEntry,
    LogPack,
    SnapshotSyncRequest,
    SyncLogRequest,
    SyncLogResponse,
    encode_value,
)
from tests.raft.harness import (
    PAPER,
    Cluster,
    append,
    append_response,
    client_request,
    entry,
    log_of,
    reply_of,
    sends_of,
    store_with,
    vote,
    vote_response,
)
from tests.raft.test_edge_rules import answer_to, ask, follower_with, remove, snapshot_chunk

# ------------------------------------------------------------------------------------ one probe at a time


def test_a_probed_follower_gets_one_append_at_a_time() -> None:
    c = Cluster(3, PAPER)
    c.elect(1)  # its first AppendEntries (a probe to each follower) is on the wire, unanswered
    assert [s for s in c.wire if isinstance(s.message, AppendEntriesRequest)]
    c.propose(1, b"x")
    assert sends_of(c.ready(1), AppendEntriesRequest) == []  # no second probe before the first answer


def test_an_unanswered_probe_goes_again_every_few_beats_with_bare_heartbeats_between() -> None:
    c = Cluster(3, PAPER)
    c.elect(1)
    c.drop()  # the probes are lost (or the followers stopped reading)
    sizes = []
    for _ in range(2 * PROBE_RESEND_BEATS):
        c.tick(1, PAPER.heartbeat_ticks)
        appends = sends_of(c.ready(1), AppendEntriesRequest)
        assert sorted(a.destination for a in appends) == [2, 3]  # one each, every beat
        sizes.append({len(a.entries) for a in appends})
        c.drop()
    # the probe's entry again only at every PROBE_RESEND_BEATS-th beat, a bare heartbeat otherwise
    assert sizes == [
        {1} if (beat + 1) % PROBE_RESEND_BEATS == 0 else {0} for beat in range(2 * PROBE_RESEND_BEATS)
    ]


def test_an_answer_to_a_bare_heartbeat_sends_the_entries_at_once() -> None:
    c = Cluster(3, PAPER)
    c.elect(1)
    c.drop()  # the probes are lost
    c.tick(1, PAPER.heartbeat_ticks)
    assert all(not a.entries for a in sends_of(c.ready(1), AppendEntriesRequest))  # bare heartbeats
    c.deliver()  # to the followers
    c.flush()  # their answers: the link works
    c.deliver()
    appends = sends_of(c.ready(1), AppendEntriesRequest)
    assert sorted(a.destination for a in appends) == [2, 3] and all(len(a.entries) == 1 for a in appends)


# ------------------------------------------------------------------------------------ sending a snapshot


def lagging(options: RaftOptions, data: bytes) -> tuple[Cluster, RaftCore]:
    """Leader 1 elected with 2 while 3 was cut off, two entries committed, its log compacted to its
    commit index with snapshot ``data``; 3 is reachable again, its probe lost."""
    c = Cluster(3, options)
    c.partition([1, 2], [3])
    c.elect(1)
    c.stabilize()
    for k in range(2):
        c.propose(1, b"v%d" % k)
    c.stabilize()
    leader = c[1]
    leader.compact(leader.commit, data)
    c.heal()
    c.drop()
    return c, leader


def chunks_to(c: Cluster, peer: int) -> list[SnapshotSyncRequest]:
    found = []
    for request in sends_of(c.ready(1), InstallSnapshotRequest):
        if request.destination == peer:
            value = request.entries[0].value
            assert isinstance(value, SnapshotSyncRequest)
            found.append(value)
    return found


def chunk_answer(leader: RaftCore, next_index: int, accepted: bool = True) -> InstallSnapshotResponse:
    return InstallSnapshotResponse(
        source=3, destination=1, term=leader.term, next_index=next_index, accepted=accepted
    )


def test_a_follower_whose_entries_were_compacted_gets_the_first_chunk_at_the_next_heartbeat() -> None:
    c, leader = lagging(attrs.evolve(PAPER, snapshot_chunk=2), b"abcdef")
    c.tick(1, PAPER.heartbeat_ticks)
    [chunk] = chunks_to(c, 3)
    assert (chunk.last_log_index, chunk.offset, chunk.data) == (leader.log.snapshot_index, 0, b"ab")
    c.propose(1, b"more")
    assert chunks_to(c, 3) == []  # while a chunk is in flight, nothing more goes to it


def test_each_chunk_answered_is_followed_at_once_by_the_next_and_the_last_by_a_probe() -> None:
    c, leader = lagging(attrs.evolve(PAPER, snapshot_chunk=2), b"abcdef")
    c.tick(1, PAPER.heartbeat_ticks)
    assert [ch.offset for ch in chunks_to(c, 3)] == [0]
    leader.step(chunk_answer(leader, 4))  # an offset no chunk in flight ends at: proves nothing
    assert chunks_to(c, 3) == []
    leader.step(chunk_answer(leader, 2))
    assert [ch.offset for ch in chunks_to(c, 3)] == [2]
    leader.step(chunk_answer(leader, 4))
    [last] = chunks_to(c, 3)
    assert (last.offset, last.done) == (4, True)
    leader.step(chunk_answer(leader, 6))  # installed: probe at the snapshot's end, no chunk again
    rd = c.ready(1)
    assert sends_of(rd, InstallSnapshotRequest) == []
    [probe] = [a for a in sends_of(rd, AppendEntriesRequest) if a.destination == 3]
    assert probe.last_log_index == leader.log.snapshot_index


def test_a_newer_snapshot_taken_during_a_transfer_restarts_it_once() -> None:
    c, leader = lagging(attrs.evolve(PAPER, snapshot_chunk=2), b"abcdef")
    c.tick(1, PAPER.heartbeat_ticks)
    chunks_to(c, 3)
    leader.step(chunk_answer(leader, 2))
    assert [ch.offset for ch in chunks_to(c, 3)] == [2]
    c.propose(1, b"later")
    c.stabilize(lambda env: 3 not in (env.src, env.dst))
    c.drop(lambda env: 3 in (env.src, env.dst))
    leader.compact(leader.commit, b"ghijkl")
    leader.step(chunk_answer(leader, 4))
    [first] = chunks_to(c, 3)
    assert (first.last_log_index, first.offset, first.data) == (leader.log.snapshot_index, 0, b"gh")
    leader.step(chunk_answer(leader, 2))
    [second] = chunks_to(c, 3)
    assert (second.offset, second.data) == (2, b"ij")


def test_a_leader_hearing_only_snapshot_answers_from_its_majority_stays_leader() -> None:
    options = attrs.evolve(PAPER, check_quorum=True, snapshot_chunk=1)
    c, leader = lagging(options, b"x" * 200)
    c.crash(2)
    for _ in range(3 * options.election_ticks):  # one hop per tick: the transfer outlasts the window
        c.tick(1)
        c.flush()
        c.deliver()
    assert leader.is_leader() and c[3].log.snapshot_index == 0


# ------------------------------------------------------------------------------------ a follower's checks


def test_an_append_naming_another_term_at_our_commit_index_is_refused() -> None:
    c = follower_with(1, 1, 1)
    c.step(1, append(2, 1, 3, 3, 1, commit=3))
    c.ready(1)
    handle = c.step(1, append(2, 1, 3, 3, 2, [entry(3)], commit=3))
    answer = answer_to(c, handle)
    assert answer.accepted is False and c[1].log.last_index == 3


def test_the_retry_hint_never_goes_below_the_commit_index() -> None:
    c = follower_with(1, 2, 2, 2, 2)
    c.step(1, append(2, 1, 3, 5, 2, commit=3))
    c.ready(1)
    handle = c.step(1, append(2, 1, 3, 5, 3))  # entry 5 is of term 2 here: conflict
    answer = answer_to(c, handle)
    assert (answer.accepted, answer.next_index) == (False, 4)  # term 2 starts at 2, but 3 is committed


def sync(prev: int, entries: tuple[LogEntry, ...], commit: int) -> SyncLogRequest:
    return SyncLogRequest(
        source=2,
        destination=1,
        term=3,
        last_log_index=prev,
        commit_index=commit,
        entries=(LogEntry(3, LogPack(entries, 0)),),
    )


def test_a_pack_repeating_our_committed_entries_from_the_middle_is_accepted() -> None:
    c = follower_with(1, 1, 1, 1)
    c.step(1, append(2, 1, 3, 4, 1, commit=2))
    c.ready(1)
    same = tuple(c[1].log.slice(2, 5))  # entries 2..4: 2 committed, 3 and 4 not yet
    answer = reply_of(c, c.step(1, sync(1, same, commit=4)), SyncLogResponse)
    assert (answer.accepted, answer.next_index) == (True, 5) and c[1].commit == 4


def test_a_pack_contradicting_our_committed_entries_is_refused_and_status_says_why() -> None:
    c = follower_with(1, 1, 1)
    c.step(1, append(2, 1, 3, 3, 1, commit=3))
    c.ready(1)
    other = tuple(entry(2, b"another farm's") for _ in range(3))
    answer = reply_of(c, c.step(1, sync(0, other, commit=3)), SyncLogResponse)
    assert (answer.accepted, answer.next_index) == (False, 0)
    assert c[1].status()["join_refusal"] == (
        "this server's committed log differs from the leader's; wipe its data"
    )


@pytest.mark.parametrize("kind", ["append", "snapshot chunk"])
def test_hearing_the_leader_restarts_the_whole_election_timeout(kind: str) -> None:
    c = follower_with(1)
    c.tick(1, 3)
    message = append(2, 1, 3, 1, 1) if kind == "append" else snapshot_chunk(9, 0, b"abc", False)
    c.step(1, message)
    c.ready(1)
    core = c[1]
    c.tick(1, core._randomized_timeout - 1)
    assert core.role is Role.FOLLOWER
    c.tick(1)
    assert core.role is not Role.FOLLOWER


# ------------------------------------------------------------------------------------ installing


def test_a_snapshot_covering_a_deposed_leaders_own_entry_answers_its_client() -> None:
    """Leader 1's entry A reached 2 and 3 but not their answers, its entry B nobody. 3 leads, then 2,
    which compacts up to A; 1's log conflicts from its term-1 entries on, down to its commit index, so
    2 sends it the snapshot. 1's log holds A with the snapshot's term: A committed, its client is
    told so."""
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    a = c.propose(1, b"A")
    c.ready(1)
    c.deliver(lambda env: env.src == 1)
    c.flush()
    c.drop()  # the acknowledgements are lost
    b = c.propose(1, b"B")
    c.ready(1)
    c.drop()  # B reaches nobody
    index_a = c[1].log.last_index - 1
    assert c[1].commit < index_a
    c.isolate(1)
    c.elect(3)
    c.stabilize()
    c.elect(2)
    c.stabilize()
    leader = c[2]
    assert leader.commit > index_a
    leader.compact(index_a, b"state")
    c.heal()
    for _ in range(10):
        c.tick(2, PAPER.heartbeat_ticks)
        c.stabilize()
    assert c[1].log.snapshot_index == index_a
    answer_a, answer_b = c.client_replies[a], c.client_replies[b]
    assert isinstance(answer_a, AppendEntriesResponse) and isinstance(answer_b, AppendEntriesResponse)
    assert (answer_a.accepted, answer_a.next_index) == (True, index_a + 1)
    assert (answer_b.accepted, answer_b.next_index) == (False, 0)  # overwritten by 2's term-start entry
    assert c[1]._snapshot_data == b"state"  # what it would send a lagging follower, were it to lead


def test_a_second_snapshot_is_received_after_a_first_one_was_installed() -> None:
    c = follower_with(1)
    assert chunk_answer_to(c, c.step(1, snapshot_chunk(9, 0, b"abc", True))) == (True, 3)
    assert c[1].log.snapshot_index == 9
    assert chunk_answer_to(c, c.step(1, snapshot_chunk(12, 0, b"de", False))) == (True, 2)
    assert chunk_answer_to(c, c.step(1, snapshot_chunk(12, 2, b"f", True))) == (True, 3)
    assert c[1].log.snapshot_index == 12


def chunk_answer_to(c: Cluster, handle: int | None) -> tuple[bool, int]:
    answer = reply_of(c, handle, InstallSnapshotResponse)
    return answer.accepted, answer.next_index


# ------------------------------------------------------------------------------------ compaction


def test_compaction_keeps_a_later_configuration_that_ends_the_log() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    leader = c[1]
    c.propose(1, b"x")
    c.stabilize()
    ask(c, 1, remove(3))
    c.stabilize()
    removal = leader.config_index
    assert removal == leader.log.last_index == leader.applied and leader.voters() == {1, 2}
    leader.compact(removal - 1, b"state")
    assert leader.config_index == removal and leader.voters() == {1, 2}
    # before the snapshot's index: the configuration the snapshot holds, not a later one
    assert leader.config_at(1).ids() == {1, 2, 3}


def test_compacting_at_or_below_the_last_snapshot_is_refused_with_the_applied_index() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    leader = c[1]
    leader.compact(1, b"state")
    with pytest.raises(ValueError, match=r"^can compact up to the applied index 1, not 1$"):
        leader.compact(1, b"again")


def test_logpack_positions_are_counted_anew_after_compaction_and_truncation() -> None:
    def expected(core: RaftCore, index: int) -> int:
        # a JRaft data file record: term (8), type (1), the value
        return sum(9 + len(encode_value(e.value)) for e in core.log.slice(core.log.first_index, index))

    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    leader = c[1]
    for k in range(6):
        c.propose(1, b"v%d" % k)
    c.stabilize()
    assert leader._jraft_data_position(8) == expected(leader, 8)
    leader.compact(5, b"state")
    assert leader._jraft_data_position(8) == expected(leader, 8)
    follower = Cluster(3, PAPER, stores={1: store_with(log_of(1, 1, 1, 1), HardState(2, None, 0))})[1]
    assert follower._jraft_data_position(4) == expected(follower, 4)
    follower.step(append(2, 1, 2, 2, 1, [entry(2, b"longer than before")]), 1)  # truncates 3 and 4
    assert follower._jraft_data_position(4) == expected(follower, 4)


# ------------------------------------------------------------------------------------ refusals, said


def test_why_a_configuration_change_cannot_start_is_said_plainly() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    assert c[2].change_refusal() == "not the leader"
    c.cut |= {(1, 2), (1, 3)}
    ask(c, 1, remove(3))
    assert c[1].change_refusal() == (
        "a configuration change is still being committed; one configuration change at a time"
    )


def test_a_follower_refuses_a_client_request_without_an_index() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    handle = c.client(2, client_request(b"x"))
    c.flush()
    answer = c.client_replies[handle]
    assert isinstance(answer, AppendEntriesResponse)
    assert (answer.accepted, answer.next_index, answer.destination) == (False, 0, 1)


def test_with_negotiated_pre_vote_a_candidate_not_known_to_pre_vote_gets_plain_raft() -> None:
    options = attrs.evolve(PAPER, negotiated_pre_vote=True, check_quorum=True)
    c = Cluster(3, options)
    c.elect_and_settle(1)
    follower = c[2]
    term = follower.term
    c.step(2, vote(3, 2, term + 1, 0, 0))  # 3's handshake said nothing yet; we hear from leader 1
    assert follower.term == term + 1  # its term adopted (JRaft's rules), not refused by the lease


def test_a_follower_whose_hint_falls_in_the_compacted_log_gets_the_first_chunk_at_once() -> None:
    c, leader = lagging(attrs.evolve(PAPER, snapshot_chunk=2), b"abcdef")
    c.tick(1, PAPER.heartbeat_ticks)
    c.ready(1)
    c.drop()  # that chunk is lost; meanwhile 3 answers an old probe: its log ends at 0
    leader.progress[3].become_probe()
    leader.step(append_response(3, 1, leader.term, 1, accepted=False))
    [chunk] = chunks_to(c, 3)
    assert chunk.offset == 0


def test_a_replicating_follower_is_probed_again_only_after_two_silent_heartbeats() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    leader = c[1]
    c.propose(1, b"x")
    c.ready(1)
    c.drop()  # in flight, never answered
    assert leader.progress[2].state is ProgressState.REPLICATE
    c.tick(1, PAPER.heartbeat_ticks)
    c.ready(1)
    assert leader.progress[2].state is ProgressState.REPLICATE
    c.tick(1, PAPER.heartbeat_ticks)
    assert leader.status()["progress"]["2"]["state"] == ProgressState.PROBE.value


def test_a_stalled_pipeline_probes_again_from_just_past_what_the_follower_acknowledged() -> None:
    """Answers lost for two heartbeats: the leader falls back to one AppendEntries at a time, and the
    first one starts right after the follower's acknowledged entry, not past it."""
    from tests.raft.harness import PAPER, Cluster

    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    c.propose(1, b"acknowledged")
    c.stabilize()
    match = c[1].progress[2].match
    c.cut |= {(2, 1)}  # follower 2's answers are lost from now on
    c.propose(1, b"unacknowledged")
    c.stabilize()
    assert c[1].progress[2].match == match and c[1].progress[2].inflight
    c.tick(1)
    c.ready(1)
    c.tick(1)  # the second heartbeat without progress
    probes = [m for m in sends_of(c.ready(1), AppendEntriesRequest) if m.destination == 2 and m.entries]
    assert c[1].progress[2].state is ProgressState.PROBE
    assert [m.last_log_index for m in probes] == [match]


def test_an_accepted_append_answer_of_an_earlier_term_moves_nothing() -> None:
    """An acknowledgement from an older leadership (this server led term 2, lost it, leads term 3)
    speaks of entries that may no longer be in this leader's log: it must not move the follower's
    match index (only the simulator's leader-progress invariant caught the core that let it)."""
    c = Cluster(3, PAPER, stores={1: store_with((), HardState(term=2))})
    c.campaign(1)
    c.step(1, vote_response(2, 1, term=3, granted=True))
    assert c[1].role is Role.LEADER and c[1].term == 3
    c.ready(1)  # its term-start entry (index 1), not answered yet
    match = c[1].progress[2].match
    c.step(1, append_response(2, 1, term=2, next_index=2, accepted=True))
    assert c[1].progress[2].match == match == 0
    c.step(1, append_response(2, 1, term=3, next_index=2, accepted=True))
    assert c[1].progress[2].match == 1  # the same answer in the leader's own term counts
