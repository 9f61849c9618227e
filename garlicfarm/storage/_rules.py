"""The rules every log store applies, shared so that each refuses the same misuse the same way."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from garlicfarm.storage.interface import HardState, SnapshotMeta
from garlicfarm.wire.payloads import LogEntry

#: the largest log index or term: SQLite's integers and JRaft's longs are signed 64-bit; the codec
#: refuses larger values off the wire, and a store never holds one
MAX_INDEX = 2**63 - 1


def check_hard_state(hard_state: HardState) -> None:
    if not 0 <= hard_state.term <= MAX_INDEX:
        raise ValueError(f"term {hard_state.term} is outside 0..2^63-1")
    if hard_state.voted_for is not None and not 0 <= hard_state.voted_for <= MAX_INDEX:
        raise ValueError(f"voted_for {hard_state.voted_for} is outside 0..2^63-1")
    if not 0 <= hard_state.commit <= MAX_INDEX:
        raise ValueError(f"commit {hard_state.commit} is outside 0..2^63-1")


def check_save(first: int, last: int, entries_from: int | None, entries: Sequence[LogEntry]) -> None:
    """``first``/``last``: the store's first index (snapshot + 1) and last index (>= first - 1)."""
    if entries_from is None:
        if entries:
            raise ValueError(f"{len(entries)} entries given without entries_from")
        return
    if entries_from < first:
        raise ValueError(f"entries_from {entries_from} is not past the snapshot (first index {first})")
    if entries_from > last + 1:
        raise ValueError(f"entries_from {entries_from} would leave a gap after the last index {last}")
    if entries_from + len(entries) - 1 > MAX_INDEX:
        raise ValueError(f"entries would run past the largest index {MAX_INDEX}")
    for offset, entry in enumerate(entries):
        if not 0 <= entry.term <= MAX_INDEX:
            raise ValueError(f"entry {entries_from + offset} has term {entry.term}, outside 0..2^63-1")


def check_snapshot(current: SnapshotMeta | None, snapshot: SnapshotMeta) -> None:
    if not 0 <= snapshot.last_index <= MAX_INDEX:
        raise ValueError(f"snapshot index {snapshot.last_index} is out of range")
    if not 0 <= snapshot.last_term <= MAX_INDEX:
        raise ValueError(f"snapshot term {snapshot.last_term} is outside 0..2^63-1")
    if current is not None and snapshot.last_index < current.last_index:
        raise ValueError(
            f"snapshot at index {snapshot.last_index} is older than the stored one at {current.last_index}"
        )


def clamp_commit(hard_state: HardState, last: int) -> HardState:
    """A commit index past the stored log is a counter we cannot trust: cap it at the last index."""
    if hard_state.commit > last:
        return attrs.evolve(hard_state, commit=last)
    return hard_state
