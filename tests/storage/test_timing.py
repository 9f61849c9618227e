"""The synced-write histogram: inclusive upper bounds, cumulative reads, +Inf as the count."""

from __future__ import annotations

from garlicfarm.storage.timing import SYNC_BUCKETS, DurationHistogram


def test_buckets_are_etcds() -> None:
    assert SYNC_BUCKETS[0] == 0.001 and len(SYNC_BUCKETS) == 14
    assert abs(SYNC_BUCKETS[-1] - 8.192) < 1e-9


def test_observations_land_in_the_first_bound_at_or_above_them() -> None:
    h = DurationHistogram((0.01, 0.1, 1.0))
    for seconds in (0.005, 0.01, 0.05, 2.0):
        h.observe(seconds)
    buckets, count, total = h.read()
    assert buckets == [(0.01, 2), (0.1, 3), (1.0, 3)]
    assert count == 4  # 2.0 s is past every bound: counted in +Inf only
    assert abs(total - 2.065) < 1e-9
