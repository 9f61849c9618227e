"""The farm's time is the date a quorum of members has reached: no single member moves it.

Regression (issue 13): one record dated 2100 jumped the farm's clock (the newest committed date), so
every real member looked stale, its own later reports were ignored as "older", and the archive's
retention deleted every partition on every node.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from garlicfarm.app import scoring
from garlicfarm.app.archive import TelemetryArchive
from garlicfarm.app.schema import StatusRecord, parse_entry
from garlicfarm.app.state import FarmState
from garlicfarm.wire import Application, ClusterServer, Configuration, LogEntry
from tests.app.records import entry, record

NOW = 1_763_900_000_000  # November 2025
YEAR_2100 = 4_102_444_800_000
MINUTE = 60_000
CONFIG = Configuration(0, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:{9000 + i}") for i in (1, 2, 3)))


def farm(tmp_path: Path | None = None) -> tuple[FarmState, TelemetryArchive | None]:
    state = FarmState("farm")
    archive = None
    if tmp_path is not None:
        archive = TelemetryArchive(tmp_path, 1, retention_days=30, clock=lambda: state.now)
        state.on_record.append(archive.append)
    state.apply(1, LogEntry(1, CONFIG))
    return state, archive


def test_one_future_record_does_not_move_the_farm_time(tmp_path: Path) -> None:
    state, _ = farm(tmp_path)
    index = 2
    for t in range(3):
        for server in (1, 2, 3):
            state.apply(index, entry(record(server, NOW + t * MINUTE)))
            index += 1
    assert state.now == NOW + 2 * MINUTE
    partitions = sorted(p.name for p in tmp_path.glob("date=*"))
    state.apply(index, entry(record(3, YEAR_2100)))  # a wrong clock, or a forgery in 3's name
    assert state.now == NOW + 2 * MINUTE
    assert state.publisher is not None
    # the real member 3's next report replaces the one from the future: it is not locked out
    state.apply(index + 1, entry(record(3, NOW + 3 * MINUTE)))
    assert state.latest[3].date == NOW + 3 * MINUTE
    # and retention counted from the farm's time, not from 2100: nothing was deleted
    assert set(partitions) <= {p.name for p in tmp_path.glob("date=*")}


def test_a_record_from_the_future_is_not_fresh() -> None:
    value = entry(record(1, NOW + scoring.MAX_AHEAD_MS + 1)).value
    assert isinstance(value, Application)
    future = parse_entry(value.data, "farm")
    assert isinstance(future, StatusRecord)
    assert not scoring.fresh(future, NOW)
    assert scoring.fresh(attrs.evolve(future, date=NOW), NOW)


def test_the_farm_time_needs_a_quorum_and_never_goes_back() -> None:
    state, _ = farm()
    state.apply(2, entry(record(1, NOW)))
    assert state.now == 0  # one of three members is no quorum
    state.apply(3, entry(record(2, NOW - MINUTE)))
    assert state.now == NOW - MINUTE
    state.apply(4, entry(record(3, NOW + MINUTE)))
    assert state.now == NOW
    state.apply(5, LogEntry(1, Configuration(5, 0, CONFIG.servers[:1])))  # members shrink to {1}
    assert state.now == NOW


def _records(dates: dict[int, int]) -> dict[int, StatusRecord]:
    out = {}
    for server, date in dates.items():
        parsed = parse_entry(entry(record(server, date)).value.data, "farm")  # type: ignore[union-attr]
        assert isinstance(parsed, StatusRecord)
        out[server] = parsed
    return out


@pytest.mark.parametrize(
    ("dates", "quorum"),
    [
        ({1: 500}, 500),
        ({1: 500, 2: 400}, 400),  # 2 members: both (the 2nd newest), not the newest alone
        ({1: 500, 2: 400, 3: 300}, 400),  # 3: the 2nd newest
        ({1: 500, 2: 400, 3: 300, 4: 200}, 300),  # 4: the 3rd newest, neither the 2nd nor the 4th
        ({1: 500, 2: 400, 3: 300, 4: 200, 5: 100}, 300),  # 5: the 3rd newest
        ({1: 100, 2: 500, 3: 200, 4: 400}, 200),  # whatever the members' order
    ],
)
def test_the_quorum_date_is_the_n_half_plus_one_th_newest(dates: dict[int, int], quorum: int) -> None:
    latest = _records(dates)
    assert scoring.farm_time(latest, frozenset(dates), 0) == quorum
    assert scoring.farm_time(latest, frozenset(), 0) == quorum  # no configuration yet: every record counts
    # one more member without a record (it counts as 0) moves the quorum one rank older
    grown = frozenset(dates) | {99}
    expected = sorted([*dates.values(), 0], reverse=True)[(len(dates) + 1) // 2]
    assert scoring.farm_time(latest, grown, 0) == expected


def test_with_two_members_neither_moves_the_farm_time_alone() -> None:
    state, _ = farm()
    state.apply(2, LogEntry(1, Configuration(2, 0, CONFIG.servers[:2])))
    state.apply(3, entry(record(1, NOW)))
    assert state.now == 0
    state.apply(4, entry(record(1, NOW + MINUTE)))
    assert state.now == 0
    state.apply(5, entry(record(2, NOW - MINUTE)))
    assert state.now == NOW - MINUTE
    state.apply(6, entry(record(2, NOW + 2 * MINUTE)))
    assert state.now == NOW + MINUTE


def test_the_farm_time_does_not_go_back_when_members_are_added() -> None:
    state, _ = farm()
    for index, server in enumerate((1, 2, 3), start=2):
        state.apply(index, entry(record(server, NOW + server * MINUTE)))
    assert state.now == NOW + 2 * MINUTE
    five = Configuration(
        5, 0, (*CONFIG.servers, ClusterServer(4, "tcp://127.0.0.1:9004"), ClusterServer(5, "e"))
    )
    state.apply(5, LogEntry(1, five))  # two members with no record yet: the quorum's date would be 0
    assert state.members == {1, 2, 3, 4, 5}
    assert state.now == NOW + 2 * MINUTE
    state.apply(6, entry(record(4, NOW)))  # an old record of a new member moves nothing back either
    assert state.now == NOW + 2 * MINUTE
    state.apply(7, entry(record(4, NOW + 10 * MINUTE)))
    assert state.now == NOW + 2 * MINUTE  # 3rd newest of 10', 3', 2', 1', 0
    state.apply(8, entry(record(5, NOW + 10 * MINUTE)))
    assert state.now == NOW + 3 * MINUTE


def test_farm_time_never_returns_less_than_previous() -> None:
    latest = _records({1: 100, 2: 200})
    assert scoring.farm_time(latest, frozenset({1, 2}), 150) == 150
    assert scoring.farm_time(latest, frozenset({1, 2}), 99) == 100
    assert scoring.farm_time(latest, frozenset({1, 2, 3, 4}), 150) == 150
    assert scoring.farm_time({}, frozenset(), 150) == 150
