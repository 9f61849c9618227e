"""The pipeline benchmark's DuckDB peer (bench/pipeline_duckdb.py) and the row-by-row comparison of two
outputs (bench/pipeline_compare.py): the peer reads lines as Spark's text source cuts them, accepts
exactly the records the schema accepts, with the same fields; the comparison finds a changed or a
missing row; and Spark's job and the peer give the same tables, row by row (marked slow: Spark).

DuckDB is the bench extra's (bench/setup.sh): without it these tests are skipped.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("duckdb")

import duckdb
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from bench.pipeline_compare import compare_outputs
from bench.pipeline_compare import main as compare_main
from bench.pipeline_duckdb import read_and_check, run_duckdb, split_lines
from garlicfarm.pipeline.files import ArchiveFile
from garlicfarm.pipeline.records import CHECKED_SCHEMA, _checked
from garlicfarm.pipeline.synth import SynthSettings, generate
from tests.pipeline.test_native import lines as hostile_lines
from tests.pipeline.test_pipeline import HOSTILE

DAY = "date=2026-01-01"


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 farms x 3 members x 1 day, 2 % bad lines, archived by two nodes, and a file of hostile lines
    (with the line ends Spark's reader also cuts at: \\r\\n and a lone \\r)."""
    root = tmp_path_factory.mktemp("archive")
    generate(SynthSettings(farms=2, members=3, days=1, seed=3, bad_share=0.02), root)
    for partition in sorted(root.glob("date=*")):
        copy = [
            re.sub(rb'^\{"index":(\d+),"recorded":1,', rb'{"index":\1,"recorded":2,', line)
            for line in (partition / "node-1.jsonl").read_bytes().split(b"\n")
        ]
        (partition / "node-2.jsonl").write_bytes(b"\n".join(copy))
    hostile = [line for line, _ in HOSTILE if len(line) < 100_000]
    (root / DAY / "node-9.jsonl").write_bytes(b"\r\n".join(hostile[:5]) + b"\r" + b"\n".join(hostile[5:]))
    return root


