"""The common algorithm's rules, one per test."""

from __future__ import annotations

import json

import attrs
import pytest

from garlicfarm.app import scoring
from garlicfarm.app.schema import StatusRecord, parse_entry
from tests.app.records import HOUR, record

MEMBERS = frozenset({1, 2, 3})


def rec(server: int, date: int = 1_000_000, **kw: object) -> StatusRecord:
    parsed = parse_entry(json.dumps(record(server, date, **kw)).encode(), "farm")  # type: ignore[arg-type]
    assert isinstance(parsed, StatusRecord)
    return parsed


def latest(*records: StatusRecord) -> dict[int, StatusRecord]:
    return {r.id: r for r in records}


def test_best_score_publishes_not_necessarily_the_leader() -> None:
    records = latest(rec(1, uptime_h=1), rec(2, uptime_h=100), rec(3, uptime_h=10))
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, None) == 2


def test_ties_go_to_the_lowest_id() -> None:
    assert scoring.choose_publisher(latest(rec(3), rec(2)), 1_000_000, MEMBERS, None) == 2


def test_stale_records_are_not_eligible() -> None:
    now = 1_000_000 + scoring.FRESH_MS + 1
    records = latest(rec(1, uptime_h=100), rec(2, date=now, uptime_h=1))
    assert scoring.choose_publisher(records, now, MEMBERS, None) == 2


def test_off_never_publishes_and_on_outranks_auto() -> None:
    records = latest(
        rec(1, uptime_h=100, publish="off"), rec(2, uptime_h=1, publish="on"), rec(3, uptime_h=50)
    )
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, None) == 2


def test_an_unhealthy_router_is_not_eligible() -> None:
    records = latest(rec(1, uptime_h=100, net="ERROR_I2CP"), rec(2, uptime_h=1))
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, None) == 2


def test_non_members_are_not_eligible() -> None:
    assert scoring.choose_publisher(latest(rec(9, uptime_h=100), rec(1)), 1_000_000, MEMBERS, None) == 1


def test_nobody_eligible() -> None:
    assert scoring.choose_publisher(latest(rec(1, net="ERROR")), 1_000_000, MEMBERS, None) is None


def test_hysteresis_keeps_a_close_incumbent() -> None:
    records = latest(rec(1, uptime_h=90), rec(2, uptime_h=100))
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, current=1) == 1  # within 20 %
    records = latest(rec(1, uptime_h=10), rec(2, uptime_h=100))
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, current=1) == 2  # far behind


def test_score_components() -> None:
    base = scoring.score(rec(1, uptime_h=0, tunnels=0, bandwidth=0))
    assert scoring.score(rec(1, uptime_h=2, tunnels=0, bandwidth=0)) == base + 20
    assert scoring.score(rec(1, uptime_h=0, tunnels=100, bandwidth=0)) == base + 10
    assert scoring.score(rec(1, uptime_h=0, tunnels=0, bandwidth=0, lag=500)) == base - 50
    assert scoring.score(rec(1, uptime_h=10_000, tunnels=0, bandwidth=0)) == base + 1680  # capped at a week


def dest(name: str, tunnels: int = 4, bandwidth: int = 0, uptime_h: int = 1) -> dict[str, object]:
    return {
        "destination": name,
        "tunnelsConfigured": 4,
        "tunnelsCurrent": tunnels,
        "bandwidthCurrent": bandwidth,
        "uptime": uptime_h * HOUR,
    }


def test_unknown_tunnel_numbers_keep_a_leaf_at_the_lowest_weight() -> None:
    records = latest(rec(1, destinations=[{"destination": "i2pcontrol-leaf"}]))
    assert scoring.meta_ls(records, 1_000_000, excluded=()) == (scoring.Lease("i2pcontrol-leaf", 1),)


def test_unknown_net_status_is_not_a_failure() -> None:
    records = latest(rec(1, uptime_h=100, net="UNKNOWN"), rec(2, uptime_h=1))
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, None) == 1


def test_meta_ls_weights_exclusion_and_order() -> None:
    records = latest(
        rec(1, destinations=[dest("a", tunnels=8), dest("b", tunnels=2)]),
        rec(2, destinations=[dest("c", tunnels=0), dest("a", tunnels=1)]),
        rec(3, net="ERROR", destinations=[dest("z", tunnels=16)]),
    )
    leases = scoring.meta_ls(records, 1_000_000, excluded={"b"})
    assert [lease.destination for lease in leases] == [
        "a"
    ]  # b excluded, c has no tunnels, z's router is down
    assert leases[0].weight == 8 * 4 + 1  # the better of the two reports of "a"


