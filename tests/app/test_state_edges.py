"""The farm state's details that mutation testing of garlicfarm/app/state.py found unchecked
(docs/verification.md): canonical snapshots, bounded and restored rejects, counts, the publisher's
incumbency, farm time on a membership change, and what status and restore say."""

from __future__ import annotations

import json

import pytest

from garlicfarm.app import scoring
from garlicfarm.app.state import MAX_REJECTS_KEPT, FarmState
from garlicfarm.wire import ClusterServer, Configuration, LogEntry
from tests.app.records import entry, record

DATE = 1_000_000


def members(*ids: int) -> LogEntry:
    return LogEntry(1, Configuration(1, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:900{i}") for i in ids)))


def fed(cluster: str, *entries: LogEntry) -> FarmState:
    state = FarmState(cluster)
    for index, e in enumerate(entries, start=1):
        state.apply(index, e)
    return state


def test_a_snapshot_is_canonical_utf8_json() -> None:
    """Every member must produce the same bytes for the same state: a snapshot is resumed chunk by
    chunk from whichever leader sends it."""
    state = fed("fërm", members(1, 2), entry(record(1, DATE, cluster="fërm")), entry(b"not json"))
    data = state.snapshot()
    canonical = json.dumps(json.loads(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert data == canonical.encode() and "fërm".encode() in data


def test_a_fresh_state_is_at_index_0_and_then_at_the_last_index_applied() -> None:
    assert json.loads(FarmState("farm").snapshot())["index"] == 0
    state = fed("farm", members(1), entry(record(1, DATE)), entry(b"not json"))
    assert state.index == 3 and json.loads(state.snapshot())["index"] == 3


def test_rejects_are_counted_kept_by_index_and_bounded_also_after_a_restore() -> None:
    bad = [entry(b"not json %d" % k) for k in range(MAX_REJECTS_KEPT + 50)]
    state = fed("farm", members(1), *bad)
    assert state.rejected == MAX_REJECTS_KEPT + 50 and len(state.rejects) == MAX_REJECTS_KEPT
    assert [r.index for r in state.rejects][:2] == [52, 53]  # the oldest are dropped
    restored = FarmState("farm")
    restored.restore(state.snapshot())
    restored.apply(999, entry(b"one more"))
    assert len(restored.rejects) == MAX_REJECTS_KEPT and restored.rejects[-1].index == 999


def test_repeated_reports_are_counted_as_duplicates() -> None:
    same = entry(record(1, DATE))
    state = fed("farm", members(1), same, same, same)
    assert state.duplicates == 2


def test_an_included_destination_comes_back() -> None:
    admin = {"cluster": "farm", "date": DATE}
    state = fed(
        "farm",
        members(1),
        entry(record(1, DATE)),
        entry({**admin, "admin": {"action": "exclude", "destination": "dest1"}}),
    )
    assert "dest1" in state.excluded and not state.leases
    state.apply(4, entry({**admin, "admin": {"action": "include", "destination": "dest1"}}))
    assert state.excluded == set() and [lease.destination for lease in state.leases] == ["dest1"]


def test_the_publisher_keeps_its_role_against_a_slightly_better_member() -> None:
    state = fed(
        "farm", members(1, 2), entry(record(1, DATE, uptime_h=30)), entry(record(2, DATE, uptime_h=10))
    )
    assert state.publisher == 1
    slightly = 100 + scoring.HYSTERESIS_PERCENT // 2  # percent of member 1's score: within the margin
    state.apply(3, entry(record(2, DATE + 1, uptime_h=30 * slightly // 100)))
    assert state.publisher == 1


def test_a_membership_change_holds_farm_time_at_what_a_quorum_of_it_reached() -> None:
    state = fed("farm", entry(record(1, DATE)), entry(record(2, DATE)))
    assert state.now == DATE  # no configuration yet: every member with a record counts
    later = fed("farm", members(1, 2, 3, 4, 5), entry(record(1, DATE)), entry(record(2, DATE)))
    assert later.now == 0  # two of five have reported: no quorum at any date yet


def test_status_names_the_publisher_and_the_meta_ls() -> None:
    state = fed("farm", members(1), entry(record(1, DATE)))
    status = state.status()
    assert {k: status[k] for k in ("publisher", "meta_ls")} == {
        "publisher": 1,
        "meta_ls": [{"destination": "dest1", "weight": state.leases[0].weight}],
    }


def test_a_restore_announces_the_publisher_and_leases_it_brings() -> None:
    source = fed("farm", members(1), entry(record(1, DATE)))
    target = FarmState("farm")
    seen: list[object] = []
    target.on_change.append(lambda publisher, leases: seen.append((publisher, leases)))
    target.restore(source.snapshot())
    assert seen == [(1, source.leases)]


def test_a_foreign_snapshot_is_refused_with_the_reason_and_its_kind() -> None:
    with pytest.raises(ValueError, match=r"^not a snapshot of this farm's application state$"):
        FarmState("farm").restore(fed("other").snapshot())
    reason = FarmState("farm").check_snapshot(b"{")
    assert reason is not None and reason.startswith(
        "not a snapshot of this farm's application state (JSONDecodeError: "
    )


def test_a_membership_shrinking_to_the_members_ahead_moves_farm_time_forward() -> None:
    state = fed("farm", members(1, 2, 3), entry(record(1, DATE + 2)), entry(record(2, DATE + 1)))
    assert state.now == DATE + 1  # two of three have reached DATE + 1
    state.apply(4, members(1))
    assert state.now == DATE + 2  # the one member left has reached DATE + 2


def test_a_state_that_does_not_track_leases_leaves_them_empty_also_after_a_restore() -> None:
    """The pipeline's replay (track_leases=False) asks for the Meta LS2 when it wants it; the state
    itself keeps none, applying or restoring, while the publisher is still decided."""
    tracked = fed("farm", members(1), entry(record(1, DATE)))
    assert tracked.leases  # the comparison: a tracking state has them
    state = FarmState("farm", track_leases=False)
    for index, e in enumerate((members(1), entry(record(1, DATE))), start=1):
        state.apply(index, e)
    assert state.leases == () and state.publisher == tracked.publisher
    assert state.current_leases() == tracked.leases
    restored = FarmState("farm", track_leases=False)
    restored.restore(tracked.snapshot())
    assert restored.leases == () and restored.publisher == tracked.publisher


def test_a_refused_snapshot_is_named_in_at_most_300_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reason goes into a log line and a peer's snapshot can make it anything: it is cut."""

    def refuse(_self: FarmState, _data: bytes) -> None:
        raise ValueError("x" * 400)

    monkeypatch.setattr(FarmState, "restore", refuse)
    reason = FarmState("farm").check_snapshot(b"{}")
    assert reason is not None and len(reason) == 300
    assert reason.startswith("not a snapshot of this farm's application state (ValueError: xxx")
