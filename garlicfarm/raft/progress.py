"""What a leader knows of each follower's log (etcd's Progress, trimmed to what we need)."""

from __future__ import annotations

import enum
from collections import deque


class ProgressState(enum.Enum):
    #: one AppendEntries at a time until the follower's log position is found
    PROBE = "probe"
    #: position known: stream AppendEntries optimistically, up to max_inflight unacknowledged
    REPLICATE = "replicate"
    #: the entries it needs are compacted away: send the snapshot, one chunk at a time
    SNAPSHOT = "snapshot"


class Progress:
    __slots__ = (
        "inflight",
        "match",
        "next",
        "paused",
        "recent_active",
        "snapshot_expect",
        "snapshot_index",
        "snapshot_offset",
        "stalled_beats",
        "state",
    )

    def __init__(self, next_index: int) -> None:
        self.match = 0
        self.next = next_index
        self.state = ProgressState.PROBE
        self.paused = False
        #: last index carried by each AppendEntries in flight (REPLICATE only)
        self.inflight: deque[int] = deque()
        self.recent_active = False
        self.stalled_beats = 0
        #: while SNAPSHOT: which snapshot (its last index) and the next byte offset to send
        self.snapshot_index = 0
        self.snapshot_offset = 0
        #: the offset the chunk in flight ends at: only its answer moves the transfer (None: no chunk
        #: in flight, so an answer is a duplicate or a late one from an older transfer)
        self.snapshot_expect: int | None = None

    def become_snapshot(self, snapshot_index: int) -> None:
        self.state = ProgressState.SNAPSHOT
        self.snapshot_index = snapshot_index
        self.snapshot_offset = 0
        self.snapshot_expect = None
        self.paused = False
        self.inflight.clear()

    def become_probe(self) -> None:
        self.state = ProgressState.PROBE
        self.next = self.match + 1
        self.paused = False
        self.inflight.clear()

    def become_replicate(self) -> None:
        self.state = ProgressState.REPLICATE
        self.next = self.match + 1
        self.paused = False
        self.inflight.clear()

    def acknowledge(self, index: int) -> bool:
        """The follower's log matches ours up to ``index``; True if that is news."""
        while self.inflight and self.inflight[0] <= index:
            self.inflight.popleft()
        if index <= self.match:
            return False  # e.g. a heartbeat's answer: not progress, so not a reason to stop probing
        self.stalled_beats = 0
        self.match = index
        self.next = max(self.next, index + 1)
        return True

    def __repr__(self) -> str:
        return (
            f"Progress({self.state.value} match={self.match} next={self.next} inflight={len(self.inflight)})"
        )
