"""What ``garlicfarm members`` shows for each member (garlicfarm.app.members.member_details): the
leader's match index and lag for itself and for each follower, none of them on a follower, each
member's report age (on the farm's time, or since this node heard it before the farm has a time,
rounded to 0.1 s) and the health word its record, its lag and its router give."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from garlicfarm.app.liveness import Liveness
from garlicfarm.app.members import JOB_LAG_MS, LAG_ENTRIES, member_details
from garlicfarm.app.schema import StatusRecord, parse_entry
from garlicfarm.app.scoring import MAX_AHEAD_MS
from tests.app.records import record

if TYPE_CHECKING:
    from garlicfarm.service import GarlicFarmService

NOW_MS = 1_800_000_000_000  # the farm's time
LOCAL = 5_000.0  # this node's monotonic clock when it is asked
INTERVAL = 60.0


def status(member: int, date: int, **changes: Any) -> StatusRecord:
    parsed = parse_entry(json.dumps(record(member, date, **changes)).encode(), "farm")
    assert isinstance(parsed, StatusRecord)
    return parsed


def node(
    servers: range,
    latest: dict[int, StatusRecord],
    *,
    leader: bool,
    now: int = NOW_MS,
    liveness: Liveness | None = None,
) -> GarlicFarmService:
    """Just what member_details reads of a node: server 1's core, its state and its clocks."""
    core = SimpleNamespace(
        id=1,
        is_leader=lambda: leader,
        config=SimpleNamespace(servers=[SimpleNamespace(id=i) for i in servers]),
    )
    fake = SimpleNamespace(
        driver=SimpleNamespace(core=core),
        state=SimpleNamespace(latest=latest, now=now),
        monotonic=lambda: LOCAL,
        liveness=liveness or Liveness(1),
        app_config=SimpleNamespace(interval=INTERVAL),
    )
    return cast("GarlicFarmService", fake)


def raft(**progress: int) -> dict[str, Any]:
    """The driver's status: this node's log ends at 120, 110 committed; ``progress``: id -> match."""
    return {
        "last_log_index": 120,
        "commit_index": 110,
        "progress": {key.lstrip("s"): {"match": match} for key, match in progress.items()},
    }


def farm() -> dict[int, StatusRecord]:
    return {
        1: status(1, NOW_MS),
        2: status(2, NOW_MS - 12_345),  # 12.345 s ago
        3: status(3, NOW_MS - 1_000),
        4: status(4, NOW_MS - 1_000, net="FIREWALLED"),
        5: status(5, NOW_MS - 1_000, lag=JOB_LAG_MS + 1),
        # 6 never reported
        7: status(7, NOW_MS + MAX_AHEAD_MS + 1),  # dated too far ahead to be believed
    }


def test_the_leader_details_its_own_and_each_followers_match_lag_age_and_health() -> None:
    details = member_details(
        node(range(1, 8), farm(), leader=True), raft(s2=100, s3=110 - LAG_ENTRIES - 1, s4=110, s5=110)
    )
    assert details == {
        1: {"match": 120, "lag": 0, "report_age_s": 0.0, "health": "ok"},  # ahead of the commit: lag 0
        2: {"match": 100, "lag": 10, "report_age_s": 12.3, "health": "ok"},
        3: {"match": 59, "lag": LAG_ENTRIES + 1, "report_age_s": 1.0, "health": "lagging"},
        4: {"match": 110, "lag": 0, "report_age_s": 1.0, "health": "lagging"},  # its router is firewalled
        5: {"match": 110, "lag": 0, "report_age_s": 1.0, "health": "lagging"},  # its router's jobs lag
        6: {"match": None, "lag": None, "report_age_s": None, "health": "down"},  # no progress, no report
        7: {"match": None, "lag": None, "report_age_s": 0.0, "health": "stale"},
    }


def test_a_follower_knows_no_match_index_nor_lag() -> None:
    details = member_details(node(range(1, 4), farm(), leader=False), raft(s2=100, s3=0))
    assert [(d["match"], d["lag"]) for d in details.values()] == [(None, None)] * 3
    assert [d["health"] for d in details.values()] == ["ok", "ok", "ok"]  # member 3's lag unknown here


def test_a_leader_at_its_commit_index_shows_lag_zero_for_itself() -> None:
    """Lag is never below zero, and exactly zero for a member at the commit index."""
    details = member_details(node(range(1, 3), farm(), leader=True), {**raft(s2=111), "last_log_index": 110})
    assert [(d["match"], d["lag"]) for d in details.values()] == [(110, 0), (111, 0)]


def test_before_the_farm_has_a_time_ages_count_from_when_this_node_heard_each_member() -> None:
    liveness = Liveness(1)
    liveness.heard(2, NOW_MS, 0, LOCAL - 30.25)  # heard 30.25 s ago, the farm's time unknown (0)
    liveness.heard(3, NOW_MS, 0, LOCAL - 400.0)
    latest = {2: status(2, NOW_MS), 3: status(3, NOW_MS)}
    details = member_details(node(range(1, 4), latest, leader=False, now=0, liveness=liveness), raft())
    assert [d["report_age_s"] for d in details.values()] == [None, 30.2, 400.0]  # 1 never reported
    # no farm time yet: no report is dated ahead of it, each member's health is its own
    assert [d["health"] for d in details.values()] == ["down", "ok", "down"]
