"""Membership changes, compaction and snapshot transfer, end to end through RaftDrivers."""

from __future__ import annotations

import pytest

from garlicfarm.raft.driver import ChangeRefused
from garlicfarm.wire import InstallSnapshotRequest, SnapshotSyncRequest, SyncLogRequest
from tests.raft.farm import Farm, endpoint, outcome


def record(names: list[str], message: object) -> bool:
    names.append(type(message).__name__)
    return True


def values(n: int, prefix: str = "v") -> list[bytes]:
    return [f"{prefix}{i}".encode() for i in range(n)]


def test_add_a_server_catches_it_up_with_sync_log() -> None:
    farm = Farm(3, spares=1)
    farm.submit(values(30))
    seen: list[str] = []
    farm.filter = lambda src, dst, m: record(seen, m)
    leader = farm.leader()
    d = leader.add_server(4, endpoint(4))
    farm.run(1.0)
    outcome(d)
    assert "JoinClusterRequest" in seen and "SyncLogRequest" in seen
    assert farm.members(leader.core.id) == {1, 2, 3, 4}
    farm.submit([b"after"])
    farm.run(0.5)
    assert farm.machines[4].values == farm.machines[leader.core.id].values
    assert farm.machines[4].values[-1] == b"after"


def test_add_to_a_compacted_cluster_goes_through_install_snapshot() -> None:
    farm = Farm(3, spares=1, snapshot_every=10)
    farm.submit(values(40))
    leader = farm.leader()
    assert leader.core.log.snapshot_index > 0
    kinds: list[str] = []
    farm.filter = lambda src, dst, m: record(kinds, m)
    d = leader.add_server(4, endpoint(4))
    farm.run(1.5)
    outcome(d)
    assert "InstallSnapshotRequest" in kinds
    assert farm.machines[4].values == farm.machines[leader.core.id].values
    assert farm.drivers[4].core.log.snapshot_index > 0


def test_add_while_a_follower_is_down() -> None:
    farm = Farm(3, spares=1)
    farm.submit(values(5))
    leader = farm.leader()
    down = next(i for i in (1, 2, 3) if i != leader.core.id)
    farm.stop(down)
    d = leader.add_server(4, endpoint(4))
    farm.run(1.0)
    outcome(d)  # leader + the other follower + the new server are a majority of four
    assert farm.members(leader.core.id) == {1, 2, 3, 4}
    farm.start(down)
    farm.run(1.0)
    assert farm.members(down) == {1, 2, 3, 4}


def test_a_concurrent_change_is_refused_with_a_reason() -> None:
    farm = Farm(3, spares=2)
    farm.submit(values(5))
    leader = farm.leader()
    first = leader.add_server(4, endpoint(4))
    with pytest.raises(ChangeRefused, match="server 4 is still joining; one configuration change at a time"):
        outcome(leader.add_server(5, endpoint(5)))
    with pytest.raises(ChangeRefused, match="one configuration change at a time"):
        outcome(leader.remove_server(2))
    farm.run(1.0)
    outcome(first)
    farm.run(0.2)
    second = leader.add_server(5, endpoint(5))  # accepted once the first change is committed
    farm.run(1.0)
    outcome(second)
    assert farm.members(leader.core.id) == {1, 2, 3, 4, 5}


def test_remove_the_leader() -> None:
    farm = Farm(3)
    farm.submit(values(3))
    old = farm.leader()
    d = old.remove_server(old.core.id)
    farm.run(0.5)
    outcome(d)
    assert old.core.removed and not old.core.is_leader()
    new = farm.wait_for_leader()
    assert new is not old
    assert farm.members(new.core.id) == {1, 2, 3} - {old.core.id}
    farm.submit([b"without the old leader"])
    farm.run(1.0)
    assert not old.core.is_leader()  # a removed server never campaigns


def test_remove_down_to_one_and_grow_back() -> None:
    farm = Farm(3)
    farm.submit(values(3))
    for _ in range(2):
        leader = farm.wait_for_leader()
        victim = next(i for i in farm.members(leader.core.id) if i != leader.core.id)
        d = leader.remove_server(victim)
        farm.run(0.5)
        outcome(d)
    solo = farm.wait_for_leader()
    assert farm.members(solo.core.id) == {solo.core.id}
    assert farm.submit([b"alone"])[0] > 0
    with pytest.raises(ChangeRefused):
        outcome(solo.remove_server(solo.core.id))  # the last member cannot leave
    for back in sorted({1, 2, 3} - {solo.core.id}):
        d = solo.add_server(back, endpoint(back))
        farm.run(1.0)
        outcome(d)
    assert farm.members(solo.core.id) == {1, 2, 3}
    farm.submit([b"together again"])
    farm.run(0.5)
    assert all(farm.machines[i].values[-1] == b"together again" for i in (1, 2, 3))


