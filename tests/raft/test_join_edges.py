"""Catching a joining server up, and the configuration entries membership changes append: rules that
mutation testing of garlicfarm/raft/core.py found untested (docs/verification.md). Hand-driven cores."""

from __future__ import annotations

import attrs
import pytest

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.types import RaftOptions, Role
from garlicfarm.wire import (
    AddServerResponse,
    ClusterServer,
    Configuration,
    InstallSnapshotRequest,
    InstallSnapshotResponse,
    JoinClusterRequest,
    LogEntry,
    LogPack,
    RemoveServerResponse,
    SnapshotSyncRequest,
    SyncLogRequest,
)
from tests.raft.harness import PAPER, Cluster, Envelope, configuration, sends_of
from tests.raft.test_edge_rules import TERM, add, ask, join_answer, remove, sync_answer


def leading(options: RaftOptions, entries: int, uncommitted: int = 0, data: bytes = b"v%d") -> Cluster:
    """Leader 1 of three (term 1) with ``entries`` proposals committed after its term-start entry, then
    ``uncommitted`` more that no follower acknowledges."""
    c = Cluster(3, options)
    c.elect_and_settle(1)
    for k in range(entries):
        c.propose(1, data % k)
    c.stabilize()
    assert c[1].term == TERM and c[1].commit == c[1].log.last_index == entries + 1
    if uncommitted:
        c.cut |= {(2, 1), (3, 1)}
        for k in range(uncommitted):
            c.propose(1, b"u%d" % k)
        c.stabilize()
        assert c[1].log.last_index == c[1].commit + uncommitted
    return c


def joining(
    options: RaftOptions = PAPER, entries: int = 0, uncommitted: int = 0, data: bytes = b"v%d"
) -> tuple[Cluster, RaftCore, int]:
    """:func:`leading`, then asked to add server 4; the invitation is drained. Returns the cluster,
    the leader and the operator's handle."""
    c = leading(options, entries, uncommitted, data)
    handle = ask(c, 1, add(4))
    c.ready(1)
    c.drop(to_joiner)
    return c, c[1], handle


def to_joiner(env: Envelope) -> bool:
    return env.dst == 4  # server 4 exists only as the tests' answers


def syncs(c: Cluster) -> list[SyncLogRequest]:
    found = sends_of(c.ready(1), SyncLogRequest)
    assert all(isinstance(s, SyncLogRequest) for s in found)
    return found  # type: ignore[return-value]


def the_sync(c: Cluster) -> SyncLogRequest:
    found = syncs(c)
    assert len(found) == 1, found
    return found[0]


def pack_of(sync: SyncLogRequest) -> LogPack:
    pack = sync.entries[0].value
    assert isinstance(pack, LogPack)
    return pack


def still_joining(leader: RaftCore) -> bool:
    return bool(leader.status()["joining"] == 4)


# ------------------------------------------------------------------------------------ refusals, old answers


def test_a_joiner_refusing_a_later_pack_is_sent_it_again_from_just_past_what_it_acknowledged() -> None:
    c, leader, handle = joining(attrs.evolve(PAPER, sync_log_entries=1, catch_up_margin=0), entries=6)
    leader.step(join_answer(True))
    assert the_sync(c).last_log_index == 0
    leader.step(sync_answer(2))  # entry 1 acknowledged
    assert the_sync(c).last_log_index == 1
    # refused, with a hint past anything sent (its log is longer, or it says so): the same pack again,
    # neither the one before nor one past the hint
    leader.step(sync_answer(50, accepted=False))
    again = the_sync(c)
    assert again.last_log_index == 1 and [e.term for e in pack_of(again).entries] == [TERM]
    assert still_joining(leader) and handle not in c.client_replies


def test_an_answer_to_an_older_pack_acknowledges_only_what_it_names() -> None:
    c, leader, _ = joining(attrs.evolve(PAPER, sync_log_entries=2, catch_up_margin=0), entries=6)
    leader.step(join_answer(True))
    assert len(pack_of(the_sync(c)).entries) == 2  # entries 1 and 2
    leader.step(sync_answer(2))  # an answer naming entry 1 only (an older copy): wait for the latest
    assert syncs(c) == []
    leader.step(sync_answer(0, accepted=False))  # then the latest is refused: resend from entry 2
    assert the_sync(c).last_log_index == 1


def test_join_answers_while_no_join_is_in_progress_are_ignored() -> None:
    c, leader, handle = joining()
    leader.step(join_answer(False))  # refused: the join ends
    c.flush()
    assert isinstance(c.client_replies[handle], AddServerResponse)
    for late in (join_answer(True), sync_answer(3), sync_answer(0, accepted=False)):
        leader.step(late)
        assert not leader.has_ready() and leader.status()["joining"] is None
    follower = c[2]
    follower.step(sync_answer(3))  # and a follower never acts on one
    assert not follower.has_ready()


