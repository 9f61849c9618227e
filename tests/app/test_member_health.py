"""A member's health from its report age, its log lag and its router (garlicfarm.app.members.health):
each threshold at the bound and one step past it."""

from __future__ import annotations

import types

import pytest

from garlicfarm.app.members import JOB_LAG_MS, LAG_ENTRIES, STALE_INTERVALS, dated_ahead, health
from garlicfarm.app.scoring import MAX_AHEAD_MS

INTERVAL = 60.0
STALE = STALE_INTERVALS * INTERVAL  # 150 s
DOWN = 2 * STALE  # 300 s


@pytest.mark.parametrize(
    ("age", "verdict"),
    [
        (None, "down"),  # never reported
        (0.0, "ok"),
        (STALE, "ok"),  # at the bound: not yet stale
        (STALE + 0.001, "stale"),
        (DOWN, "stale"),
        (DOWN + 0.001, "down"),
    ],
)
def test_the_age_of_the_latest_report(age: float | None, verdict: str) -> None:
    assert health(age, INTERVAL) == verdict


def test_a_report_dated_ahead_of_the_farm_is_stale_however_young() -> None:
    assert health(1.0, INTERVAL, ahead=True) == "stale"
    assert health(DOWN + 1, INTERVAL, ahead=True) == "down"  # down wins


@pytest.mark.parametrize(
    ("lag", "job_lag", "verdict"),
    [
        (None, 0, "ok"),  # not the leader: no lag known
        (LAG_ENTRIES, 0, "ok"),
        (LAG_ENTRIES + 1, 0, "lagging"),
        (0, JOB_LAG_MS, "ok"),
        (0, JOB_LAG_MS + 0.5, "lagging"),
        (LAG_ENTRIES + 1, JOB_LAG_MS + 1, "lagging"),
    ],
)
def test_log_lag_and_router_job_lag_each_make_a_member_lagging(
    lag: int | None, job_lag: float, verdict: str
) -> None:
    assert health(10.0, INTERVAL, lag=lag, job_lag=job_lag) == verdict


@pytest.mark.parametrize(
    ("net_status", "verdict"),
    [(None, "ok"), ("OK", "ok"), ("UNKNOWN", "ok"), ("FIREWALLED", "lagging"), ("ok", "lagging"), ("", "ok")],
)
def test_a_router_in_trouble_makes_a_member_lagging(net_status: str | None, verdict: str) -> None:
    assert health(10.0, INTERVAL, net_status=net_status) == verdict


def test_staleness_wins_over_lagging() -> None:
    assert health(STALE + 1, INTERVAL, lag=LAG_ENTRIES + 1, net_status="FIREWALLED") == "stale"


@pytest.mark.parametrize(
    ("date", "now", "ahead"),
    [
        (MAX_AHEAD_MS + 10**6, 0, False),  # the farm has no time yet: nothing is ahead of it
        (MAX_AHEAD_MS + 2, 1, True),  # from the farm's first millisecond on
        (MAX_AHEAD_MS + 1, 1, False),  # at the bound
    ],
)
def test_a_report_is_dated_ahead_only_past_the_bound_of_a_farm_time(date: int, now: int, ahead: bool) -> None:
    assert dated_ahead(types.SimpleNamespace(date=date), now) is ahead  # type: ignore[arg-type]
    assert dated_ahead(None, now) is False  # no report: nothing to judge
