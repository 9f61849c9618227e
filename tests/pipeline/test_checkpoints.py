"""The incremental runs' bookkeeping without Spark: a replay checkpointed and resumed gives the windows
an uninterrupted one gives; checkpoints and the manifest are written whole or not at all; a bad
checkpoint is passed over for the one before; which partitions a run reads again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from garlicfarm.pipeline.incremental import (
    FarmPart,
    FarmPlan,
    Manifest,
    Partition,
    carry_partitions,
    changed_partitions,
    checkpoint_path,
    first_touched,
    load_checkpoint,
    read_manifest,
    write_atomically,
    write_manifest,
)
from garlicfarm.pipeline.replay import (
    FarmReplay,
    WindowState,
    _replay_checkpointed,
    _Segment,
    checkpoint_payload,
)
from tests.app.records import record

MINUTE = 60_000
DAY = 86_400_000
WINDOW = 5 * MINUTE


def _rows(days: int = 3) -> list[tuple[str, int, int, int, bytes, bool]]:
    """Three members reporting every 10 minutes for ``days`` days, member 3 a minute late."""
    rows = []
    index = 0
    for minute in range(0, days * 1440, 10):
        for member in (1, 2, 3):
            t = (minute + (1 if member == 3 else 0)) * MINUTE + member * 1000
            index += 1
            data = json.dumps(record(member, t, tunnels=1000 * member, cluster="f")).encode()
            rows.append(("f", index, member, t, data, False))
    return rows


def _split(rows: list[tuple[str, int, int, int, bytes, bool]]) -> list[object]:
    return list(_replay_checkpointed("f", (1, 2, 3), rows, WINDOW, None))


def test_a_replay_resumed_from_each_checkpoint_gives_the_same_windows() -> None:
    rows = _rows()
    whole = _split(rows)
    windows = [w for w in whole if isinstance(w, WindowState)]
    marks = [m for m in whole if isinstance(m, tuple)]
    assert [m[1] // DAY for m in marks] == [0, 1]  # a checkpoint as the log's time leaves each day
    for _, day_start, payload in marks:
        saved = json.loads(payload)
        cut = tuple(saved["cut"])
        after = [(*r[:5], r[1:4] <= cut) for r in rows]
        replayed = _replay_checkpointed("f", (1, 2, 3), after, WINDOW, saved)
        resumed = [w for w in replayed if isinstance(w, WindowState)]
        # every window of the checkpoint's day and before came out before it; the rest after it
        assert all(w.window_start >= day_start + DAY for w in resumed)
        assert resumed == [w for w in windows if w.window_start >= day_start + DAY]


def test_a_checkpoint_for_other_members_does_not_resume() -> None:
    replay = FarmReplay("f", (1, 2, 3), WINDOW, accepted=True)
    with pytest.raises(ValueError):
        FarmReplay.resume("f", (1, 2), WINDOW, replay.checkpoint())


def _save(directory: Path, day: str, cut: int, members: tuple[int, ...] = (1, 2, 3)) -> Path:
    replay = FarmReplay("f", members, WINDOW, accepted=True)
    payload = checkpoint_payload(replay, 0, (cut, 1, 0), members, _Segment())
    path = checkpoint_path(directory, "f", day)
    write_atomically(path, payload)
    return path


def test_the_newest_checkpoint_before_the_change_is_used(tmp_path: Path) -> None:
    for n, day in enumerate(("2026-01-01", "2026-01-02", "2026-01-03")):
        _save(tmp_path, day, 100 * (n + 1))
    assert load_checkpoint(tmp_path, "f", 250, (1, 2, 3), WINDOW)["cut"][0] == 200  # type: ignore[index]
    assert load_checkpoint(tmp_path, "f", 100, (1, 2, 3), WINDOW) is None  # before the first: from the start
    assert load_checkpoint(tmp_path, "f", 250, (1, 2, 3, 4), WINDOW) is None  # a new member: from the start


def test_a_torn_checkpoint_or_a_leftover_temporary_file_falls_back_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _save(tmp_path, "2026-01-01", 100)
    newest = _save(tmp_path, "2026-01-02", 200)
    newest.write_bytes(newest.read_bytes()[:40])  # torn: as if written in place and killed
    third = _save(tmp_path, "2026-01-03", 300)
    third.rename(third.with_name(".state.json.999.tmp"))  # killed between the write and the rename
    saved = load_checkpoint(tmp_path, "f", 1000, (1, 2, 3), WINDOW)
    assert saved is not None and saved["cut"][0] == 100
    assert any("unusable" in r.getMessage() for r in caplog.records)


def test_the_manifest_is_written_atomically_and_read_back(tmp_path: Path) -> None:
    manifest = Manifest(
        {"window_ms": WINDOW},
        {"2026-01-01": Partition("ab", 10, {"f": FarmPart(1, 9, 9, (1, 2), ("2026-01-01",))})},
    )
    write_manifest(tmp_path, manifest)
    assert read_manifest(tmp_path) == manifest
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]  # no temporary file left
    (tmp_path / "manifest.json").write_text("{")
    assert read_manifest(tmp_path) is None  # unreadable: a full run, not a crash


def _part(lo: int, hi: int, day: str, members: tuple[int, ...] = (1, 2)) -> Partition:
    return Partition(f"fp-{day}", hi - lo + 1, {"f": FarmPart(lo, hi, hi - lo + 1, members, (day,))})


def test_a_change_touches_a_farm_from_its_lowest_index_before_or_after() -> None:
    old = Manifest(
        {}, {"2026-01-01": _part(1, 100, "2026-01-01"), "2026-01-02": _part(95, 200, "2026-01-02")}
    )
    new = Manifest({}, {**old.partitions, "2026-01-02": _part(90, 210, "2026-01-02")})
    changed, removed = changed_partitions(old, {d: p.fingerprint for d, p in new.partitions.items()})
    assert (changed, removed) == (set(), set())
    changed, removed = changed_partitions(old, {"2026-01-01": "fp-2026-01-01", "2026-01-02": "other"})
    assert (changed, removed) == ({"2026-01-02"}, set())
    assert first_touched(old, new, changed) == {"f": (90, "2026-01-02")}


def test_member_health_carries_each_members_newest_earlier_partition_only() -> None:
    manifest = Manifest(
        {},
        {
            "2026-01-01": _part(1, 10, "2026-01-01", (1, 2, 3)),
            "2026-01-02": _part(11, 20, "2026-01-02", (1, 2)),
            "2026-01-03": _part(21, 30, "2026-01-03", (1, 2, 3)),
        },
    )
    plan = FarmPlan(None, "2026-01-02", "2026-01-03", 10, 0)
    # member 3 was silent on the 2nd: its last report before the 3rd is in the 1st
    assert carry_partitions({"f": plan}, manifest) == {"2026-01-01", "2026-01-02"}
