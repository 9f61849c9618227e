"""The application loop on real drivers: status reports through the leader, one publisher for all."""

from __future__ import annotations

import json
from typing import Any

from twisted.internet.defer import Deferred, succeed

from garlicfarm.app.archive import TelemetryArchive
from garlicfarm.app.publishing import MetaLSRole, StatusReporter
from garlicfarm.app.state import FarmState
from garlicfarm.router.interface import LeafStatus, MetaLease, RouterStatus
from tests.raft.farm import Farm

HOUR = 3_600_000


class FakeRouter:
    def __init__(self, server: int) -> None:
        self.status = RouterStatus("OK", uptime_ms=10 * server * HOUR, participating_tunnels=100)
        self.leaves = [LeafStatus(f"leaf-{server}", uptime_ms=HOUR, tunnels_current=2 + server)]
        self.down = False

    def router_status(self) -> Deferred[RouterStatus]:
        return succeed(self.status)

    def leaf_status(self) -> Deferred[list[LeafStatus]]:
        return succeed(self.leaves)


class RecordingHook:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def publish(self, master: str, contents: tuple[MetaLease, ...]) -> Deferred[None]:
        self.calls.append(("publish", contents))
        return succeed(None)

    def stop(self, master: str) -> Deferred[None]:
        self.calls.append(("stop", None))
        return succeed(None)


class AppFarm:
    def __init__(self, tmp: Any) -> None:
        self.farm = Farm(3, machine=lambda _i: FarmState("farm"))
        self.routers = {i: FakeRouter(i) for i in (1, 2, 3)}
        self.hooks = {i: RecordingHook() for i in (1, 2, 3)}
        self.reporters: dict[int, StatusReporter] = {}
        self.archives = {}
        for i in (1, 2, 3):
            driver = self.farm.drivers[i]
            state: FarmState = self.farm.machines[i]
            reporter = StatusReporter(
                self.farm.clock,
                driver,
                lambda leader, request, d=driver: d.transport.send(leader, request),  # type: ignore[misc]
                self.routers[i],
                "farm",
                interval=1.0,
                wall_clock_ms=lambda: int(self.farm.clock.seconds() * 1000),
            )
            role = MetaLSRole(i, "master", self.hooks[i], reporter)
            state.on_change.append(role.changed)
            archive = TelemetryArchive(tmp / f"archive-{i}", i)
            state.on_record.append(archive.append)
            self.archives[i] = archive
            reporter.start(first_delay=0.5)
            self.reporters[i] = reporter

    def states(self) -> list[FarmState]:
        return [self.farm.machines[i] for i in (1, 2, 3)]


def test_every_member_agrees_and_follows_a_failure(tmp_path: Any) -> None:
    app = AppFarm(tmp_path)
    app.farm.run(6.0)
    states = app.states()
    assert {s.publisher for s in states} == {3}  # the longest uptime, not necessarily the leader
    assert len({s.snapshot() for s in states}) == 1
    assert [lease.destination for lease in states[0].leases] == ["leaf-3", "leaf-2", "leaf-1"]
    assert app.hooks[3].calls and app.hooks[3].calls[-1][0] == "publish"
    for other in (1, 2):  # whoever published before node 3's first report arrived has stopped since
        assert not app.hooks[other].calls or app.hooks[other].calls[-1] == ("stop", None)

    app.routers[3].status = RouterStatus("ERROR_CLOCK_SKEW", uptime_ms=30 * HOUR)
    app.farm.run(3.0)
    assert {s.publisher for s in app.states()} == {2}
    assert ("stop", None) in app.hooks[3].calls
    assert app.hooks[2].calls[-1][0] == "publish"


def test_a_silent_publisher_goes_stale(tmp_path: Any) -> None:
    app = AppFarm(tmp_path)
    app.farm.run(6.0)
    assert {s.publisher for s in app.states()} == {3}
    app.reporters[3].stop()  # it keeps its Raft role but stops reporting
    app.farm.run(190.0)  # longer than the freshness window
    assert {s.publisher for s in app.states()} == {2}


def test_reports_are_archived_once(tmp_path: Any) -> None:
    app = AppFarm(tmp_path)
    app.farm.run(5.0)
    lines = [
        json.loads(line)
        for path in (tmp_path / "archive-1").glob("date=*/node-1.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert lines and len({(x["record"]["id"], x["record"]["date"]) for x in lines}) == len(lines)
    assert {x["record"]["id"] for x in lines} == {1, 2, 3}


def test_no_leader_means_quick_bounded_retries_and_a_report_as_soon_as_one_leads(tmp_path: Any) -> None:
    """Regression (issue 16): a failed report backed off from the interval, doubling (120 s after a
    restart with a 60 s interval): a restarted member vanished from the Meta LS2 for two minutes."""
    app = AppFarm(tmp_path)
    app.farm.run(3.0)
    leader = app.farm.leader()
    others = [i for i in (1, 2, 3) if i != leader.core.id]
    for i in (1, 2, 3):
        app.farm.stop(i)
    app.farm.start(others[0])  # alone: no leader can be elected
    reporter = app.reporters[others[0]]
    reporter.driver = app.farm.drivers[others[0]]
    reporter.interval = 60.0  # production's interval: retries must not wait for it
    before, submitted = reporter.failures, reporter.submitted
    app.farm.run(10.0)
    tries = reporter.failures - before
    assert 2 <= tries <= 8  # 0.5, 1, 2, 4 s apart (jittered): neither a pile-up nor a long wait
    app.farm.start(others[1])  # a leader can be elected again
    app.farm.run(20.0)  # at most one capped retry (15 s) away, or at once on the leader change
    assert reporter.submitted > submitted
