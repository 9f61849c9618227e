"""The telemetry archive after a crash or a power loss: an empty or torn mark, a torn last line."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from twisted.logger import LogLevel, capturedLogs, formatEvent, globalLogPublisher

from garlicfarm.app.archive import TelemetryArchive
from garlicfarm.app.schema import parse_entry
from tests.app.records import record

DATE = 1_700_000_000_000


def _record(server: int, date: int) -> Any:
    return parse_entry(json.dumps(record(server, date)).encode(), "farm")


def test_an_empty_mark_is_said_and_the_archive_starts_again(tmp_path: Path) -> None:
    (tmp_path / ".last-index").write_text("")  # a power loss dropped what was written
    events: list[Any] = []
    observer: Any = events.append
    globalLogPublisher.addObserver(observer)
    try:
        archive = TelemetryArchive(tmp_path, 1)
    finally:
        globalLogPublisher.removeObserver(observer)
    assert archive.last_index == 0
    [warning] = [formatEvent(e) for e in events if e.get("log_level") == LogLevel.warn]
    assert "is unreadable" in warning and "archived again" in warning
    archive.append(5, _record(1, DATE))
    assert TelemetryArchive(tmp_path, 1).last_index == 5


def test_a_torn_last_line_does_not_swallow_the_next(tmp_path: Path) -> None:
    archive = TelemetryArchive(tmp_path, 1)
    archive.append(1, _record(1, DATE))
    [path] = tmp_path.glob("date=*/node-1.jsonl")
    whole = path.read_bytes()
    path.write_bytes(whole + whole[:17])  # the second line cut short by a crash
    TelemetryArchive(tmp_path, 1).append(2, _record(1, DATE + 1))
    lines = path.read_bytes().split(b"\n")
    assert lines[1] == whole[:17]
    assert json.loads(lines[2])["index"] == 2 and lines[3] == b""


def test_a_retention_reaching_before_year_1_keeps_everything(tmp_path: Path) -> None:
    """The configuration allows a century; an archive made in code may be given more, and must not
    fail on the day's first record because the cutoff date does not exist."""
    old = tmp_path / "date=2020-01-01"
    old.mkdir()
    archive = TelemetryArchive(tmp_path, 1, 1_000_000)
    archive.append(1, _record(1, DATE))
    assert archive.last_index == 1
    assert old.exists()


def test_a_one_day_retention_keeps_today_and_yesterday_and_drops_older_days(tmp_path: Path) -> None:
    """Days are partitions named ``date=YYYY-MM-DD``; one older than the retention goes when the
    farm's day changes, and anything else in the directory stays."""
    assert days_left(tmp_path, "date=2023-11-12", "date=2023-11-13", "date=2023-11-14", "notes") == [
        "date=2023-11-13",
        "date=2023-11-14",
        "notes",
    ]


def days_left(tmp_path: Path, *names: str) -> list[str]:
    """The directories left after the first record of the farm's day 2023-11-14 with a one-day
    retention, in an archive that held ``names``."""
    for name in names:
        (tmp_path / name).mkdir()
    archive = TelemetryArchive(tmp_path, 1, 1, clock=lambda: DATE)  # DATE is on 2023-11-14
    archive.append(1, _record(1, DATE))
    assert archive.last_index == 1
    return sorted(p.name for p in tmp_path.iterdir() if p.is_dir())


def test_days_expire_by_the_farms_day_not_a_records_and_an_older_record_is_still_written(
    tmp_path: Path,
) -> None:
    """A member whose clock is far behind reports a record dated 2023-11-05 on the farm's 2023-11-14:
    expiry counts from the farm's day, and the old record's line is written all the same."""
    for name in ("date=2023-11-10", "date=2023-11-12"):
        (tmp_path / name).mkdir()
    day = 86_400_000
    archive = TelemetryArchive(tmp_path, 1, 3, clock=lambda: DATE)  # DATE is on 2023-11-14
    archive.append(1, _record(1, DATE - 9 * day))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".last-index", "date=2023-11-05", "date=2023-11-12"]
    [line] = (tmp_path / "date=2023-11-05" / "node-1.jsonl").read_text().splitlines()
    assert json.loads(line)["index"] == 1


