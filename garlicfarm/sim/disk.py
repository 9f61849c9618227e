"""A simulated server's disk: the log store and the snapshot files, where a crash can land between
any two durable writes.

A real node makes several durable writes for one step: the log store's transaction (hard state and
entries), a snapshot file, the log store's compaction, the pruning of the previous snapshot file. A
crash between two of them leaves the first on disk and not the second; a restart must work from that
(``recover`` picks the snapshot file the log store names). Each write here is one crash point: with
probability ``crash_rate`` the node crashes just before it, and only what was written before survives.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from garlicfarm.storage.interface import HardState, SnapshotMeta, StoredState
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.snapshots import MemorySnapshotStore
from garlicfarm.wire.payloads import LogEntry


class DiskCrash(Exception):
    """The node crashed just before a durable write (which did not happen)."""


class CrashPoints:
    """Decides, before each durable write, whether the node crashes there; counts the writes."""

    def __init__(self, rng: random.Random, crash_rate: float = 0.0, snapshot_crash_rate: float = 0.0) -> None:
        self.rng = rng
        self.crash_rate = crash_rate
        #: snapshot writes are rare: they get their own, higher rate, so the crash between the
        #: snapshot file and the compaction is common
        self.snapshot_crash_rate = snapshot_crash_rate
        #: (write kind -> crashes just before it), for the tests and the report
        self.crashes: dict[str, int] = {}
        self.writes = 0
        #: crash at the next write whatever the rates (set by a "crash soon" fault)
        self.force_next = False

    def before(self, kind: str) -> None:
        self.writes += 1
        rate = self.crash_rate if kind == "log save" else self.snapshot_crash_rate
        if self.force_next or (rate and self.rng.random() < rate):
            self.force_next = False
            self.crashes[kind] = self.crashes.get(kind, 0) + 1
            raise DiskCrash(kind)


class CrashingLogStore:
    """A :class:`MemoryLogStore` (``durable``) whose save and compact are crash points."""

    def __init__(self, durable: MemoryLogStore, points: CrashPoints) -> None:
        self.durable = durable
        self.points = points
        #: the hard state of saves made without sync since the last synced write: a crash loses it
        #: (the worst case; a real disk may also have kept it, which is the case of a synced save)
        self.unsynced: HardState | None = None

    def load(self) -> StoredState:
        return self.durable.load()

    def save(
        self,
        hard_state: HardState | None = None,
        entries_from: int | None = None,
        entries: Sequence[LogEntry] = (),
        *,
        sync: bool = True,
    ) -> None:
        self.points.before("log save")  # a crash may come before any write, synced or not
        if not sync:
            if entries_from is not None:
                raise AssertionError("entries saved without sync: a crash could lose them")
            self.unsynced = hard_state if hard_state is not None else self.unsynced
            return
        self.durable.save(hard_state if hard_state is not None else self.unsynced, entries_from, entries)
        self.unsynced = None

    def compact(self, snapshot: SnapshotMeta) -> None:
        self.points.before("log compaction")
        if self.unsynced is not None:  # the compaction's fsync makes the earlier commits durable too
            self.durable.save(self.unsynced)
            self.unsynced = None
        self.durable.compact(snapshot)

    def entries(self, lo: int, hi: int) -> list[LogEntry]:
        return self.durable.entries(lo, hi)

    def close(self) -> None:
        self.durable.close()


class CrashingSnapshotStore:
    """A :class:`MemorySnapshotStore` (``durable``) whose file writes and removals are crash points."""

    def __init__(self, durable: MemorySnapshotStore, points: CrashPoints) -> None:
        self.durable = durable
        self.points = points

    def save(self, meta: SnapshotMeta, data: bytes) -> None:
        self.points.before("snapshot file")
        self.durable.save(meta, data)

    def load(self, meta: SnapshotMeta | None = None) -> tuple[SnapshotMeta, bytes] | None:
        return self.durable.load(meta)

    def prune(self, keep: SnapshotMeta | None) -> None:
        self.points.before("snapshot prune")
        self.durable.prune(keep)
