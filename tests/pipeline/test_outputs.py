"""The tables as a data engineer expects them: partitioned by farm and day, timestamps as UTC INT64
(not legacy INT96), key columns declared non-null, plain paths in rejects, Parquet or CSV, and one
log line per stage with its time."""

from __future__ import annotations

import csv
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from garlicfarm.pipeline.synth import SynthSettings, generate

pytestmark = [pytest.mark.e2e]

PARTITIONED = ("publisher_timeline", "destination_weights", "member_health")
FARM_DAYS = [(f"cluster=farm-00{f}", f"day=2026-01-0{d}") for f in (0, 1) for d in (1, 2)]
TIMESTAMPS = {
    "publisher_timeline": ("window_start", "window_end", "log_time"),
    "destination_weights": ("window_start", "window_end"),
    "member_health": ("first_report", "last_report"),
}
NOT_NULL = {
    "publisher_timeline": ("window_start", "window_end", "eligible", "members", "records"),
    "destination_weights": ("window_start", "rank", "destination", "weight"),
    "member_health": ("id", "reports", "first_report"),
    "rejects": ("file", "kind", "reason"),
}


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("archive")
    generate(SynthSettings(farms=2, members=3, days=2, interval_s=600, seed=3, bad_share=0.02), root)
    return root


def _run(spark: Any, archive: Path, out: Path, fmt: str) -> None:
    from garlicfarm.pipeline.job import run_pipeline
    from garlicfarm.pipeline.options import PipelineOptions

    run_pipeline(spark, PipelineOptions(archive=str(archive), out=str(out), interval_ms=600_000, format=fmt))


def test_parquet_tables_by_farm_and_day_with_utc_int64_timestamps(
    spark: Any, archive: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    caplog.set_level(logging.INFO, logger="garlicfarm.pipeline.job")
    _run(spark, archive, tmp_path, "parquet")
    for name in PARTITIONED:
        directories = sorted((tmp_path / name).glob("cluster=*/day=*"))
        assert [d.relative_to(tmp_path / name).parts for d in directories] == FARM_DAYS, name
        for directory in directories:
            files = list(directory.glob("*.parquet"))
            assert len(files) == 1, directory  # one file per farm and day
            schema = pq.read_schema(files[0])
            assert "cluster" not in schema.names and "day" not in schema.names  # in the path
            physical = pq.ParquetFile(files[0]).schema
            for column in TIMESTAMPS[name]:
                assert schema.field(column).type == pa.timestamp("us", tz="UTC"), (name, column)
                assert physical.column(schema.get_field_index(column)).physical_type == "INT64"
            for column in NOT_NULL[name]:
                assert not schema.field(column).nullable, (name, column)
    rejects = list((tmp_path / "rejects").glob("*.parquet"))
    assert not list((tmp_path / "rejects").glob("*=*"))  # not partitioned: a reject needs no farm
    table = pq.read_table(tmp_path / "rejects")
    assert table.num_rows > 0
    assert all(f.startswith(str(archive)) for f in table.column("file").to_pylist())
    for column in NOT_NULL["rejects"]:
        assert not pq.read_schema(rejects[0]).field(column).nullable, column
    messages = [r.getMessage() for r in caplog.records]
    stages = [line for line in messages if re.fullmatch(r".+: done in \d+\.\d s", line)]
    assert len(stages) == 7, messages
    assert len({line.split(":")[0] for line in stages}) == 7, stages
    assert not [r for r in caplog.records if r.getMessage().endswith(" ...")]


def test_csv_tables_have_a_header_and_iso_utc_times(spark: Any, archive: Path, tmp_path: Path) -> None:
    _run(spark, archive, tmp_path, "csv")
    for name in PARTITIONED:
        directories = sorted((tmp_path / name).glob("cluster=*/day=*"))
        assert [d.relative_to(tmp_path / name).parts for d in directories] == FARM_DAYS, name
    part = next((tmp_path / "member_health" / "cluster=farm-000" / "day=2026-01-01").glob("*.csv"))
    rows = list(csv.DictReader(part.open()))
    assert rows and "first_report" in rows[0] and "cluster" not in rows[0]
    assert re.fullmatch(r"2026-01-01T\d\d:\d\d:\d\d(\.\d+)?Z", rows[0]["first_report"]), rows[0]
    assert list((tmp_path / "rejects").glob("*.csv"))
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
