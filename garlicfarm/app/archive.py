"""The telemetry archive: every committed status record, as JSON Lines partitioned by day.

``DIR/date=YYYY-MM-DD/node-<id>.jsonl``, one line per record: ``{"index", "recorded", "record"}`` where
``record`` is the canonical status record (the layout Spark and DuckDB read as a partitioned table).
The day is the record's own ``date`` (UTC). Applying a log prefix again after a restart does not
duplicate lines: the archive remembers the last log index it holds. Partitions older than
``retention_days`` before the *farm's* time (``clock``, the quorum date of FarmState, which no single
member's record can move) are removed as new days begin. The archive is a local copy, not replicated
state: a write that fails (disk full) is logged and skipped, never raised into the apply path.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from twisted.logger import Logger

from garlicfarm.app.schema import StatusRecord, record_to_json

_MARK = ".last-index"


class TelemetryArchive:
    log = Logger()

    def __init__(
        self,
        directory: str | os.PathLike[str],
        server_id: int,
        retention_days: int = 90,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.dir = Path(directory)
        #: the farm's time in ms (expiry counts from it); without one, from each record's own date
        self.clock = clock
        self.server_id = server_id
        self.retention_days = retention_days
        self.dir.mkdir(parents=True, exist_ok=True)
        self.last_index = self._read_mark()
        self._today: str | None = None
        self._failures = 0
        #: the files appended to since the start: each one's end was checked for a torn last line
        self._opened: set[Path] = set()

    def _read_mark(self) -> int:
        """The last index archived. A mark a crash or a power loss left empty or torn is not fatal:
        the records the log replays are archived again, and the pipeline drops the duplicates."""
        mark = self.dir / _MARK
        try:
            return int(mark.read_text()) if mark.exists() else 0
        except (OSError, ValueError) as e:
            self.log.warn(
                "telemetry archive: {mark} is unreadable ({why}); records replayed now are archived again"
                " (the pipeline drops duplicates)",
                mark=mark,
                why=e,
            )
            return 0

    def append(self, index: int, record: StatusRecord) -> None:
        if index <= self.last_index:
            return  # already archived before a restart replayed it
        try:
            self._append(index, record)
        except OSError as e:
            # Every 100th failure is logged: a full disk must not flood the log either.
            if self._failures % 100 == 0:
                self.log.error(
                    "telemetry archive: cannot write record {index} ({failures} failed so far): {why}",
                    index=index,
                    failures=self._failures + 1,
                    why=e,
                )
            self._failures += 1

    def _append(self, index: int, record: StatusRecord) -> None:
        day = _day(record.date)
        today = _day(self.clock()) if self.clock is not None else day
        if today != self._today:
            self._today = today
            self._expire(today)
        # (after the expiry: a record dated before the retention, from a member whose clock is far
        # behind, is kept until the next day's expiry instead of failing to write)
        partition = self.dir / f"date={day}"
        partition.mkdir(exist_ok=True)
        line = json.dumps(
            {"index": index, "recorded": self.server_id, "record": record_to_json(record)},
            separators=(",", ":"),
            sort_keys=True,
            ensure_ascii=False,
        )
        path = partition / f"node-{self.server_id}.jsonl"
        with open(path, "a+b") as f:
            if path not in self._opened:
                self._opened.add(path)
                f.seek(0, os.SEEK_END)
                if f.tell():  # a line a crash cut short must not swallow the next one
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":
                        f.write(b"\n")
            f.write(line.encode() + b"\n")
        self.last_index = index
        # The mark may lag the lines by one after a crash; a replayed line is then written twice, and
        # the pipeline de-duplicates by (id, date) anyway. Replaced whole: a crash leaves the old one.
        temporary = self.dir / (_MARK + ".tmp")
        temporary.write_text(str(index))
        os.replace(temporary, self.dir / _MARK)

    def _expire(self, today: str) -> None:
        if today < "1970-01-02":
            return  # the farm's time is not known yet
        if self.retention_days <= 0:
            return
        try:
            cutoff = datetime.date.fromisoformat(today) - datetime.timedelta(days=self.retention_days)
        except OverflowError:
            return  # a retention reaching before year 1 keeps every day there is
        for partition in sorted(self.dir.glob("date=*")):
            try:
                day = datetime.date.fromisoformat(partition.name.removeprefix("date="))
            except ValueError:
                continue  # not a partition of ours: left alone
            if day < cutoff:
                try:
                    shutil.rmtree(partition)
                except OSError as e:
                    # the next day's expiry tries again; the record at hand is written all the same
                    self.log.warn(
                        "archive partition {day} expired but not removed: {why}", day=partition.name, why=e
                    )
                    continue
                self.log.info("archive partition {day} expired", day=partition.name)


def _day(ms: int) -> str:
    """The UTC day of a date in ms (the schema bounds dates to the years datetime can hold)."""
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%d")
