"""The simulated disk: a crash lands between two durable writes and the node restarts from what was
written before it (through the same recovery the service runs)."""

from __future__ import annotations

import random

import pytest

from garlicfarm.sim.disk import CrashingLogStore, CrashingSnapshotStore, CrashPoints, DiskCrash
from garlicfarm.storage.interface import HardState, SnapshotMeta, StorageError
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.snapshots import MemorySnapshotStore, recover
from garlicfarm.wire.payloads import Application, ClusterServer, Configuration, LogEntry

CONFIG = Configuration(0, 0, (ClusterServer(1, "sim://1"),))


def _disk() -> tuple[CrashPoints, CrashingLogStore, CrashingSnapshotStore]:
    points = CrashPoints(random.Random(1))
    log = CrashingLogStore(MemoryLogStore(), points)
    snapshots = CrashingSnapshotStore(MemorySnapshotStore(), points)
    entries = [LogEntry(1, Application(bytes([i]))) for i in range(10)]
    log.save(HardState(1, 1, 10), 1, entries)
    first = SnapshotMeta(4, 1, CONFIG)
    snapshots.save(first, b"state at 4")
    log.compact(first)
    snapshots.prune(first)
    return points, log, snapshots


def _take_snapshot(log: CrashingLogStore, snapshots: CrashingSnapshotStore, prune_first: bool) -> None:
    meta = SnapshotMeta(8, 1, CONFIG)
    snapshots.save(meta, b"state at 8")
    if prune_first:
        snapshots.prune(meta)
    log.compact(meta)
    snapshots.prune(meta)


@pytest.mark.parametrize("crash_before", [1, 2, 3])
def test_a_crash_between_the_snapshot_file_and_the_compaction_restarts(crash_before: int) -> None:
    """The driver's order (file, compaction, prune): a crash before any of the writes leaves a log
    store naming a snapshot file that is there."""
    points, log, snapshots = _disk()
    points.snapshot_crash_rate = 1.0
    points.rng = _CrashOn(crash_before)
    with pytest.raises(DiskCrash):
        _take_snapshot(log, snapshots, prune_first=False)
    stored = log.load()
    data = recover(stored.snapshot, snapshots.durable)
    assert stored.snapshot is not None
    assert data == (b"state at 4" if stored.snapshot.last_index == 4 else b"state at 8")


def test_replacing_the_file_before_the_compaction_leaves_a_node_that_cannot_start() -> None:
    """What the simulator's snapshot_file_first mutant does (one file, overwritten first)."""
    points, log, snapshots = _disk()
    points.snapshot_crash_rate = 1.0
    points.rng = _CrashOn(3)  # the compaction, after the old file went
    with pytest.raises(DiskCrash, match="log compaction"):
        _take_snapshot(log, snapshots, prune_first=True)
    with pytest.raises(StorageError, match="file is missing"):
        recover(log.load().snapshot, snapshots.durable)


class _CrashOn(random.Random):
    """random() below any rate on the n-th call only."""

    def __init__(self, n: int) -> None:
        super().__init__(0)
        self.calls = 0
        self.n = n

    def random(self) -> float:
        self.calls += 1
        return 0.0 if self.calls == self.n else 1.0


def test_a_save_without_sync_is_lost_in_a_crash_unless_a_synced_write_follows() -> None:
    """Issue 17: the driver saves the commit index alone without sync; the simulated disk loses it at
    a crash (the worst a real disk may do), and a synced save or compaction makes it durable."""
    points = CrashPoints(random.Random(1))
    durable = MemoryLogStore()
    log = CrashingLogStore(durable, points)
    log.save(HardState(1, 1, 0), 1, [LogEntry(1, Application(bytes([i]))) for i in range(6)])
    log.save(HardState(1, 1, 3), sync=False)
    assert durable.load().hard_state == HardState(1, 1, 0)  # what a crash now would leave
    log.save(None, 7, [LogEntry(1, Application(b"7"))])  # synced: the commit goes with it
    assert durable.load().hard_state == HardState(1, 1, 3)
    log.save(HardState(1, 1, 5), sync=False)
    log.compact(SnapshotMeta(2, 1, CONFIG))
    assert durable.load().hard_state == HardState(1, 1, 5)
    with pytest.raises(AssertionError):
        log.save(None, 8, [LogEntry(1, Application(b"8"))], sync=False)  # entries are never unsynced