@pytest.fixture(scope="module")
def duckdb_out(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out") / "duckdb"
    figures = run_duckdb(archive, out, jobs=1, verbose=False)
    assert figures["valid_records"] > 0 and figures["rejected_lines"] > 0
    return out


def _hadoop_lines(data: bytes) -> list[bytes]:
    data = data.removeprefix(b"\xef\xbb\xbf")
    lines = re.split(rb"\r\n|\n|\r", data)
    return lines[:-1] if lines and lines[-1] == b"" else lines


def test_lines_are_cut_as_sparks_text_source_cuts_them() -> None:
    for data in (b"", b"\n", b"a", b"a\nb\n", b"\xef\xbb\xbfa\r\nb\rc\n\n", b"a\r\r\n", b"\r", b"\xff\n\xfe"):
        assert split_lines(data).to_pylist() == _hadoop_lines(data)
    rng = random.Random(5)
    for _ in range(2000):
        data = bytes(rng.choice(b"ab\r\n\xff") for _ in range(rng.randint(0, 14)))
        if rng.random() < 0.2:
            data = b"\xef\xbb\xbf" + data
        assert split_lines(data).to_pylist() == _hadoop_lines(data)


#: the columns of ``lines`` (clean) and ``checked``, by CHECKED_SCHEMA's names
_FIELDS = {
    "ok": "ok",
    "cluster": "cluster",
    "index": "idx",
    "recorded": "recorded",
    "id": "id",
    "date": "date",
    "uptime": "uptime",
    "healthy": "healthy",
    "tunnels": "tunnels",
    "bandwidth": "bandwidth",
    "record": "record",
    "kind": "kind",
    "reason": "reason",
    "line": "line",
}


def _duckdb_fields(data: list[bytes], directory: Path) -> list[tuple[bool, tuple[Any, ...]]]:
    """For each line: whether SQL vouched for it, and its fields as the peer gives them."""
    path = directory / DAY / "node-1.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in data))
    con = duckdb.connect()
    read_and_check(con, [ArchiveFile(str(path), DAY.removeprefix("date="), path.stat().st_size, False)])
    columns = ", ".join(_FIELDS.values())
    clean_columns = columns.replace("ok,", "clean,").replace("kind, reason, line", "NULL, NULL, NULL")
    clean = con.execute(f"SELECT line_number, true, {clean_columns} FROM lines WHERE clean").fetchall()
    checked = con.execute(f"SELECT line_number, false, {columns} FROM checked").fetchall()
    con.close()
    rows = sorted([*clean, *checked])
    assert [row[0] for row in rows] == list(range(1, len(data) + 1))
    return [(bool(row[1]), tuple(row[2:])) for row in rows]


def _expected(line: bytes) -> tuple[Any, ...]:
    names = CHECKED_SCHEMA.fieldNames()
    values = dict(zip(names, _checked(line), strict=True))
    return tuple(values[name] for name in _FIELDS)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(data=st.lists(hostile_lines(), min_size=40, max_size=40))
def test_the_peer_and_the_schema_give_one_verdict_on_hostile_lines(
    data: list[bytes], tmp_path_factory: pytest.TempPathFactory
) -> None:
    # bytes the line reader would cut elsewhere are Spark's text source's business (tested above)
    data = [line for line in data if b"\n" not in line and b"\r" not in line]
    results = _duckdb_fields(data, tmp_path_factory.mktemp("lines"))
    for line, (vouched, got) in zip(data, results, strict=True):
        assert got == _expected(line), line
        if vouched:
            assert got[0] is True  # SQL never vouches for a line the schema rejects


def test_the_farms_own_lines_are_vouched_for_in_sql(tmp_path: Path) -> None:
    generate(SynthSettings(farms=1, members=3, days=1, interval_s=600, seed=5, bad_share=0.0), tmp_path / "a")
    data = (tmp_path / "a" / DAY / "node-1.jsonl").read_bytes().splitlines()
    results = _duckdb_fields(data, tmp_path / "b")
    assert results and all(vouched for vouched, _ in results)
    assert [got for _, got in results] == [_expected(line) for line in data]


def test_identical_outputs_compare_identical(duckdb_out: Path, tmp_path: Path) -> None:
    shutil.copytree(duckdb_out, tmp_path / "copy")
    diffs = compare_outputs(duckdb_out, tmp_path / "copy")
    assert [d.table for d in diffs] == [
        "member_health",
        "publisher_timeline",
        "destination_weights",
        "rejects",
    ]
    assert all(d.same for d in diffs), [d.describe() for d in diffs]
    assert all(d.rows[0] == d.rows[1] > 0 for d in diffs)


def _one_file(out: Path, table: str) -> Path:
    return sorted((out / table).rglob("*.parquet"))[0]


def test_a_changed_row_is_reported(
    duckdb_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changed = tmp_path / "changed"
    shutil.copytree(duckdb_out, changed)
    path = _one_file(changed, "member_health")
    rows = pq.read_table(path).to_pylist()
    rows[0]["reports"] += 1
    pq.write_table(pq.read_table(path).from_pylist(rows, schema=pq.read_schema(path)), path)

    diffs = {d.table: d for d in compare_outputs(duckdb_out, changed, shown=3)}
    health = diffs.pop("member_health")
    assert (health.only_left, health.only_right) == (1, 1)
    (left,), (right,) = health.first_left, health.first_right
    reports = health.columns.index("reports")
    assert right[reports] == left[reports] + 1
    assert left[:3] == right[:3]  # the same farm, member and day
    assert all(d.same for d in diffs.values())
    text = "\n".join(health.describe(("spark", "duckdb")))
    assert "1 rows only in spark, 1 only in duckdb" in text and str(left) in text and str(right) in text

    assert compare_main([str(duckdb_out), str(changed)]) == 1
    assert "member_health" in capsys.readouterr().out


def test_a_missing_row_and_a_missing_column_are_reported(duckdb_out: Path, tmp_path: Path) -> None:
    changed = tmp_path / "changed"
    shutil.copytree(duckdb_out, changed)
    path = _one_file(changed, "destination_weights")
    table = pq.read_table(path)
    pq.write_table(table.slice(1), path)
    path = _one_file(changed, "rejects")
    pq.write_table(pq.read_table(path).drop(["reason"]), path)

    diffs = {d.table: d for d in compare_outputs(duckdb_out, changed)}
    weights = diffs["destination_weights"]
    assert (weights.only_left, weights.only_right) == (1, 0)
    assert weights.rows == (weights.rows[1] + 1, weights.rows[1])
    assert diffs["rejects"].error is not None and "reason" in diffs["rejects"].error
    assert not diffs["rejects"].same
    assert diffs["member_health"].same and diffs["publisher_timeline"].same


@pytest.mark.e2e
@pytest.mark.slow
def test_spark_and_the_duckdb_peer_agree_row_by_row(
    spark: Any, archive: Path, duckdb_out: Path, tmp_path: Path
) -> None:
    from garlicfarm.pipeline.job import run_pipeline
    from garlicfarm.pipeline.options import PipelineOptions

    run_pipeline(spark, PipelineOptions(str(archive), str(tmp_path / "spark")))
    diffs = compare_outputs(tmp_path / "spark", duckdb_out)
    assert all(d.same for d in diffs), "\n".join(
        line for d in diffs for line in d.describe(("spark", "duckdb"))
    )
    assert all(d.rows[0] > 0 for d in diffs)
