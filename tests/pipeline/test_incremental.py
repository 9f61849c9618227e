"""Incremental runs give, row by row, what a full run over the same archive gives: a day added, a line
changed in an earlier day, a checkpoint corrupt or half written, each against a full run."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from garlicfarm.pipeline.synth import SynthSettings, generate

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TABLES = ("publisher_timeline", "destination_weights", "member_health", "rejects")
DAYS = ("2026-01-01", "2026-01-02", "2026-01-03")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("source")
    generate(SynthSettings(farms=2, members=3, days=3, interval_s=600, seed=3, bad_share=0.02), root)
    return root


def _archive(source: Path, target: Path, days: tuple[str, ...]) -> Path:
    for day in days:
        shutil.copytree(source / f"date={day}", target / f"date={day}", dirs_exist_ok=True)
    return target


def _run(spark: Any, archive: Path, out: Path, *, full: bool = False) -> None:
    from garlicfarm.pipeline.job import run_pipeline
    from garlicfarm.pipeline.options import PipelineOptions

    options = PipelineOptions(archive=str(archive), out=str(out), interval_ms=600_000, full=full)
    run_pipeline(spark, options)


def _rows(out: Path, archive: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows, sorted; the archive's own path (in the rejects' file names) as ``<archive>``."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.dataset as ds  # type: ignore[import-untyped]

    tables = {}
    for name in TABLES:
        partitioning = (
            None
            if name == "rejects"
            else ds.partitioning(pa.schema([("cluster", pa.string()), ("day", pa.string())]), flavor="hive")
        )
        table = ds.dataset(out / name, format="parquet", partitioning=partitioning).to_table()
        columns = sorted(table.column_names)
        rows = zip(*(table.column(c).to_pylist() for c in columns), strict=True)
        tables[name] = sorted(tuple(repr(v).replace(str(archive), "<archive>") for v in row) for row in rows)
    return tables


Tables = dict[str, list[tuple[Any, ...]]]


@pytest.fixture(scope="module")
def untouched(spark: Any, source: Path, tmp_path_factory: pytest.TempPathFactory) -> Tables:
    """A full run's tables over the three days as generated: what most scenarios end with (one run of
    the pipeline for all of them, not one each)."""
    root = tmp_path_factory.mktemp("untouched")
    _run(spark, _archive(source, root / "archive", DAYS), root / "out", full=True)
    return _rows(root / "out", root / "archive")


def _same_as_full(
    spark: Any, archive: Path, incremental: Path, tmp_path: Path, expected: Tables | None = None
) -> None:
    """The incremental run's tables are a full run's over the same archive (``expected``: a full
    run's tables over an archive known to be the same)."""
    if expected is None:
        full = tmp_path / "full"
        _run(spark, archive, full, full=True)
        expected = _rows(full, archive)
    got = _rows(incremental, archive)
    for name in TABLES:
        assert got[name] == expected[name], name
    assert expected["publisher_timeline"] and expected["member_health"]


#: both farms, resumed from their checkpoints of the first day (the last run left the second open)
FROM_THE_FIRST_DAY = [
    f"farm-00{f}: replayed from its checkpoint of 2026-01-01, member health from 2026-01-02" for f in (0, 1)
]


def _replayed(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "replayed from" in r.getMessage()]


def test_a_day_added_is_replayed_alone_and_gives_the_full_runs_tables(
    spark: Any, source: Path, untouched: Tables, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    archive = _archive(source, tmp_path / "archive", DAYS[:2])
    out = tmp_path / "out"
    _run(spark, archive, out)
    assert sorted(p.name for p in (out / "_checkpoints").glob("cluster=*")) == [
        "cluster=farm-000",
        "cluster=farm-001",
    ]
    caplog.set_level(logging.INFO, logger="garlicfarm.pipeline")
    _archive(source, archive, DAYS[2:])
    _run(spark, archive, out)
    # the last run ended with 2026-01-02 open: each farm goes on from its checkpoint of the day before
    assert sorted(_replayed(caplog)) == FROM_THE_FIRST_DAY
    _same_as_full(spark, archive, out, tmp_path, untouched)


def test_nothing_changed_replays_nothing(
    spark: Any, source: Path, untouched: Tables, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    archive = _archive(source, tmp_path / "archive", DAYS)
    out = tmp_path / "out"
    _run(spark, archive, out)
    caplog.set_level(logging.INFO, logger="garlicfarm.pipeline")
    _run(spark, archive, out)
    assert _replayed(caplog) == []
    _same_as_full(spark, archive, out, tmp_path, untouched)
    # a table removed by hand: what the checkpoints would skip is gone, so the run is a full one
    shutil.rmtree(out / "member_health")
    caplog.clear()
    _run(spark, archive, out)
    assert len(_replayed(caplog)) == 2
    _same_as_full(spark, archive, out, tmp_path, untouched)


def test_a_line_changed_in_an_earlier_day_is_seen_and_replayed_from_before_it(
    spark: Any, source: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    archive = _archive(source, tmp_path / "archive", DAYS)
    out = tmp_path / "out"
    _run(spark, archive, out)
    # a late record in the second day: one of its valid lines comes again at a new, higher index,
    # and another is removed
    day = archive / f"date={DAYS[1]}" / "node-1.jsonl"
    lines = day.read_bytes().splitlines(keepends=True)
    valid = [i for i, line in enumerate(lines) if line.startswith(b'{"index":')][len(lines) // 2]
    late = json.loads(lines[valid])
    late["index"] = 10_000_000
    late["record"]["date"] += 1
    del lines[valid + 1]
    day.write_bytes(
        b"".join(lines) + json.dumps(late, separators=(",", ":"), sort_keys=True).encode() + b"\n"
    )
    caplog.set_level(logging.INFO, logger="garlicfarm.pipeline")
    _run(spark, archive, out)
    replayed = _replayed(caplog)
    assert replayed and all("checkpoint of 2026-01-01" in line or "the start" in line for line in replayed)
    _same_as_full(spark, archive, out, tmp_path)


def test_a_corrupt_checkpoint_falls_back_to_the_one_before_with_a_warning(
    spark: Any, source: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    archive = _archive(source, tmp_path / "archive", DAYS)
    out = tmp_path / "out"
    _run(spark, archive, out)
    states = sorted((out / "_checkpoints" / "cluster=farm-000").glob("day=*/state.json"))
    assert len(states) == 2
    states[-1].write_bytes(b'{"version": 1, "cluster": "farm-000", "cut": [1, 1')  # torn
    # the state of farm-001's newest day never renamed into place: a kill between write and rename
    newest = sorted((out / "_checkpoints" / "cluster=farm-001").glob("day=*/state.json"))[-1]
    newest.rename(newest.with_name(".state.json.4242.tmp"))
    shutil.copy(archive / f"date={DAYS[2]}" / "node-1.jsonl", archive / f"date={DAYS[2]}" / "node-2.jsonl")
    caplog.set_level(logging.INFO, logger="garlicfarm.pipeline")
    _run(spark, archive, out)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("farm-000: checkpoint" in w and "unusable" in w for w in warnings), warnings
    assert sorted(_replayed(caplog)) == FROM_THE_FIRST_DAY
    _same_as_full(spark, archive, out, tmp_path)


def test_a_farm_without_usable_checkpoints_is_replayed_from_the_start(
    spark: Any, source: Path, untouched: Tables, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    archive = _archive(source, tmp_path / "archive", DAYS[:2])
    out = tmp_path / "out"
    _run(spark, archive, out)
    for state in (out / "_checkpoints").glob("cluster=farm-000/day=*/state.json"):
        state.write_bytes(b"not json")
    _archive(source, archive, DAYS[2:])
    caplog.set_level(logging.INFO, logger="garlicfarm.pipeline")
    _run(spark, archive, out)
    assert "farm-000: replayed from the start, member health from the start" in _replayed(caplog)
    _same_as_full(spark, archive, out, tmp_path, untouched)
