"""The telemetry archive: every committed status record, as JSON Lines partitioned by day.

``DIR/date=YYYY-MM-DD/node-<id>.jsonl``, one line per record: ``{"index", "recorded", "record"}`` where
``record`` is the canonical status record (the layout Spark and DuckDB read as a partitioned table).
The day is the record's own ``date`` (UTC). Applying a log prefix again after a restart does not
duplicate lines: the archive remembers the last log index it holds. Partitions older than
``retention_days`` are removed as new days begin.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
from pathlib import Path

from twisted.logger import Logger

from garlicfarm.app.schema import StatusRecord, record_to_json

_MARK = ".last-index"


class TelemetryArchive:
    log = Logger()

    def __init__(self, directory: str | os.PathLike[str], server_id: int, retention_days: int = 90) -> None:
        self.dir = Path(directory)
        self.server_id = server_id
        self.retention_days = retention_days
        self.dir.mkdir(parents=True, exist_ok=True)
        mark = self.dir / _MARK
        self.last_index = int(mark.read_text()) if mark.exists() else 0
        self._day: str | None = None

    def append(self, index: int, record: StatusRecord) -> None:
        if index <= self.last_index:
            return  # already archived before a restart replayed it
        day = datetime.datetime.fromtimestamp(record.date / 1000, tz=datetime.UTC).strftime("%Y-%m-%d")
        partition = self.dir / f"date={day}"
        if day != self._day:
            partition.mkdir(exist_ok=True)
            self._day = day
            self._expire(day)
        line = json.dumps(
            {"index": index, "recorded": self.server_id, "record": record_to_json(record)},
            separators=(",", ":"),
            sort_keys=True,
            ensure_ascii=False,
        )
        with open(partition / f"node-{self.server_id}.jsonl", "a", encoding="utf-8") as f:
            f.write(line + "\n")
        self.last_index = index
        # The mark may lag the lines by one after a crash; a replayed line is then written twice, and
        # the pipeline de-duplicates by (id, date) anyway.
        (self.dir / _MARK).write_text(str(index))

    def _expire(self, today: str) -> None:
        if self.retention_days <= 0:
            return
        cutoff = datetime.date.fromisoformat(today) - datetime.timedelta(days=self.retention_days)
        for partition in self.dir.glob("date=*"):
            try:
                day = datetime.date.fromisoformat(partition.name.removeprefix("date="))
            except ValueError:
                continue
            if day < cutoff:
                shutil.rmtree(partition, ignore_errors=True)
                self.log.info("archive partition {day} expired", day=partition.name)
