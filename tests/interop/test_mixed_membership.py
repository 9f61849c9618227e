"""Joins and leaves across implementations (issue 15): a JRaft joiner into a garlicfarm farm holding more
than 1,000 entries, a garlicfarm joiner into a JRaft-led farm, and removals both ways."""

from __future__ import annotations

import attrs
import pytest

from garlicfarm.raft.types import RaftOptions
from garlicfarm.wire import Application, ClientRequest, LogEntry
from tests.interop.mixed import MixedFarm


def _fill(farm: MixedFarm, batches: int, per_batch: int = 100) -> None:
    for b in range(batches):
        entries = tuple(LogEntry(0, Application(b'{"b":%d,"i":%d}' % (b, i))) for i in range(per_batch))
        leader = farm.leader()
        assert leader is not None
        response = farm.request(leader, ClientRequest(entries=entries), wait_ms=5000)
        assert response is not None and response.accepted


@pytest.mark.parametrize("seed", range(3))
def test_jraft_joiner_with_its_own_log_into_a_garlicfarm_farm(seed: int) -> None:
    """The joiner starts as JRaft's scripts start one: alone, so it elects itself and commits its own
    configuration at index 1. Catch-up from 1 overwrites that prefix, and the LogPacks' offsets are
    positions in its data file: every entry reads back from its files, equal to the farm's."""
    farm = MixedFarm([1, 2, 3], [4], seed=seed, founders=[1, 2, 3])
    farm.run(6000)
    joiner = farm.jraft[4]
    assert joiner.role == "leader" and joiner.commit_index == 1  # its own one-server log
    _fill(farm, 11)
    leader = farm.leader()
    assert leader in (1, 2, 3)
    assert farm.last_index(leader) > 1000

    response = farm.add_server(leader, 4)
    assert response is not None and response.accepted
    farm.settle()
    assert not joiner.errors and not joiner.catching_up
    assert farm.check_agreement() > 1000
    assert len(joiner.committed()) == farm.commit_index(leader)  # read back from its files

    farm.submit(b'{"after":"join"}')
    farm.settle()
    farm.check_agreement()
    assert farm.values(4)[-1] == b'{"after":"join"}'

    # garlicfarm removes the JRaft server: it is told to leave once the change commits, and exits
    response = farm.remove_server(farm.leader() or leader, 4)
    assert response is not None and response.accepted
    farm.run(15_000)
    assert joiner.exited
    farm.submit(b'{"after":"leave"}')
    farm.settle()
    farm.check_agreement()
    assert all(farm.values(i)[-1] == b'{"after":"leave"}' for i in (1, 2, 3))


@pytest.mark.parametrize("seed", range(3))
def test_garlicfarm_joiner_into_a_jraft_led_farm(seed: int) -> None:
    """A JRaft leader syncs from index 1 in packs of 5 with its own absolute offsets; the garlicfarm
    joiner reads them relative to the first, and ends with the same committed log."""
    farm = MixedFarm([3], [1, 2], seed=seed, founders=[1, 2])
    farm.wait_for_leader(10_000)
    leader = farm.leader()
    assert leader in (1, 2)
    for n in range(40):
        farm.submit(b'{"n":%d}' % n)
    farm.settle()
    response = farm.add_server(farm.leader() or leader, 3)
    assert response is not None and response.accepted  # JRaft answers once it has invited
    farm.settle(10_000)
    assert 3 in farm.jraft[1].config.ids() and 3 in farm.jraft[2].config.ids()
    farm.check_agreement()
    assert farm.values(3)[:40] == [b'{"n":%d}' % n for n in range(40)]
    farm.submit(b'{"after":"join"}')
    farm.settle()
    farm.check_agreement()
    assert farm.values(3)[-1] == b'{"after":"join"}'


@pytest.mark.parametrize("seed", range(3))
def test_jraft_leader_removes_a_garlicfarm_server(seed: int) -> None:
    """With garlicfarm's default timings a garlicfarm voter soon deposes a JRaft leader (JRaft
    heartbeats every 1.5 s, garlicfarm times out after 0.5-1 s), so this farm's garlicfarm node runs with
    JRaft-like timings (4-8 s) to leave the JRaft node leading when it asks for the removal."""
    slow = attrs.evolve(RaftOptions(), negotiated_pre_vote=True, election_ticks=80, heartbeat_ticks=10)
    farm = MixedFarm([3], [1, 2], seed=seed, founders=[1, 2], options=slow)
    farm.wait_for_leader(10_000)
    farm.submit(b'{"n":0}')
    jraft_leader = farm.leader()
    assert jraft_leader in (1, 2)
    response = farm.add_server(jraft_leader, 3)
    assert response is not None and response.accepted
    farm.settle(10_000)
    leader = farm.leader()
    assert leader in (1, 2)
    response = farm.remove_server(leader, 3)
    assert response is not None and response.accepted
    farm.settle(10_000)
    assert farm.gf[3].core.removed
    assert all(3 not in farm.jraft[i].config.ids() for i in (1, 2))
    farm.submit(b'{"after":"leave"}')
    farm.settle()
    farm.check_agreement([1, 2])


def test_snapshot_not_needed_reads_as_done_to_jraft() -> None:
    """A follower that already holds a snapshot's entries answers with a nextIndex JRaft's signed long
    reads as past the end (done), not as -1 (it would then read the snapshot from byte -1)."""
    import struct

    from garlicfarm.raft.core import SNAPSHOT_NOT_NEEDED
    from garlicfarm.wire import InstallSnapshotResponse, encode
    from tests.interop.jraft_wire import parse_response

    wire = encode(InstallSnapshotResponse(2, 1, 3, SNAPSHOT_NOT_NEEDED, True))
    assert parse_response(wire).next_index == 2**63 - 1  # as JRaft reads it: >= any snapshot size
    assert struct.unpack_from(">q", wire, 17)[0] > 0
