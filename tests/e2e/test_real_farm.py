"""End to end: real node processes over TLS on loopback, killed with SIGKILL and restarted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire import Application
from tests.e2e.procfarm import ProcFarm

pytestmark = pytest.mark.e2e


def committed_values(farm: ProcFarm, i: int) -> dict[int, bytes]:
    store = SQLiteLogStore(farm.dir / f"node-{i}" / "log.db")
    try:
        state = store.load()
        return {
            state.first_index + k: e.value.data
            for k, e in enumerate(state.entries)
            if isinstance(e.value, Application) and state.first_index + k <= state.hard_state.commit
        }
    finally:
        store.close()


@pytest.mark.parametrize("nodes", [3, 5])
def test_farm_survives_kill_9_of_its_leader(tmp_path: Path, nodes: int) -> None:
    farm = ProcFarm(tmp_path / "farm", nodes)
    acked: dict[int, bytes] = {}
    try:
        farm.start_all()
        leader = farm.wait_for_leader()
        for n, via in enumerate(range(1, nodes + 1)):  # through every node: followers redirect
            index = farm.submit(via, {"n": n, "via": via})
            acked[index] = f'{{"n":{n},"via":{via}}}'.encode()
        farm.wait_for_commit(max(acked), list(farm.procs))

        farm.kill(leader)
        new_leader = farm.wait_for_leader(excluding=leader)
        assert new_leader != leader
        survivor = next(i for i in farm.procs if i != new_leader)
        index = farm.submit(survivor, {"after": "failover"})
        acked[index] = b'{"after":"failover"}'

        farm.start(leader)  # back from its SQLite file, it catches up
        farm.wait_for_commit(index, list(farm.procs))
    except (AssertionError, sqlite3.Error):
        print(farm.logs())
        raise
    finally:
        farm.stop_all()
    for i in range(1, nodes + 1):
        stored = committed_values(farm, i)
        for index, data in acked.items():
            assert stored.get(index) == data, f"node {i} lost acknowledged index {index}"