def test_a_partition_that_cannot_be_removed_is_said_and_the_rest_expire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory named like a partition but not dated is left alone, one that cannot be removed
    is a warning (tried again the next day), and neither stops the others' expiry or the record."""
    rmtree = shutil.rmtree

    def stubborn(path: Path) -> None:
        if path.name == "date=2023-11-02":
            raise PermissionError(13, "Permission denied", str(path))
        rmtree(path)

    monkeypatch.setattr(shutil, "rmtree", stubborn)
    with capturedLogs() as events:
        left = days_left(
            tmp_path, "date=1-not-a-date", "date=2023-11-01", "date=2023-11-02", "date=2023-11-03"
        )
    assert left == ["date=1-not-a-date", "date=2023-11-02", "date=2023-11-14"]
    said = [(e["log_level"], formatEvent(e)) for e in events]
    assert (LogLevel.info, "archive partition date=2023-11-01 expired") in said
    assert (LogLevel.info, "archive partition date=2023-11-03 expired") in said
    assert (
        LogLevel.warn,
        f"archive partition date=2023-11-02 expired but not removed: [Errno 13] Permission denied: "
        f"'{tmp_path / 'date=2023-11-02'}'",
    ) in said


def test_a_write_that_keeps_failing_is_logged_at_its_first_then_every_hundredth_time(tmp_path: Path) -> None:
    archive = TelemetryArchive(tmp_path / "archive", 1)

    def full(index: int, record: object) -> None:
        raise OSError(28, "No space left on device")

    archive._append = full  # type: ignore[method-assign]
    with capturedLogs() as events:
        for index in range(1, 202):
            archive.append(index, None)  # type: ignore[arg-type]
    said = [formatEvent(e) for e in events if e["log_level"] == LogLevel.error]
    assert [line.split(" (")[0] for line in said] == [
        f"telemetry archive: cannot write record {index}" for index in (1, 101, 201)
    ]
    assert "(101 failed so far): [Errno 28] No space left on device" in said[1]


def test_a_whole_last_line_gets_no_blank_line_after_it_on_reopening(tmp_path: Path) -> None:
    TelemetryArchive(tmp_path, 1).append(1, _record(1, DATE))
    [path] = tmp_path.glob("date=*/node-1.jsonl")
    TelemetryArchive(tmp_path, 1).append(2, _record(1, DATE + 1))
    lines = path.read_bytes().split(b"\n")
    assert [json.loads(line)["index"] for line in lines[:-1]] == [1, 2] and lines[-1] == b""


def test_a_line_is_compact_sorted_json_of_index_recorder_and_record_unicode_kept(tmp_path: Path) -> None:
    raw = record(1, DATE)
    raw["meta"]["destination"] = "fermé"  # the master's name is the operator's
    TelemetryArchive(tmp_path, 7).append(3, parse_entry(json.dumps(raw).encode(), "farm"))  # type: ignore[arg-type]
    [path] = tmp_path.glob("date=*/node-7.jsonl")
    line = path.read_bytes()
    assert line.startswith(b'{"index":3,"record":{') and line.endswith(b',"recorded":7}\n')
    assert "fermé".encode() in line and b": " not in line and b", " not in line
    assert list(json.loads(line)["record"]) == sorted(json.loads(line)["record"])


def test_no_retention_keeps_every_day_and_the_last_index_archived_is_not_written_again(
    tmp_path: Path,
) -> None:
    old = tmp_path / "date=2020-01-01"
    old.mkdir()
    archive = TelemetryArchive(tmp_path, 1, 0, clock=lambda: DATE)
    archive.append(4, _record(1, DATE))
    archive.append(4, _record(1, DATE))  # the log replayed after a restart: already archived
    assert old.exists()
    [path] = tmp_path.glob("date=2023*/node-1.jsonl")
    assert len(path.read_bytes().splitlines()) == 1


def test_a_records_day_is_its_utc_day_whatever_the_machines_time_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "XYZ-14")  # UTC+14 (a POSIX rule: no time zone database needed)
    time.tzset()
    try:
        archive = TelemetryArchive(tmp_path, 1)
        archive.append(1, _record(1, DATE))  # 2023-11-14 22:13 UTC, the 15th at UTC+14
    finally:
        monkeypatch.undo()
        time.tzset()
    assert [p.name for p in tmp_path.glob("date=*")] == ["date=2023-11-14"]


def test_a_new_archive_makes_its_directory_with_its_parents_quietly_and_keeps_90_days(tmp_path: Path) -> None:
    with capturedLogs() as events:
        archive = TelemetryArchive(tmp_path / "var" / "telemetry", 1)
    assert list(events) == []  # no mark yet is no warning: a new archive starts at 0
    assert (tmp_path / "var" / "telemetry").is_dir()
    assert archive.retention_days == 90 and archive.last_index == 0 and archive.clock is None
