"""The replicated farm state: the same log gives the same answer, however it is fed."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from garlicfarm.app.state import FarmState
from garlicfarm.wire import ClusterServer, Configuration, LogEntry
from tests.app.records import entry, record

CONFIG = LogEntry(
    1, Configuration(1, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:900{i}") for i in (1, 2, 3)))
)


def a_log() -> list[LogEntry]:
    log = [CONFIG]
    for t in range(12):
        date = 1_000_000 + t * 60_000
        for server in (1, 2, 3):
            log.append(entry(record(server, date, uptime_h=10 * server + t, tunnels=50 * ((server + t) % 4))))
        if t == 5:
            log.append(
                entry(
                    {"cluster": "farm", "date": date, "admin": {"action": "exclude", "destination": "dest3"}}
                )
            )
        if t == 7:
            log.append(entry(b'{"cluster":"farm","date":"oops","id":2}'))  # rejected the same way everywhere
            log.append(entry(record(1, date)))  # a repeat of (1, date): applied once
    return log


def replay(log: list[LogEntry], cuts: list[int], restore_at: set[int]) -> FarmState:
    """Apply ``log`` in chunks; at chosen chunk boundaries, snapshot into a fresh state and go on."""
    state = FarmState("farm")
    points = [*sorted({c % (len(log) + 1) for c in cuts}), len(log)]
    start = 0
    for n, end in enumerate(points):
        for index in range(start, end):
            state.apply(index + 1, log[index])
        start = end
        if n in restore_at:
            fresh = FarmState("farm")
            fresh.restore(state.snapshot())
            state = fresh
    return state


def test_the_log_decides() -> None:
    state = replay(a_log(), [], set())
    assert state.publisher in (1, 2, 3)
    assert "dest3" not in [lease.destination for lease in state.leases]
    assert state.rejected == 1 and "date: must be an integer" in state.rejects[0].reason
    assert state.duplicates == 1


@settings(max_examples=60)
@given(st.lists(st.integers(0, 10_000), max_size=12), st.sets(st.integers(0, 12), max_size=4))
def test_every_chunking_and_restore_point_gives_the_same_state(cuts: list[int], restore_at: set[int]) -> None:
    log = a_log()
    reference = replay(log, [], set())
    other = replay(log, cuts, restore_at)
    assert other.snapshot() == reference.snapshot()
    assert other.status() == reference.status()


def test_a_stale_publisher_is_replaced_by_everyone_alike() -> None:
    log = [CONFIG]
    for t in range(3):
        for server in (1, 2, 3):
            log.append(entry(record(server, 1_000_000 + t * 60_000, uptime_h=100 if server == 2 else 10)))
    states = [FarmState("farm") for _ in range(3)]
    for state in states:
        for i, e in enumerate(log):
            state.apply(i + 1, e)
    assert {s.publisher for s in states} == {2}
    # server 2 stops reporting; the others go on: once its last report is stale, everyone moves
    tail = [entry(record(s, 1_000_000 + t * 60_000, uptime_h=10)) for t in range(3, 8) for s in (1, 3)]
    for state in states:
        for i, e in enumerate(tail):
            state.apply(len(log) + i + 1, e)
    assert {s.publisher for s in states} == {1}


def test_a_router_failure_moves_the_publisher() -> None:
    state = FarmState("farm")
    log = [CONFIG, entry(record(1, 1000, uptime_h=100)), entry(record(2, 1000, uptime_h=10))]
    for i, e in enumerate(log):
        state.apply(i + 1, e)
    assert state.publisher == 1
    state.apply(4, entry(record(1, 2000, uptime_h=100, net="ERROR_CLOCK_SKEW")))
    assert state.publisher == 2


def test_changes_are_announced_and_records_archived() -> None:
    state = FarmState("farm")
    changes: list[object] = []
    archived: list[int] = []
    state.on_change.append(lambda p, leases: changes.append((p, len(leases))))
    state.on_record.append(lambda index, r: archived.append(r.id))
    for i, e in enumerate([CONFIG, entry(record(1, 1000)), entry(record(1, 1000))]):
        state.apply(i + 1, e)
    assert changes == [(1, 1)]
    assert archived == [1]


def test_restore_refuses_another_farm() -> None:
    state = FarmState("farm")
    other = FarmState("elsewhere")
    try:
        other.restore(state.snapshot())
    except ValueError as e:
        assert "this farm" in str(e)
    else:
        raise AssertionError("restored another farm's snapshot")
    assert json.loads(state.snapshot())["version"] == 1
