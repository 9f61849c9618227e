"""app.liveness: ages on the farm's time and a monotonic clock; this node's skew from the log."""

from __future__ import annotations

import pytest

from garlicfarm.app.liveness import CLOCK_SKEW_S, Liveness, skew_threshold


def test_before_the_farm_has_a_time_ages_count_from_receipt() -> None:
    live = Liveness(own_id=1)
    assert live.age_s(2, None, 100.0) is None
    live.heard(2, 5_000_000, 0, local=100.0)
    assert live.farm_now_ms(130.0) is None
    assert live.age_s(2, 5_000_000, 130.0) == 30.0
    assert live.age_s(3, 5_000_000, 130.0) is None  # dated, but never heard here
    assert live.clock_skew_s() is None


def test_ages_follow_the_farm_time_and_keep_counting_when_it_stands_still() -> None:
    live = Liveness(own_id=1)
    live.heard(2, 1_000_000, 1_000_000, local=50.0)
    assert live.age_s(2, 1_000_000, 50.0) == 0.0
    assert live.age_s(3, 940_000, 50.0) == 60.0
    assert live.age_s(2, 1_000_000, 170.0) == 120.0  # nothing new for two minutes
    live.observe(1_000_000, 200.0)  # the same farm time seen again: the anchor stays
    assert live.farm_now_ms(200.0) == 1_150_000
    live.observe(1_200_000, 210.0)
    assert live.age_s(2, 1_000_000, 210.0) == 200.0
    assert live.age_s(2, 1_300_000, 210.0) == 0.0  # a report dated ahead is not negative


def test_own_skew_is_its_report_date_minus_the_farm_time() -> None:
    live = Liveness(own_id=1)
    live.heard(1, 8_200_000, 1_000_000, local=0.0)
    assert live.clock_skew_s() == 7200.0
    live.heard(2, 8_300_000, 8_300_000, local=1.0)  # other members leave it alone
    assert live.clock_skew_s() == 7200.0
    live.heard(1, 8_300_000, 8_300_000, local=2.0)
    assert live.clock_skew_s() == 0.0


@pytest.mark.parametrize(
    ("interval", "threshold"), [(5.0, CLOCK_SKEW_S), (60.0, CLOCK_SKEW_S), (600.0, 1200.0)]
)
def test_skew_threshold_allows_for_the_quorum_trailing(interval: float, threshold: float) -> None:
    assert skew_threshold(interval) == threshold


def test_a_new_node_knows_no_farm_time_and_no_age_of_a_member_it_never_heard() -> None:
    fresh = Liveness(own_id=1)
    assert fresh.farm_now_ms(5.0) is None
    assert fresh.age_s(2, 1_000, 5.0) is None


def test_before_the_farm_has_a_time_ages_count_from_when_a_report_was_applied() -> None:
    live = Liveness(own_id=1)
    live.heard(2, date_ms=1_000, farm_ms=0, local=10.0)
    assert live.age_s(2, 1_000, 10.5) == 0.5
    assert live.clock_skew_s() is None  # no farm time: no skew either
    live.heard(1, date_ms=1_000, farm_ms=0, local=10.0)
    assert live.clock_skew_s() is None


def test_any_farm_time_past_zero_counts() -> None:
    live = Liveness(own_id=1)
    live.heard(1, date_ms=3, farm_ms=1, local=0.0)
    assert live.farm_now_ms(0.0) == 1
    assert live.clock_skew_s() == 0.002