def test_a_join_is_given_up_only_after_join_timeout_ticks_of_silence_since_the_last_answer() -> None:
    options = attrs.evolve(PAPER, join_timeout_ticks=8, heartbeat_ticks=1)
    c, leader, handle = joining(options, entries=3)
    leader.step(join_answer(True))
    c.ready(1)
    c.tick(1, 5)
    leader.step(sync_answer(2))  # an answer restarts the count
    c.ready(1)
    c.tick(1, 8)
    c.flush()
    assert still_joining(leader) and handle not in c.client_replies
    c.tick(1)
    c.flush()
    assert not still_joining(leader)
    answer = c.client_replies[handle]
    assert isinstance(answer, AddServerResponse) and answer.accepted is False


@pytest.mark.parametrize(("tick_seconds", "waited"), [(None, "8 ticks"), (0.25, "2 s"), (1.5, "12 s")])
@pytest.mark.parametrize("accepted", [False, True])
def test_a_given_up_join_names_its_cause_and_how_long_it_waited(
    tick_seconds: float | None, waited: str, accepted: bool
) -> None:
    """The cause an operator sees (``change_refused``): no answer to the invitation, or no progress
    in the catch-up, after join_timeout_ticks given in seconds when the driver says how long a tick
    is."""
    options = attrs.evolve(PAPER, join_timeout_ticks=8, heartbeat_ticks=1)
    c, leader, _ = joining(options, entries=3)
    leader.tick_seconds = tick_seconds
    if accepted:
        leader.step(join_answer(True))
    c.ready(1)
    c.tick(1, 9)
    c.flush()
    assert not still_joining(leader)
    why = (
        f"the catch-up of server 4 timed out: no progress in {waited} (at index 0 of {leader.log.last_index})"
        if accepted
        else f"server 4 did not answer the invitation to join within {waited}: it is unreachable at sim://4"
        " (not running, wrong endpoint, or refusing our connection: its log says which)"
    )
    assert leader.status()["change_refused"] == {"server": 4, "why": why}


def test_a_join_the_joiner_ends_names_its_cause() -> None:
    """Declining the invitation, or refusing the catch-up from index 1 (its log is another farm's):
    the cause an operator sees says which, and what to do."""
    c, leader, _ = joining(entries=3)
    leader.step(join_answer(False))
    assert leader.status()["change_refused"] == {
        "server": 4,
        "why": "server 4 declined the invitation to join (its log says why)",
    }
    c, leader, _ = joining(entries=3)
    leader.step(join_answer(True))
    c.ready(1)
    leader.step(sync_answer(0, accepted=False))
    assert leader.status()["change_refused"] == {
        "server": 4,
        "why": "server 4 refused the catch-up: its log contradicts the farm's (it belonged to another "
        "farm?); wipe its data directory and add it again",
    }


def test_a_joiner_that_refuses_every_pack_is_given_up_at_the_join_timeout() -> None:
    """Refusals are answers but not progress: a joiner that lost what it acknowledged refuses the
    same pack every time, and the join ends after join_timeout_ticks instead of an hour's exchange."""
    options = attrs.evolve(PAPER, join_timeout_ticks=8, heartbeat_ticks=1, sync_log_entries=1)
    c, leader, handle = joining(options, entries=3)
    leader.step(join_answer(True))
    c.ready(1)
    leader.step(sync_answer(2))  # entry 1 acknowledged
    for _ in range(8):
        c.ready(1)
        leader.step(sync_answer(2, accepted=False))  # then refused again and again
        c.tick(1)
    c.flush()
    assert still_joining(leader)
    c.ready(1)
    leader.step(sync_answer(2, accepted=False))
    c.tick(1)
    c.flush()
    assert not still_joining(leader)
    assert isinstance(c.client_replies[handle], AddServerResponse)
    assert leader.status()["change_refused"]["why"].startswith("the catch-up of server 4 timed out")


def test_catch_up_answers_before_the_invitation_is_accepted_are_ignored() -> None:
    c, leader, handle = joining(entries=3)
    for early in (sync_answer(0, accepted=False), sync_answer(2)):
        leader.step(early)
        assert syncs(c) == [] and still_joining(leader)
    leader.step(join_answer(True))
    assert the_sync(c).last_log_index == 0  # the catch-up starts from index 1 as ever
    assert handle not in c.client_replies


