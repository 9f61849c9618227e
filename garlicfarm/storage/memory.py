"""An in-memory :class:`~garlicfarm.storage.interface.LogStore` for the deterministic simulator.

The object *is* the disk: a simulated crash discards the Raft core and keeps the store, and everything a
completed :meth:`MemoryLogStore.save` or :meth:`MemoryLogStore.compact` wrote survives it. Each call
either completes or raises before changing anything, so a crash can never leave half a write.
:class:`~garlicfarm.wire.payloads.LogEntry` is immutable, so entries are shared, never copied.
"""

from __future__ import annotations

from collections.abc import Sequence

from garlicfarm.storage._rules import check_hard_state, check_save, check_snapshot, clamp_commit
from garlicfarm.storage.interface import HardState, SnapshotMeta, StoredState
from garlicfarm.wire.payloads import LogEntry


class MemoryLogStore:
    __slots__ = ("_entries", "_hard_state", "_snapshot")

    def __init__(self) -> None:
        self._hard_state = HardState()
        self._snapshot: SnapshotMeta | None = None
        self._entries: list[LogEntry] = []

    @property
    def hard_state(self) -> HardState:
        """The durable hard state (cheap, unlike :meth:`load`: for the simulator's checks)."""
        return self._hard_state

    @property
    def snapshot(self) -> SnapshotMeta | None:
        return self._snapshot

    @property
    def first_index(self) -> int:
        return self._snapshot.last_index + 1 if self._snapshot is not None else 1

    @property
    def last_index(self) -> int:
        """The last index stored, or the snapshot's index when no entry follows it (0 when empty)."""
        return self.first_index + len(self._entries) - 1

    def load(self) -> StoredState:
        return StoredState(
            clamp_commit(self._hard_state, self.last_index),
            self._snapshot,
            self.first_index,
            tuple(self._entries),
        )

    def save(
        self,
        hard_state: HardState | None = None,
        entries_from: int | None = None,
        entries: Sequence[LogEntry] = (),
        *,
        sync: bool = True,  # memory is as durable as it gets either way
    ) -> None:
        first = self.first_index
        check_save(first, first + len(self._entries) - 1, entries_from, entries)
        if hard_state is not None:
            check_hard_state(hard_state)
            self._hard_state = hard_state
        if entries_from is not None:
            del self._entries[entries_from - first :]
            self._entries.extend(entries)

    def compact(self, snapshot: SnapshotMeta) -> None:
        check_snapshot(self._snapshot, snapshot)
        index = snapshot.last_index
        if self._term_at(index) == snapshot.last_term:
            del self._entries[: index - self.first_index + 1]
        else:  # the log ends before the snapshot or disagrees with it there: the snapshot replaces it
            self._entries.clear()
        self._snapshot = snapshot

    def _term_at(self, index: int) -> int | None:
        if self._snapshot is not None and index == self._snapshot.last_index:
            return self._snapshot.last_term
        if index == 0:
            return 0  # Raft's convention for the position before the first entry
        first = self.first_index
        if first <= index < first + len(self._entries):
            return self._entries[index - first].term
        return None

    def entries(self, lo: int, hi: int) -> list[LogEntry]:
        first = self.first_index
        return self._entries[max(lo - first, 0) : max(hi - first, 0)]

    def copy(self) -> MemoryLogStore:
        """An independent store holding the same durable state (for forking a simulation)."""
        other = MemoryLogStore()
        other._hard_state = self._hard_state
        other._snapshot = self._snapshot
        other._entries = list(self._entries)
        return other

    def close(self) -> None:
        """Nothing to release; the store stays usable (the simulator keeps it across crashes)."""
