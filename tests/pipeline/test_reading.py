"""Reading the archive with Spark: exactly its files; a local session on loopback (issue 18)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tests.app.records import record


def test_only_the_archive_files_are_read(spark: Any, tmp_path: Path) -> None:
    """Regression (issue 18): the glob ``*.jsonl*`` also read ``.bak`` files beside the archive's."""
    from garlicfarm.pipeline.records import read_archive

    day = tmp_path / "date=2026-01-01"
    day.mkdir()
    line = json.dumps({"index": 1, "recorded": 1, "record": record(1, 1_000_000)}) + "\n"
    (day / "node-1.jsonl").write_text(line)
    with gzip.open(day / "node-2.jsonl.gz", "wt") as f:
        f.write(line)
    (day / "node-1.jsonl.bak").write_text("not an archive line\n")
    rows = read_archive(spark, str(tmp_path)).collect()
    assert [row.ok for row in rows] == [True, True]  # both archive files; the .bak's line not even a reject


def test_a_local_session_listens_on_loopback(spark: Any) -> None:
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
