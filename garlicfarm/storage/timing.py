"""Durations of the log store's synced writes, bucketed as etcd buckets its WAL fsyncs.

The store observes each synced save (its transaction, whose commit is the fsync) on whichever thread
writes; the metrics endpoint reads the buckets on the reactor's. A lock keeps the two consistent: a
scrape never sees a count that its buckets do not add up to.
"""

from __future__ import annotations

import threading
from bisect import bisect_left

#: upper bounds in seconds, 1 ms doubling to 8.192 s (etcd_disk_wal_fsync_duration_seconds' buckets)
SYNC_BUCKETS: tuple[float, ...] = tuple(0.001 * 2**i for i in range(14))


class DurationHistogram:
    """Counts of durations per bucket (each bound an upper bound, inclusive), their count and sum."""

    def __init__(self, bounds: tuple[float, ...] = SYNC_BUCKETS) -> None:
        self.bounds = bounds
        self._counts = [0] * len(bounds)
        self._count = 0
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, seconds: float) -> None:
        index = bisect_left(self.bounds, seconds)
        with self._lock:
            if index < len(self._counts):
                self._counts[index] += 1
            self._count += 1
            self._sum += seconds

    def read(self) -> tuple[list[tuple[float, int]], int, float]:
        """(bound, observations up to it) per bucket (cumulative, as Prometheus has them), the count
        of all observations (the +Inf bucket) and their sum."""
        with self._lock:
            counts, count, total = list(self._counts), self._count, self._sum
        cumulative, running = [], 0
        for bound, n in zip(self.bounds, counts, strict=True):
            running += n
            cumulative.append((bound, running))
        return cumulative, count, total