def test_meta_ls_is_capped_and_deterministic() -> None:
    records = latest(rec(1, destinations=[dest(f"d{i:02}", tunnels=1 + i % 5) for i in range(40)]))
    leases = scoring.meta_ls(records, 1_000_000, excluded=())
    assert len(leases) == scoring.MAX_LEASES
    assert leases == scoring.meta_ls(dict(reversed(list(records.items()))), 1_000_000, excluded=())
    assert [lease.weight for lease in leases] == sorted((lease.weight for lease in leases), reverse=True)


# -- an operator's publishConfig changes the choice, each way ------------------------------------------


def test_each_publish_config_of_one_member_changes_the_choice() -> None:
    def choice(publish: str) -> int | None:
        records = latest(rec(1, uptime_h=100), rec(2, uptime_h=50, publish=publish), rec(3, uptime_h=10))
        return scoring.choose_publisher(records, 1_000_000, MEMBERS, None)

    assert choice("auto") == 1  # by score
    assert choice("on") == 2  # the operator's "on" outranks a better score
    records = latest(rec(1, uptime_h=100, publish="off"), rec(2, uptime_h=50), rec(3, uptime_h=10))
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, None) == 2  # the best one said "off"


def test_an_incumbent_that_is_switched_off_hands_over_at_once() -> None:
    records = latest(rec(1, uptime_h=100, publish="off"), rec(2, uptime_h=10))
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, current=1) == 2


def test_a_close_incumbent_does_not_keep_the_role_against_an_operators_on() -> None:
    records = latest(rec(1, uptime_h=100), rec(2, uptime_h=99, publish="on"))
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, current=1) == 2


def test_an_incumbent_that_is_on_keeps_the_role_against_a_better_auto() -> None:
    records = latest(rec(1, uptime_h=1, publish="on"), rec(2, uptime_h=100))
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, current=1) == 1
    records = latest(rec(1, uptime_h=1, publish="on"), rec(2, uptime_h=100, publish="on"))
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, current=1) == 2  # two "on": by score


def test_of_two_on_the_better_score_publishes() -> None:
    records = latest(
        rec(1, uptime_h=10, publish="on"), rec(2, uptime_h=100, publish="on"), rec(3, uptime_h=168)
    )
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, None) == 2


def test_hysteresis_at_exactly_its_percentage_and_one_point_below() -> None:
    # score = 10 per hour of uptime + 10 (tunnels) + 10 (bandwidth): 1000 for the best
    assert scoring.score(rec(2, uptime_h=98)) == 1000
    assert scoring.score(rec(1, uptime_h=78)) == 800  # exactly 80 % of the best: kept
    records = latest(rec(1, uptime_h=78), rec(2, uptime_h=98))
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, current=1) == 1
    records = latest(rec(1, uptime_h=78, lag=10), rec(2, uptime_h=98))  # 799: one point below
    assert scoring.score(records[1]) == 799
    assert scoring.choose_publisher(records, 1_000_000, MEMBERS, current=1) == 2


def test_a_record_is_fresh_for_exactly_fresh_ms_and_not_a_millisecond_more() -> None:
    records = latest(rec(1, uptime_h=100), rec(2, date=1_000_000 + scoring.FRESH_MS + 1, uptime_h=1))
    assert scoring.choose_publisher(records, 1_000_000 + scoring.FRESH_MS, MEMBERS, None) == 1
    assert scoring.choose_publisher(records, 1_000_000 + scoring.FRESH_MS + 1, MEMBERS, None) == 2


def test_a_record_may_be_dated_max_ahead_ms_past_the_farms_time_and_not_a_millisecond_more() -> None:
    now = 1_000_000
    assert scoring.fresh(rec(1, date=now + scoring.MAX_AHEAD_MS), now)
    assert not scoring.ahead(rec(1, date=now + scoring.MAX_AHEAD_MS), now)
    assert not scoring.fresh(rec(1, date=now + scoring.MAX_AHEAD_MS + 1), now)
    assert scoring.ahead(rec(1, date=now + scoring.MAX_AHEAD_MS + 1), now)


def test_a_skipped_record_or_destination_does_not_end_the_search() -> None:
    """A stale member's report, an excluded or a dead destination: the reports and destinations after
    it still count."""
    now = 1_000_000 + scoring.FRESH_MS + 1
    records = {
        1: rec(1, destinations=[dest("old", tunnels=3)]),  # stale, and first
        2: rec(2, date=now, destinations=[dest("banned", tunnels=5), dest("dead", tunnels=0), dest("kept")]),
    }
    leases = scoring.meta_ls(records, now, excluded={"banned"})
    assert [lease.destination for lease in leases] == ["kept"]