def test_snapshot_transfer_cut_in_the_middle_resumes() -> None:
    farm = Farm(3, spares=1, snapshot_every=10)
    farm.submit([b"x" * 50 for _ in range(40)])
    leader = farm.leader()
    offsets: list[int] = []
    connected = True

    def watch(src: int, dst: int, message: object) -> bool:
        if isinstance(message, InstallSnapshotRequest):
            chunk = message.entries[0].value
            assert isinstance(chunk, SnapshotSyncRequest)
            if len(offsets) == 3:
                return False  # the connection drops after the third chunk
            if connected:
                offsets.append(chunk.offset)
        return True

    farm.filter = watch
    d = leader.add_server(4, endpoint(4))
    farm.run(0.3)
    incoming = farm.drivers[4].core._incoming
    assert incoming is not None
    received = len(incoming.data)
    assert offsets == [0, 64, 128] and received == 192
    after: list[int] = []

    def reconnected(src: int, dst: int, message: object) -> bool:
        if isinstance(message, InstallSnapshotRequest):
            chunk = message.entries[0].value
            assert isinstance(chunk, SnapshotSyncRequest)
            after.append(chunk.offset)
        return True

    farm.filter = reconnected
    farm.run(1.5)
    outcome(d)
    assert after[0] == received  # resumed where the new server was, not from byte 0
    assert farm.machines[4].values == farm.machines[leader.core.id].values


@pytest.mark.parametrize("lost", ["JoinClusterRequest", "SyncLogRequest", "SyncLogResponse"])
def test_a_lost_join_message_is_sent_again(lost: str) -> None:
    """A link that drops while a server joins loses one request or answer: the leader resends after
    an election timeout of silence instead of stalling until the join times out."""
    farm = Farm(3, spares=1)
    farm.submit(values(30))
    dropped: list[str] = []

    def drop_first(src: int, dst: int, message: object) -> bool:
        if type(message).__name__ == lost and not dropped:
            dropped.append(lost)
            return False
        return True

    farm.filter = drop_first
    leader = farm.leader()
    d = leader.add_server(4, endpoint(4))
    farm.run(1.5)
    assert dropped == [lost]
    outcome(d)
    assert farm.members(leader.core.id) == {1, 2, 3, 4}
    assert farm.machines[4].values == farm.machines[leader.core.id].values


def test_join_times_out_when_the_new_server_never_answers() -> None:
    farm = Farm(3, spares=1)
    farm.submit(values(3))
    farm.stop(4)
    leader = farm.leader()
    d = leader.add_server(4, endpoint(4))
    farm.run(2.0)
    with pytest.raises(ChangeRefused, match="add server 4"):
        outcome(d)
    assert farm.members(leader.core.id) == {1, 2, 3}
    assert leader.core.change_refusal() is None


def test_sync_log_carries_log_packs() -> None:
    farm = Farm(1, spares=1)
    farm.submit(values(5))
    packs: list[int] = []

    def spy(src: int, dst: int, message: object) -> bool:
        if isinstance(message, SyncLogRequest):
            packs.append(len(message.entries))
        return True

    farm.filter = spy
    d = farm.leader().add_server(2, endpoint(2))
    farm.run(1.0)
    outcome(d)
    assert packs and all(n == 1 for n in packs)


def test_snapshot_transfer_survives_a_leader_change() -> None:
    farm = Farm(3, snapshot_every=10)
    farm.submit(values(3))
    leader = farm.leader()
    lagging = next(i for i in (1, 2, 3) if i != leader.core.id)
    farm.stop(lagging)
    farm.submit(values(40, "w"))
    chunks: list[int] = []

    def three_chunks_then_cut(src: int, dst: int, message: object) -> bool:
        if isinstance(message, InstallSnapshotRequest) and dst == lagging:
            chunks.append(src)
            return len(chunks) <= 3
        return True

    farm.filter = three_chunks_then_cut
    farm.start(lagging)
    farm.run(0.3)
    assert chunks and chunks[0] == leader.core.id
    farm.stop(leader.core.id)  # the leader dies mid-transfer
    farm.filter = lambda src, dst, message: True
    farm.run(2.0)
    new = farm.wait_for_leader()
    assert new is not leader
    assert farm.machines[lagging].values == farm.machines[new.core.id].values
    assert farm.machines[lagging].values[-1] == b"w39"
