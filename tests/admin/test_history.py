"""The console's health history (garlicfarm.admin.history): what a sample keeps of an overview's
member, how many samples a member keeps, and members that left forgotten."""

from __future__ import annotations

from garlicfarm.admin.history import LEVELS, HealthHistory, Sample


def member(
    server: int, health: str = "ok", lag: int | None = 3, age: float | None = 12.34
) -> dict[str, object]:
    return {"id": server, "health": health, "lag": lag, "last_status_age": age}


def test_a_sample_keeps_health_lag_and_report_age() -> None:
    history = HealthHistory(keep=10)
    history.record(100.0, [member(1, "stale", 7, 45.67)])
    assert history.samples(1) == [Sample(100.0, LEVELS.index("stale"), 7, 45.67)]
    assert history.to_json() == {"1": [[100.0, 2, 7, 45.7]]}


def test_times_and_ages_are_rounded_for_the_page() -> None:
    assert Sample(1.23456, 0, None, 9.876).to_json() == [1.235, 0, None, 9.9]
    assert Sample(1.0, 3, None, None).to_json() == [1.0, 3, None, None]


def test_each_member_keeps_its_last_samples_only() -> None:
    history = HealthHistory(keep=3)
    for t in range(5):
        history.record(float(t), [member(1), member(2)])
    assert [s.t for s in history.samples(1)] == [2.0, 3.0, 4.0]
    assert history.keep == 3


def test_a_member_that_left_is_forgotten() -> None:
    history = HealthHistory(keep=3)
    history.record(1.0, [member(1), member(2)])
    history.record(2.0, [member(2)])
    assert history.samples(1) == [] and list(history.to_json()) == ["2"]
