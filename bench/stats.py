"""Percentiles and summaries shared by the benchmarks."""

from __future__ import annotations

import statistics

import psutil


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


def cpu_seconds(proc: psutil.Process) -> float:
    """User and system CPU seconds ``proc`` has used so far."""
    times = proc.cpu_times()
    return float(times.user + times.system)


def cpu_us_per_entry(spent: dict[str, float], committed: int) -> dict[str, float]:
    """CPU microseconds per committed entry of each named process (``spent``: CPU seconds in the
    phase), and of all of them together (``"all"``)."""
    per_entry = {name: round(s / committed * 1e6, 2) for name, s in spent.items()}
    per_entry["all"] = round(sum(spent.values()) / committed * 1e6, 2)
    return per_entry
