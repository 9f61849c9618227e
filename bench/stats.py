"""Percentiles and summaries shared by the benchmarks."""

from __future__ import annotations

import statistics


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank percentile (NaN when there is nothing to rank)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def summary(seconds: list[float]) -> dict[str, float]:
    """min/median/p99/max of a list of durations."""
    return {
        "min_s": min(seconds),
        "median_s": statistics.median(seconds),
        "p99_s": percentile(seconds, 99),
        "max_s": max(seconds),
    }
