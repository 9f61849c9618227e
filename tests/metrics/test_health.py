"""The health checks are pure functions of a snapshot; the rendering is Kubernetes' and etcd's."""

from __future__ import annotations

import attrs

from garlicfarm.metrics.health import MAX_APPLY_LAG, Check, live_checks, ready_checks, render
from garlicfarm.metrics.snapshot import NodeSnapshot

HEALTHY = NodeSnapshot(
    server_id=2,
    cluster="farm",
    role="follower",
    term=3,
    leader=1,
    commit_index=50,
    applied_index=50,
    last_log_index=50,
    snapshot_index=0,
    members=(1, 2, 3),
    tick_age=0.01,
    tick_seconds=0.01,
)


def failures(checks: list[Check]) -> dict[str, str | None]:
    return {c.name: c.failure for c in checks if not c.ok}


def test_a_healthy_node_is_live_and_ready() -> None:
    assert render("livez", live_checks(HEALTHY), verbose=False) == (200, "ok\n")
    assert render("readyz", ready_checks(HEALTHY), verbose=False) == (200, "ok\n")


def test_verbose_lists_every_check() -> None:
    code, body = render("readyz", ready_checks(HEALTHY), verbose=True)
    assert code == 200
    assert body == ("[+]running ok\n[+]leader ok\n[+]caught_up ok\n[+]storage ok\nreadyz check passed\n")


def test_no_leader_is_not_ready() -> None:
    checks = ready_checks(attrs.evolve(HEALTHY, leader=None))
    assert failures(checks) == {"leader": "no leader known"}
    code, body = render("readyz", checks, verbose=False)
    assert code == 503
    assert body == "[-]leader failed: no leader known\nreadyz check failed\n"
    code, body = render("readyz", checks, verbose=True)
    assert "[+]running ok\n[-]leader failed: no leader known\n" in body


def test_a_stopped_node_is_not_ready() -> None:
    checks = ready_checks(attrs.evolve(HEALTHY, stopped="disk I/O error", running=False))
    assert failures(checks) == {"running": "the node stopped: disk I/O error"}
    assert failures(ready_checks(attrs.evolve(HEALTHY, running=False))) == {
        "running": "the node is not running"
    }


def test_catching_up() -> None:
    assert failures(ready_checks(attrs.evolve(HEALTHY, applied_index=50 - MAX_APPLY_LAG))) == {}
    lagging = ready_checks(attrs.evolve(HEALTHY, applied_index=49 - MAX_APPLY_LAG))
    assert "committed entries not applied yet" in str(failures(lagging)["caught_up"])
    replaying = ready_checks(attrs.evolve(HEALTHY, replaying=True))
    assert failures(replaying) == {"caught_up": "replaying its log after a restart"}


def test_storage() -> None:
    checks = ready_checks(attrs.evolve(HEALTHY, storage_error="an earlier write failed"))
    assert failures(checks) == {"storage": "an earlier write failed"}


def test_the_router_is_checked_only_when_configured() -> None:
    assert "router" not in {c.name for c in ready_checks(HEALTHY)}
    asked = attrs.evolve(HEALTHY, router_configured=True)
    assert failures(ready_checks(asked)) == {"router": "the router has not answered yet"}
    answered = attrs.evolve(asked, router_answered=True)
    assert failures(ready_checks(answered)) == {}
    gone = attrs.evolve(answered, router_error="ConnectionRefusedError: refused")
    assert failures(ready_checks(gone)) == {
        "router": "the router did not answer: ConnectionRefusedError: refused"
    }


def test_a_stuck_reactor_is_not_live() -> None:
    stuck = attrs.evolve(HEALTHY, tick_age=30.0)
    code, body = render("livez", live_checks(stuck), verbose=True)
    assert code == 503
    assert body.startswith("[+]ping ok\n[-]reactor failed: the last Raft tick was 30.0 s ago")
    assert body.endswith("livez check failed\n")
    # before the first tick, and once stopped, the tick's age says nothing about the reactor
    assert render("livez", live_checks(attrs.evolve(HEALTHY, tick_age=None)), False)[0] == 200
    assert render("livez", live_checks(attrs.evolve(stuck, running=False)), False)[0] == 200