def test_a_destinations_tunnels_count_up_to_16() -> None:
    assert scoring.weight(rec(1, destinations=[dest("a", tunnels=16)]).destinations[0]) == 16 * 4 + 1
    assert scoring.weight(rec(1, destinations=[dest("a", tunnels=17)]).destinations[0]) == 16 * 4 + 1


def router_only(**router: int) -> StatusRecord:
    """A record whose router counts nothing but ``router`` (field: value, in the record's units)."""
    base = rec(1, uptime_h=0, tunnels=0, bandwidth=0, lag=0)
    return attrs.evolve(base, router=attrs.evolve(base.router, **router))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("router", "points"),
    [
        ({"uptime": 2 * HOUR - 1}, 10),  # whole hours only
        ({"uptime": 168 * HOUR}, 1680),  # a week, and no more
        ({"uptime": 169 * HOUR}, 1680),
        ({"participatingTunnels": 19}, 1),  # a point per ten
        ({"participatingTunnels": 5000}, 500),
        ({"participatingTunnels": 5001}, 500),
        ({"bandwidthCurrent": 15 * 1024 + 1023}, 1),  # whole KiB/s, a point per ten
        ({"bandwidthCurrent": 10_000 * 1024}, 1000),
        ({"bandwidthCurrent": 10_001 * 1024}, 1000),
        ({"jobLag": 19}, -1),  # a point off per ten ms
        ({"jobLag": 10_000}, -1000),
        ({"jobLag": 10_001}, -1000),
    ],
)
def test_a_score_is_whole_points_of_each_part_up_to_its_cap(router: dict[str, int], points: int) -> None:
    got = scoring.score(router_only(**router))
    assert got == points and type(got) is int  # every member must compute the same integer


def test_an_operators_on_ranks_as_one_above_auto() -> None:
    assert scoring.rank(rec(1, publish="on")) == (1, scoring.score(rec(1)))
    assert scoring.rank(rec(1)) == (0, scoring.score(rec(1)))


@pytest.mark.parametrize(
    ("tunnels", "kib", "hours", "expected"),
    [
        (0, 40, 0, 1),  # a point per 40 KiB/s
        (0, 79, 0, 1),
        (0, 80, 0, 2),
        (1, 40, 2, 4 + 1 + 2),
        (0, 1000, 0, 25),  # up to 1,000 KiB/s
        (0, 1001, 0, 25),
        (0, 0, 24, 24),  # up to a day
        (0, 0, 25, 24),
        (16, 1000, 24, 100),  # at most 100
    ],
)
def test_a_leases_weight_is_whole_points_up_to_each_cap(
    tunnels: int, kib: int, hours: int, expected: int
) -> None:
    leaf = rec(
        1, destinations=[dest("a", tunnels=tunnels, bandwidth=kib * 1024, uptime_h=hours)]
    ).destinations[0]
    got = scoring.weight(leaf)
    assert got == expected and type(got) is int


def test_a_destination_is_dead_with_tunnels_configured_and_none_up() -> None:
    one_of_one_down = {**dest("down"), "tunnelsConfigured": 1, "tunnelsCurrent": 0}
    one_of_four_up = {**dest("up"), "tunnelsConfigured": 4, "tunnelsCurrent": 1}
    records = latest(rec(1, destinations=[one_of_one_down, one_of_four_up]))
    assert [lease.destination for lease in scoring.meta_ls(records, 1_000_000, excluded=())] == ["up"]


def test_while_the_best_score_is_zero_or_less_any_eligible_incumbent_keeps_the_role() -> None:
    """Hysteresis is a percentage of the best score; at zero or below it is none, so the incumbent
    stays. A best of one point already counts: an incumbent five points below it hands over."""
    idle = {"uptime_h": 0, "tunnels": 0, "bandwidth": 0}
    lagging = rec(1, **idle, lag=50)
    assert scoring.score(lagging) == -5
    at_zero = rec(2, **idle)
    assert scoring.score(at_zero) == 0
    assert scoring.choose_publisher(latest(lagging, at_zero), 1_000_000, MEMBERS, current=1) == 1
    at_one = rec(2, **{**idle, "tunnels": 10})
    assert scoring.score(at_one) == 1
    assert scoring.choose_publisher(latest(lagging, at_one), 1_000_000, MEMBERS, current=1) == 2


def test_leases_of_equal_weight_are_ordered_by_destination() -> None:
    records = latest(rec(1, destinations=[dest("zeta"), dest("alpha"), dest("mu")]))
    assert [lease.destination for lease in scoring.meta_ls(records, 1_000_000, excluded=())] == [
        "alpha",
        "mu",
        "zeta",
    ]