def test_a_silent_joiner_that_accepted_is_sent_its_pack_again_not_the_invitation() -> None:
    options = attrs.evolve(PAPER, heartbeat_ticks=1)
    c, leader, _ = joining(options, entries=3)
    leader.step(join_answer(True))
    first = the_sync(c)
    leader.step(join_answer(True))  # the answer to a resent invitation: the pack is already on its way
    assert syncs(c) == []
    c.tick(1, 2 * options.heartbeat_ticks)
    rd = c.ready(1)
    assert sends_of(rd, JoinClusterRequest) == []
    assert sends_of(rd, SyncLogRequest) == [first]


def test_a_joiner_is_sent_committed_entries_only() -> None:
    c, leader, _ = joining(attrs.evolve(PAPER, catch_up_margin=0), entries=3, uncommitted=1)
    leader.step(join_answer(True))
    sync = the_sync(c)
    assert len(pack_of(sync).entries) == leader.commit and sync.commit_index == leader.commit
    leader.step(sync_answer(leader.commit + 1))  # caught up to the commit index: nothing more to send
    assert syncs(c) == [] and still_joining(leader)


def test_a_pack_carries_up_to_four_times_the_append_byte_budget_and_the_term_before_it() -> None:
    per_entry = 13 + 40  # the estimate of an entry of 40 bytes of data
    options = attrs.evolve(PAPER, max_bytes_per_append=2 * per_entry, catch_up_margin=0)
    c, leader, _ = joining(options, entries=20, data=b"%040d")
    leader.step(join_answer(True))
    first = the_sync(c)
    # 8 * 53 bytes: entry 1 (a configuration, estimated at 64 bytes) and 6 of the 53 fit, not a 7th
    assert len(pack_of(first).entries) == 7
    leader.step(sync_answer(8))
    second = the_sync(c)
    assert second.last_log_index == 7
    assert second.last_log_term == leader.log.term_at(7) == TERM


def test_a_joiner_caught_up_exactly_to_the_margin_joins() -> None:
    # the margin counts entries the joiner lacks past the commit index: all committed ones it must hold
    options = attrs.evolve(PAPER, catch_up_margin=3)
    c, leader, _ = joining(options, entries=4, uncommitted=3)
    assert (leader.commit, leader.log.last_index) == (5, 8)
    leader.step(join_answer(True))
    assert len(pack_of(the_sync(c)).entries) == 5
    leader.step(sync_answer(6))  # entries 1..5: exactly 8 - 3
    assert 4 in leader.voters() and syncs(c) == []


# ------------------------------------------------------------------------------------ through a snapshot


def snapshot_answer(next_index: int, accepted: bool = True) -> InstallSnapshotResponse:
    return InstallSnapshotResponse(
        source=4, destination=1, term=TERM, next_index=next_index, accepted=accepted
    )


def compacted_joining(
    options: RaftOptions, entries: int, data: bytes, uncommitted: int = 0
) -> tuple[Cluster, RaftCore]:
    """:func:`leading`, its log compacted up to the commit index (snapshot ``data``) before the
    uncommitted entries; then server 4 is invited and accepts, so the first chunk is on its way."""
    c = leading(options, entries)
    leader = c[1]
    leader.compact(leader.commit, data)
    c.cut |= {(2, 1), (3, 1)}
    for k in range(uncommitted):
        c.propose(1, b"u%d" % k)
    c.stabilize()
    ask(c, 1, add(4))
    c.ready(1)
    c.drop(to_joiner)
    leader.step(join_answer(True))
    return c, leader


def chunks(c: Cluster) -> list[SnapshotSyncRequest]:
    found = []
    for request in sends_of(c.ready(1), InstallSnapshotRequest):
        value = request.entries[0].value
        assert isinstance(value, SnapshotSyncRequest)
        found.append(value)
    return found


def test_a_joiner_installing_the_snapshot_up_to_the_margin_joins() -> None:
    options = attrs.evolve(PAPER, catch_up_margin=3)
    c, leader = compacted_joining(options, entries=4, data=b"state", uncommitted=3)
    assert (leader.log.snapshot_index, leader.log.last_index) == (5, 8)
    [chunk] = chunks(c)
    assert (chunk.last_log_index, chunk.offset, chunk.done) == (5, 0, True)
    leader.step(snapshot_answer(len(b"state")))  # installed: matches up to 5, exactly 8 - 3
    assert 4 in leader.voters() and syncs(c) == []


def test_snapshot_answers_count_as_a_joiner_speaking() -> None:
    options = attrs.evolve(PAPER, snapshot_chunk=2, join_timeout_ticks=8, heartbeat_ticks=1)
    c, leader = compacted_joining(options, entries=2, data=b"abcdef")
    assert [ch.offset for ch in chunks(c)] == [0]
    c.tick(1, 5)
    c.ready(1)
    leader.step(snapshot_answer(2))  # the first chunk stored
    assert [ch.offset for ch in chunks(c)] == [2]
    c.tick(1, 8)
    c.flush()
    assert still_joining(leader)


