"""What the driver writes is what a restart finds: hard state, snapshots it takes and snapshots it
installs (mutation testing found the driver could drop each of these writes and no test noticed)."""

from __future__ import annotations

from garlicfarm.raft.types import Role
from tests.raft.farm import Farm, endpoint, outcome


def restart(farm: Farm, i: int) -> None:
    farm.stop(i)
    farm.start(i)


def test_every_node_restarts_with_the_term_vote_and_log_it_had() -> None:
    farm = Farm(3)
    farm.submit([b"a", b"b", b"c"])
    before = {i: (d.core.term, d.core.voted_for, d.core.log.last_index) for i, d in farm.drivers.items()}
    for i, store in farm.stores.items():
        hard = store.load().hard_state
        assert hard is not None and (hard.term, hard.voted_for) == before[i][:2]
    for i in list(farm.drivers):
        restart(farm, i)
    after = {i: (d.core.term, d.core.voted_for, d.core.log.last_index) for i, d in farm.drivers.items()}
    assert after == before
    assert all(d.core.role is Role.FOLLOWER for d in farm.drivers.values())


def test_a_snapshot_is_taken_exactly_every_snapshot_every_entries_and_survives_a_restart() -> None:
    farm = Farm(1, snapshot_every=5)
    driver = farm.wait_for_leader()
    start = driver.core.applied
    assert start < 5
    farm.submit([b"v%d" % k for k in range(5 - start)])
    assert driver.core.applied == 5
    assert driver.core.log.snapshot_index == 5  # at the threshold itself, not one entry later
    saved = farm.snapshot_stores[1].load()
    assert saved is not None and saved[0].last_index == 5 and saved[1] == farm.machines[1].snapshot()
    values = list(farm.machines[1].values)
    restart(farm, 1)
    assert farm.machines[1].values == values  # restored from the snapshot file, not the (compacted) log


def test_a_snapshot_installed_from_the_leader_is_kept_and_restored_after_a_restart() -> None:
    farm = Farm(3, spares=1, snapshot_every=10)
    farm.submit([b"v%d" % k for k in range(40)])
    leader = farm.leader()
    outcome_d = leader.add_server(4, endpoint(4))
    farm.run(1.5)
    outcome(outcome_d)
    installed = farm.drivers[4].core.log.snapshot_index
    assert installed > 0
    saved = farm.snapshot_stores[4].load()
    assert saved is not None and saved[0].last_index >= installed
    assert len(farm.snapshot_stores[4].held) == 1  # the one it replaced is pruned
    values = list(farm.machines[4].values)
    restart(farm, 4)
    farm.run(0.002)  # the committed log past the snapshot is applied again in the turns that follow
    assert farm.machines[4].values[: len(values)] == values
