"""Mixed farms of garlicfarm cores and JRaft-behaviour peers, default timings on both sides (issue 15):
a leader within 10 s of each leader loss, every request on every node, committed logs that agree."""

from __future__ import annotations

import pytest

from garlicfarm.raft.types import RaftOptions
from tests.interop.mixed import MixedFarm

SEEDS = range(4)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("gf", "jraft"), [([3], [1, 2]), ([2, 3], [1])], ids=["2jraft+1gf", "1jraft+2gf"])
def test_elections_and_replication(gf: list[int], jraft: list[int], seed: int) -> None:
    farm = MixedFarm(gf, jraft, seed=seed)
    farm.wait_for_leader(10_000)
    for n in range(20):
        farm.submit(b'{"n":%d}' % n)
    farm.settle()
    farm.check_agreement()
    assert all(len(farm.values(i)) == 20 for i in farm.alive())

    lost = farm.leader()
    assert lost is not None
    farm.kill(lost)
    farm.wait_for_leader(10_000)
    for n in range(20, 40):
        farm.submit(b'{"n":%d}' % n)
    farm.settle()
    farm.check_agreement()
    for i in farm.alive():
        assert farm.values(i) == [b'{"n":%d}' % n for n in range(40)]
    assert farm.pre_votes_to_jraft == 0
    assert all(not p.errors for p in farm.jraft.values())


@pytest.mark.parametrize("seed", SEEDS)
def test_jraft_leader_loss_with_a_jraft_successor(seed: int) -> None:
    """Kill garlicfarm leaders until only JRaft can lead: 1 gf + 2 JRaft, the gf leader dies."""
    farm = MixedFarm([3], [1, 2], seed=seed)
    farm.wait_for_leader(10_000)
    if farm.leader() != 3:
        pytest.skip("a JRaft node won the first election")  # never with these seeds, see below
    farm.kill(3)
    start = farm.now
    farm.wait_for_leader(10_000)
    assert farm.leader() in (1, 2) and farm.now - start <= 10_000
    farm.submit(b'{"after":1}')
    farm.settle()
    farm.check_agreement()


def test_pre_votes_to_jraft_stall_elections() -> None:
    """The bug this fixes, reproduced: pre-votes sent to JRaft peers ("on" before the handshake told
    who speaks it) make 2 JRaft + 1 garlicfarm elect nobody for a minute while terms race up."""
    farm = MixedFarm([3], [1, 2], seed=0, options=RaftOptions(), transport_drops_pre_votes=False)
    with pytest.raises(AssertionError, match="no leader"):
        farm.wait_for_leader(60_000)
    assert farm.pre_votes_to_jraft > 0 and farm.gf[3].core.term > 50
