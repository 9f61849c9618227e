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


def test_rejects_say_which_line_of_their_file_they_are(spark: Any, tmp_path: Path) -> None:
    """Issue 18: a reject names its line number, also when a file is read in several chunks."""
    from garlicfarm.pipeline.records import read_archive, with_line_numbers

    day = tmp_path / "date=2026-01-01"
    day.mkdir()
    bad = {1, 7, 150, 151, 299, 300}
    for node in (1, 2):
        lines = [
            f"not json {node}:{n}"
            if n in bad
            else json.dumps({"index": n, "recorded": node, "record": record(1, n)})
            for n in range(1, 301)
        ]
        (day / f"node-{node}.jsonl").write_text("\n".join(lines) + "\n")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "8192")  # many chunks a file
    try:
        parsed = read_archive(spark, str(tmp_path)).cache()
        assert parsed.select("file", "block").distinct().count() > 10
        rejects = with_line_numbers(spark, parsed.where("NOT ok"), parsed).collect()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    found = sorted((Path(r.file).name, r.line_number, r.line) for r in rejects)
    assert found == sorted((f"node-{node}.jsonl", n, f"not json {node}:{n}") for node in (1, 2) for n in bad)
