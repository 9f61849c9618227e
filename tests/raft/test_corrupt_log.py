"""A log row found corrupt while the node runs stops it, as every storage failure does: never served."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from twisted.internet.task import Clock

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import RaftDriver
from garlicfarm.storage.interface import CorruptLog, HardState
from garlicfarm.storage.snapshots import MemorySnapshotStore
from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire import ClusterServer, Configuration, LogEntry
from tests.raft.test_driver import OPTIONS, TICK, LocalTransport, run
from tests.raft.test_driver_apply import Machine
from tests.raft.test_driver_writer import stop_reasons


class RottingStore(SQLiteLogStore):
    """Once ``rot`` is set, every row it has just written changes on disk (a term gains a bit)."""

    rot = False

    def save(
        self,
        hard_state: HardState | None = None,
        entries_from: int | None = None,
        entries: Sequence[LogEntry] = (),
        *,
        sync: bool = True,
    ) -> None:
        super().save(hard_state, entries_from, entries, sync=sync)
        if self.rot and entries:
            assert self._conn is not None and entries_from is not None
            self._conn.execute("UPDATE entries SET term = term | 1024 WHERE idx >= ?", (entries_from,))


def test_a_row_that_rots_while_running_stops_the_node(tmp_path: Path) -> None:
    clock = Clock()
    store = RottingStore(tmp_path / "log.db", fsync=False)
    bootstrap = Configuration(0, 0, (ClusterServer(1, "tcp://127.0.0.1:9001"),))
    core = RaftCore(1, store.load(), random.Random(1), bootstrap, OPTIONS)
    driver = RaftDriver(
        core,
        store,
        clock,
        LocalTransport(clock, {}, 1),
        TICK,
        state_machine=Machine(),
        snapshots=MemorySnapshotStore(),
        snapshot_every=2,
        group_commit=True,
    )
    driver.start()
    run(clock, 0.5)
    assert core.is_leader()
    store.rot = True
    done = driver.submit(b"[1]")
    why = stop_reasons(lambda: run(clock, 0.5))
    # the compaction at the applied index reads that entry's row back: it fails its checksum
    assert why == ["storage failed, so that it cannot act on lost state"]
    assert not driver.running and driver.stopped_by is not None
    assert driver.stopped_by.check(CorruptLog)
    assert "fails its checksum" in driver.stopped_by.getErrorMessage()
    done.addErrback(lambda _: None)  # committed before the stop, or failed by it: either is fine here
    store.close()