# ------------------------------------------------------------------------------------ the entries appended


def assert_configuration_names(leader: RaftCore, before: int) -> None:
    """The configuration in force is an entry that names its own index and the one it follows."""
    index = leader.config_index
    [appended] = leader.log.slice(index, index + 1)
    assert isinstance(appended.value, Configuration)
    assert (appended.value.log_index, appended.value.last_log_index) == (index, before)


def test_the_configuration_adding_a_server_names_its_own_index_and_the_one_it_follows() -> None:
    c, leader, _ = joining(attrs.evolve(PAPER, catch_up_margin=0), entries=2)
    before = leader.config_index
    leader.step(join_answer(True))
    c.ready(1)
    leader.step(sync_answer(leader.commit + 1))
    assert 4 in leader.voters()
    assert_configuration_names(leader, before)


def test_the_configuration_removing_a_server_names_its_own_index_and_the_one_it_follows() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    leader = c[1]
    before = leader.config_index
    ask(c, 1, remove(3))
    assert leader.config_index == leader.log.last_index and 3 not in leader.voters()
    assert_configuration_names(leader, before)


def test_removing_a_server_that_is_not_a_member_appends_nothing_and_is_done() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    leader = c[1]
    last = leader.log.last_index
    handle = ask(c, 1, remove(7))
    c.flush()
    assert leader.log.last_index == last and leader.voters() == {1, 2, 3}
    answer = c.client_replies[handle]
    assert isinstance(answer, RemoveServerResponse) and answer.accepted is True


# ------------------------------------------------------------------------------------ the joining server


def test_a_candidate_invited_to_join_stops_campaigning_and_follows_the_inviter() -> None:
    c = Cluster(3, PAPER)
    c.campaign(1)
    core = c[1]
    assert core.role is Role.CANDIDATE
    term = core.term
    invitation = Configuration(9, 5, configuration(3).servers)
    c.step(1, JoinClusterRequest(source=2, destination=1, term=term, entries=(LogEntry(term, invitation),)))
    assert (core.role, core.term, core.leader_id) == (Role.FOLLOWER, term, 2)


def test_while_joining_the_leader_is_found_in_the_invitation() -> None:
    c = Cluster(3, PAPER)
    core = c[1]
    servers = (*configuration(3).servers, ClusterServer(5, "sim://5"))
    invitation = Configuration(9, 5, servers)
    c.step(1, JoinClusterRequest(source=5, destination=1, term=3, entries=(LogEntry(3, invitation),)))
    assert core.leader_id == 5 and core.leader_endpoint() == "sim://5"  # not in its own configuration
    # a leader in its own configuration is found there, whatever an invitation says
    moved = Configuration(9, 5, (ClusterServer(2, "sim://moved"), *servers[2:]))
    # (from the leader of a later term: a second leader of term 3 would be refused)
    c.step(1, JoinClusterRequest(source=2, destination=1, term=4, entries=(LogEntry(4, moved),)))
    assert core.leader_endpoint() == "sim://2"


def test_contacts_are_the_members_the_joiner_the_leaving_and_the_invitation_but_never_itself() -> None:
    c = Cluster(4, PAPER)
    c.elect_and_settle(1)
    leader = c[1]
    assert leader.contacts() == {2, 3, 4}
    c.cut |= {(1, 3), (1, 4)}  # the removal of 2 stays uncommitted: 2 is still told things
    ask(c, 1, remove(2))
    c.stabilize()
    assert leader.voters() == {1, 3, 4} and leader.contacts() == {2, 3, 4}
    joiner = Cluster(3, PAPER)[1]
    invitation = Configuration(9, 5, (ClusterServer(6, "sim://6"), ClusterServer(7, "sim://7")))
    joiner.step(JoinClusterRequest(source=6, destination=1, term=3, entries=(LogEntry(3, invitation),)), 1)
    assert joiner.contacts() == {2, 3, 6, 7}


def test_contacts_include_the_server_being_added() -> None:
    _, leader, _ = joining()
    assert leader.contacts() == {2, 3, 4}


def test_a_log_pack_is_addressed_from_the_leader_to_the_joiner_in_the_leaders_term() -> None:
    """JRaft reads who sent a SyncLogRequest and for whom, and the pack's own entry carries the term."""
    c, leader, _ = joining(attrs.evolve(PAPER, sync_log_entries=2, catch_up_margin=0), entries=3)
    leader.step(join_answer(True))
    sync = the_sync(c)
    assert (sync.source, sync.destination, sync.term) == (1, 4, TERM)
    assert [e.term for e in sync.entries] == [TERM]
