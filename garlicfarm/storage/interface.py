"""The log-store seam between the Raft driver and the disk.

The Raft core never touches storage: it hands the driver what to persist, the driver calls
:meth:`LogStore.save` (durable when it returns), and only then sends the messages that depend on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from garlicfarm.wire.payloads import Configuration, LogEntry


@attrs.frozen
class HardState:
    """What Raft must never forget: the current term and the vote cast in it.

    ``commit`` is advisory (it lets a restarted node re-apply without waiting for a leader); it is
    clamped to the last stored index on load, never trusted past the data it counts.
    """

    term: int = 0
    voted_for: int | None = None
    commit: int = 0


@attrs.frozen
class SnapshotMeta:
    """The log position and configuration a snapshot covers (entries up to ``last_index`` are gone)."""

    last_index: int
    last_term: int
    config: Configuration


@attrs.frozen
class StoredState:
    hard_state: HardState
    snapshot: SnapshotMeta | None
    #: index of ``entries[0]``: ``snapshot.last_index + 1``, or 1 with no snapshot
    first_index: int
    entries: tuple[LogEntry, ...]


class StorageError(Exception):
    """The store cannot be used: a corrupt or foreign file, a full disk, a failed write."""


class DataDirNotWritable(StorageError):
    """The data directory (or the store in it) cannot be written: a read-only mount or permissions.
    One line: ``<directory>: the data directory is not writable (...): <detail>``."""

    def __init__(self, directory: str, detail: str) -> None:
        why = "read-only file system or permissions"
        super().__init__(f"{directory}: the data directory is not writable ({why}): {detail}")
        self.directory = directory


#: what to do about a corrupt store, the end of every :class:`CorruptLog` message. The node must not
#: come back with an empty store on its own: it would forget its term and vote (Raft's safety needs
#: both), so the farm removes it and adds it back, as a new member the leader sends the log to.
RECOVERY = (
    "to recover, stop this node, move its data dir aside, remove it from the farm (garlicfarm "
    "remove-server), start it empty and add it back (add-server): the leader sends it the log"
)


class CorruptLog(StorageError):
    """A stored row or snapshot file fails its checksum (or is otherwise not what was written): it is
    never served. The message is one line naming the file, the entry index (or "snapshot", "hard
    state") and :data:`RECOVERY`."""

    def __init__(self, path: str, where: str, problem: str) -> None:
        super().__init__(f"{path}: {where} {problem}: the file is corrupt; {RECOVERY}")
        self.path = path
        self.where = where


class LogStore(Protocol):
    def load(self) -> StoredState:
        """Everything durable, as of the last completed save/compact."""

    def save(
        self,
        hard_state: HardState | None = None,
        entries_from: int | None = None,
        entries: Sequence[LogEntry] = (),
        *,
        sync: bool = True,
    ) -> None:
        """Persist atomically and durably (one transaction, fsynced before returning).

        With ``sync`` false the transaction need not be durable when this returns: a crash may lose
        it, with every other unsynced save since the last synced one; the next synced save (or
        compaction) makes them durable too, in order. Only for what Raft lets a crash lose: the
        commit index alone (the driver syncs every save of entries, term or vote).

        With ``entries_from``, first delete every entry at index >= ``entries_from``, then store
        ``entries`` at ``entries_from``, ``entries_from + 1``, ...  ``entries_from`` may be at most
        last index + 1 and must be greater than the snapshot's last index.
        """

    def compact(self, snapshot: SnapshotMeta) -> None:
        """Record ``snapshot`` and drop every entry at index <= ``snapshot.last_index``.

        If the log does not reach that far, the whole log is dropped (the snapshot replaces it).
        """

    def entries(self, lo: int, hi: int) -> list[LogEntry]:
        """Entries with ``lo <= index < hi`` (clipped to what is stored)."""

    def close(self) -> None: ...
