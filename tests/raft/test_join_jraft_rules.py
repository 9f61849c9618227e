"""Catch-up of a joining server as JRaft's leader and joiner expect it (issue 15): from index 1 whatever
the joiner says, committed entries only, LogPack offsets as positions in the leader's data file, and a
joiner that never keeps a divergent committed prefix."""

from __future__ import annotations

import random

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.types import RaftOptions, Ready
from garlicfarm.storage.interface import HardState, StoredState
from garlicfarm.wire import (
    AddServerRequest,
    AddServerResponse,
    Application,
    ClusterServer,
    Configuration,
    JoinClusterRequest,
    JoinClusterResponse,
    LogEntry,
    LogPack,
    SyncLogRequest,
    SyncLogResponse,
)
from garlicfarm.wire.codec import encode_value

OPTIONS = RaftOptions(election_ticks=10, heartbeat_ticks=2, sync_log_entries=4, catch_up_margin=0)
ME = Configuration(0, 0, (ClusterServer(1, "sim://1"),))


def entry(term: int, data: bytes) -> LogEntry:
    return LogEntry(term, Application(data))


def record_size(e: LogEntry) -> int:
    return 9 + len(encode_value(e.value))


def one_node_leader(values: int) -> tuple[RaftCore, list[Ready]]:
    """A single-server leader that committed ``values`` entries (after its term-start configuration)."""
    core = RaftCore(1, StoredState(HardState(0, None, 0), None, 1, ()), random.Random(1), ME, OPTIONS)
    readies: list[Ready] = []
    while not core.is_leader():
        core.tick()
        drain(core, readies)
    for i in range(values):
        core.propose(b'{"n":%d}' % i, 1000 + i)
        drain(core, readies)
    return core, readies


def drain(core: RaftCore, into: list[Ready]) -> None:
    while core.has_ready():
        ready = core.ready()
        core.advance(ready)
        into.append(ready)


def sync_logs(readies: list[Ready]) -> list[SyncLogRequest]:
    return [s.message for r in readies for s in r.sends if isinstance(s.message, SyncLogRequest)]


def test_catch_up_starts_at_one_with_jraft_offsets_and_committed_entries_only() -> None:
    leader, _ = one_node_leader(9)  # index 1: configuration, 2..10: values
    readies: list[Ready] = []
    leader.step(AddServerRequest(entries=(LogEntry(0, ClusterServer(2, "sim://2")),)), 1)
    drain(leader, readies)
    # The joiner holds 5 entries of its own and says so; catch-up starts at 1 all the same.
    leader.step(JoinClusterResponse(source=2, destination=1, term=leader.term, next_index=6, accepted=True))
    drain(leader, readies)
    (first,) = sync_logs(readies)
    pack = first.entries[0].value
    assert isinstance(pack, LogPack)
    assert (first.last_log_index, pack.base_offset, len(pack.entries)) == (0, 0, 4)

    readies.clear()
    leader.step(SyncLogResponse(source=2, destination=1, term=leader.term, next_index=5, accepted=True))
    drain(leader, readies)
    (second,) = sync_logs(readies)
    pack2 = second.entries[0].value
    assert isinstance(pack2, LogPack)
    held = leader.log.slice(1, 5)
    assert second.last_log_index == 4
    assert pack2.base_offset == sum(record_size(e) for e in held)  # where entry 5 lies in the file
    assert second.last_log_index + len(pack2.entries) <= leader.commit  # committed entries only


def test_nothing_uncommitted_goes_into_a_pack() -> None:
    leader, _ = one_node_leader(2)
    leader.commit = 1  # pretend entries 2-3 are not committed yet
    readies: list[Ready] = []
    leader.step(AddServerRequest(entries=(LogEntry(0, ClusterServer(2, "sim://2")),)), 1)
    leader.step(JoinClusterResponse(source=2, destination=1, term=leader.term, next_index=1, accepted=True))
    drain(leader, readies)
    (sync,) = sync_logs(readies)
    pack = sync.entries[0].value
    assert isinstance(pack, LogPack) and len(pack.entries) == 1


def test_a_joiner_refuses_a_pack_that_contradicts_its_committed_log() -> None:
    """A server that belonged to another farm (a JRaft-style lone start commits index 1) does not keep
    that prefix under the new farm's entries, nor crash on it: it refuses and says why."""
    own = (entry(1, b'{"mine":1}'),)
    stored = StoredState(HardState(1, 1, 1), None, 1, own)
    joiner = RaftCore(2, stored, random.Random(2), Configuration(0, 0, ()), OPTIONS)
    config = Configuration(5, 1, (ClusterServer(1, "sim://1"),))
    joiner.step(JoinClusterRequest(source=1, destination=2, term=3, entries=(LogEntry(3, config),)), handle=1)
    farm_entries = (entry(1, b'{"farm":1}'), entry(1, b'{"farm":2}'))
    sync = SyncLogRequest(
        source=1, destination=2, term=3, commit_index=2, entries=(LogEntry(3, LogPack(farm_entries)),)
    )
    joiner.step(sync, handle=2)
    replies = [r.message for r in joiner.ready().replies]
    assert isinstance(replies[0], JoinClusterResponse) and replies[0].accepted
    assert isinstance(replies[1], SyncLogResponse)
    assert (replies[1].accepted, replies[1].next_index) == (False, 0)
    assert joiner.status()["join_refusal"] and joiner.log.slice(1, 2) == list(own)


def test_a_matching_joiner_accepts_jraft_packs_without_terms() -> None:
    """JRaft's SyncLogRequest carries lastLogTerm 0 even past index 0: the joiner checks the entries."""
    joiner = RaftCore(2, StoredState(HardState(0, None, 0), None, 1, ()), random.Random(2), None, OPTIONS)
    config = Configuration(5, 1, (ClusterServer(1, "sim://1"),))
    joiner.step(JoinClusterRequest(source=1, destination=2, term=3, entries=(LogEntry(3, config),)), 1)
    batch1 = (entry(1, b"a"), entry(1, b"b"))
    batch2 = (entry(2, b"c"),)
    for handle, prev, batch in ((2, 0, batch1), (3, 2, batch2)):
        joiner.step(
            SyncLogRequest(
                source=1,
                destination=2,
                term=3,
                last_log_index=prev,
                last_log_term=0,
                commit_index=3,
                entries=(LogEntry(3, LogPack(batch, base_offset=123)),),
            ),
            handle,
        )
        ready = joiner.ready()
        joiner.advance(ready)
        answer = ready.replies[-1].message
        assert answer.accepted and answer.next_index == prev + len(batch) + 1
    assert joiner.log.slice(1, 4) == [*batch1, *batch2] and joiner.commit == 3


def test_a_garlicfarm_leader_gives_up_on_a_joiner_that_refuses_from_index_one() -> None:
    leader, _ = one_node_leader(3)
    readies: list[Ready] = []
    leader.step(AddServerRequest(entries=(LogEntry(0, ClusterServer(2, "sim://2")),)), 7)
    leader.step(JoinClusterResponse(source=2, destination=1, term=leader.term, next_index=1, accepted=True))
    drain(leader, readies)
    leader.step(SyncLogResponse(source=2, destination=1, term=leader.term, next_index=0, accepted=False))
    drain(leader, readies)
    answers = [r.message for rd in readies for r in rd.replies if r.handle == 7]
    assert len(answers) == 1 and isinstance(answers[0], AddServerResponse) and not answers[0].accepted
    assert leader.change_refusal() is None  # free for the next change
