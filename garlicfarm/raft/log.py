"""The Raft log as the core sees it: a snapshot boundary plus the entries after it, in memory."""

from __future__ import annotations

from collections.abc import Sequence

from garlicfarm.wire.payloads import LogEntry


class RaftLog:
    """Entries ``snapshot_index + 1 .. last_index``; index ``snapshot_index`` has ``snapshot_term``.

    Tracks the lowest index changed since the last :meth:`take_unpersisted`, so the driver persists
    exactly what changed (a truncation included) in one write.
    """

    def __init__(self, snapshot_index: int, snapshot_term: int, entries: Sequence[LogEntry]) -> None:
        self.snapshot_index = snapshot_index
        self.snapshot_term = snapshot_term
        self._entries: list[LogEntry] = list(entries)
        self._dirty_from: int | None = None

    @property
    def first_index(self) -> int:
        return self.snapshot_index + 1

    @property
    def last_index(self) -> int:
        return self.snapshot_index + len(self._entries)

    @property
    def last_term(self) -> int:
        return self._entries[-1].term if self._entries else self.snapshot_term

    def term_at(self, index: int) -> int | None:
        """The term of the entry at ``index``; ``None`` if compacted away or past the end."""
        if index == self.snapshot_index:
            return self.snapshot_term
        if self.snapshot_index < index <= self.last_index:
            return self._entries[index - self.snapshot_index - 1].term
        return None

    def entry(self, index: int) -> LogEntry:
        return self._entries[index - self.snapshot_index - 1]

    def slice(self, lo: int, hi: int) -> list[LogEntry]:
        """Entries ``lo <= index < hi`` (``lo`` must be past the snapshot)."""
        base = self.snapshot_index + 1
        return self._entries[lo - base : hi - base]

    def is_up_to_date(self, last_term: int, last_index: int) -> bool:
        """Raft §5.4.1: is a log ending at (last_term, last_index) at least as up to date as ours?"""
        return last_term > self.last_term or (last_term == self.last_term and last_index >= self.last_index)

    def append(self, entries: Sequence[LogEntry]) -> int:
        if entries:
            self._mark(self.last_index + 1)
            self._entries.extend(entries)
        return self.last_index

    def truncate_and_append(self, after: int, entries: Sequence[LogEntry]) -> None:
        """Replace everything past index ``after`` with ``entries``."""
        assert after >= self.snapshot_index
        if after < self.last_index:
            del self._entries[after - self.snapshot_index :]
            self._mark(after + 1)
        self.append(entries)

    def compact(self, index: int, term: int) -> None:
        """Drop entries up to ``index`` (now covered by a snapshot)."""
        if index <= self.last_index and self.term_at(index) == term:
            del self._entries[: index - self.snapshot_index]
        else:  # the snapshot is past or disagrees with our log: it replaces the log entirely
            self._entries.clear()
            self._mark(index + 1)
        self.snapshot_index, self.snapshot_term = index, term
        if self._dirty_from is not None and self._dirty_from <= index:
            self._dirty_from = index + 1 if index + 1 <= self.last_index else None

    def _mark(self, index: int) -> None:
        if self._dirty_from is None or index < self._dirty_from:
            self._dirty_from = index

    @property
    def unpersisted_from(self) -> int | None:
        return self._dirty_from

    def take_unpersisted(self) -> tuple[int | None, list[LogEntry]]:
        """What changed since the last call: (first changed index, entries from there to the end)."""
        start = self._dirty_from
        self._dirty_from = None
        if start is None:
            return None, []
        return start, self.slice(start, self.last_index + 1)
