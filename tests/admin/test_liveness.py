"""Members' liveness on the console is judged on the farm's time, not on this node's wall clock; a
node whose clock is off the farm's says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock

from garlicfarm.admin.farm import FarmHandle
from garlicfarm.app.schema import StatusRecord, parse_entry
from garlicfarm.raft.core import RaftCore
from garlicfarm.service import GarlicFarmService
from garlicfarm.wire import ClusterServer, Configuration, LogEntry
from tests.admin.nodes import handle, make_node
from tests.app.records import record

TWO_HOURS_MS = 7_200_000


@pytest.fixture
def wall() -> MemoryReactorClock:
    clock = MemoryReactorClock()
    clock.advance(1_800_000_000)  # this node's wall clock (2027), what it dates its reports with
    return clock


@pytest.fixture
def node(tmp_path: Path, wall: MemoryReactorClock) -> Iterator[GarlicFarmService]:
    service = make_node(tmp_path, wall)
    yield service
    service.stopService()


def three_members(node: GarlicFarmService, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the single-node farm look like a farm of three to the console (and the state)."""
    servers = tuple(ClusterServer(i, f"tcp://127.0.0.1:{9000 + i}") for i in (1, 2, 3))
    three = Configuration(node.state.index + 1, 0, servers)
    monkeypatch.setattr(RaftCore, "config", property(lambda self: three))
    node.state.apply(node.state.index + 1, LogEntry(1, three))


def report(node: GarlicFarmService, member: int, date: int) -> None:
    parsed = parse_entry(json.dumps(record(member, date)).encode(), "farm")
    assert isinstance(parsed, StatusRecord)
    node.state.apply_status(node.state.index + 1, parsed)


def test_a_node_whose_clock_is_ahead_sees_healthy_members_and_warns_about_itself(
    node: GarlicFarmService, wall: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    farm: FarmHandle = handle(node)
    three_members(node, monkeypatch)
    true_ms = int(wall.seconds() * 1000) + 60_000  # a minute on, by the farm's clocks
    report(node, 2, true_ms)
    report(node, 3, true_ms + 1000)
    # this node's clock jumps 2 h ahead: its own report, and its idea of now, are dated by it
    report(node, 1, true_ms + TWO_HOURS_MS)
    view = farm.overview(true_ms / 1000 + 7200)
    health = {m["id"]: m["health"] for m in view["members"]}
    assert health[2] == "ok" and health[3] == "ok", view["members"]
    assert health[1] == "stale"  # its own report is dated too far ahead to be believed
    assert [m["ahead"] for m in view["members"]] == [True, False, False]
    assert view["node"]["clock_skew_s"] == pytest.approx(7199, abs=2)
    assert "clock is 2.0 h ahead of the farm's time" in view["node"]["clock_warning"]
    status = node.status()
    assert status["clock_skew_s"] == view["node"]["clock_skew_s"]
    assert status["clock_warning"] == view["node"]["clock_warning"]


def test_members_age_on_the_monotonic_clock_when_the_farm_goes_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wall = MemoryReactorClock()
    wall.advance(1_800_000_000)
    steady = Clock()  # the monotonic clock, apart from the wall clock
    node = make_node(tmp_path, wall)
    node.monotonic = steady.seconds
    try:
        farm = handle(node)
        three_members(node, monkeypatch)
        now_ms = int(wall.seconds() * 1000)
        for member in (1, 2, 3):
            report(node, member, now_ms)
        assert {m["health"] for m in farm.overview(wall.seconds())["members"]} == {"ok"}
        assert farm.overview(wall.seconds())["node"]["clock_warning"] is None
        wall.advance(-3 * 3600)  # the wall clock is set back: nothing ages on it
        steady.advance(60)  # a minute passes: twelve 5 s report intervals of silence
        members = farm.overview(wall.seconds())["members"]
        assert {m["health"] for m in members} == {"down"}
        assert all(m["last_status_age"] == pytest.approx(60) for m in members)
    finally:
        node.stopService()
