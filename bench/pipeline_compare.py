"""Two pipeline outputs compared row by row: Spark's ``garlicfarm pipeline`` tables against the DuckDB
peer's (bench/pipeline_bench.py), or any two directories of the same tables.

Each table is read with DuckDB (``cluster=/day=`` partition directories as columns, typed), every column
normalised to one type whichever engine wrote it (integers as BIGINT, timestamps as UTC microseconds
since the epoch, days as ``YYYY-MM-DD``, an archive file by its name), the columns in one order; then
each side's rows that the other lacks (a multiset difference, so a row twice on one side and once on the
other counts), sorted by the table's key.

The rejects are compared by line: partition, file name, line number, farm, index, kind, the schema's
reason and the line as shown; and the whole-file rejects alike (their line number is null).

    python -m bench.pipeline_compare SPARK_OUT DUCKDB_OUT      # exit 1 on any difference
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

#: how each column is normalised (see :func:`_normalised`)
INT, FLOAT, STR, TS, DAY, FILE = "int", "float", "str", "ts", "day", "file"

#: each table: its columns (normalisation kind) in order; the first ``KEYS[name]`` columns sort it
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "member_health": (
        ("cluster", STR),
        ("id", INT),
        ("day", DAY),
        ("reports", INT),
        ("first_report", TS),
        ("last_report", TS),
        ("uptime_max_ms", INT),
        ("interval_s", FLOAT),
        ("gaps", INT),
        ("missed_reports", INT),
        ("availability", FLOAT),
        ("longest_gap_s", FLOAT),
        ("unhealthy_reports", INT),
        ("restarts", INT),
        ("bandwidth_p50", INT),
        ("bandwidth_p90", INT),
        ("bandwidth_p99", INT),
        ("tunnels_p50", INT),
        ("tunnels_p90", INT),
        ("tunnels_p99", INT),
        ("publisher_windows", INT),
        ("farm_publisher_changes", INT),
    ),
    "publisher_timeline": (
        ("cluster", STR),
        ("window_start", TS),
        ("window_end", TS),
        ("day", DAY),
        ("publisher", INT),
        ("publisher_score", INT),
        ("eligible", INT),
        ("members", INT),
        ("leases", INT),
        ("changes", INT),
        ("records", INT),
        ("log_time", TS),
        ("last_index", INT),
    ),
    "destination_weights": (
        ("cluster", STR),
        ("window_start", TS),
        ("rank", INT),
        ("window_end", TS),
        ("day", DAY),
        ("destination", STR),
        ("weight", INT),
    ),
    "rejects": (
        ("partition", STR),
        ("file", FILE),
        ("line_number", INT),
        ("cluster", STR),
        ("index", INT),
        ("kind", STR),
        ("reason", STR),
        ("line", STR),
        ("lines_read", INT),
        ("bytes_read", INT),
    ),
}
KEYS = {"member_health": 3, "publisher_timeline": 2, "destination_weights": 3, "rejects": 3}
#: partition columns, as both engines write them (``key=value`` directories)
PARTITIONED = ("member_health", "publisher_timeline", "destination_weights")


@dataclass
class TableDiff:
    """One table of two outputs: its rows on each side and the rows each side has that the other lacks
    (up to ``shown`` of each, in key order; the ``only_*`` counts are all of them)."""

    table: str
    columns: tuple[str, ...]
    rows: tuple[int, int]
    only_left: int = 0
    only_right: int = 0
    first_left: list[tuple[Any, ...]] = field(default_factory=list)
    first_right: list[tuple[Any, ...]] = field(default_factory=list)
    error: str | None = None

    @property
    def same(self) -> bool:
        return self.error is None and self.only_left == 0 and self.only_right == 0

    def describe(self, names: tuple[str, str] = ("left", "right")) -> list[str]:
        left, right = names
        head = f"{self.table}: {self.rows[0]:,} rows ({left}), {self.rows[1]:,} ({right})"
        if self.error is not None:
            return [f"{head}: {self.error}"]
        if self.same:
            return [f"{head}: identical, row by row"]
        lines = [f"{head}: {self.only_left:,} rows only in {left}, {self.only_right:,} only in {right}"]
        lines.append("  columns: " + ", ".join(self.columns))
        lines += [f"  {left}:  {row}" for row in self.first_left]
        lines += [f"  {right}: {row}" for row in self.first_right]
        return lines


class MissingColumns(Exception):
    pass


def _source(directory: Path, table: str) -> str:
    path = directory / table
    if table in PARTITIONED:
        glob = str(path / "*" / "*" / "*.parquet")
        return (
            f"read_parquet('{_quoted(glob)}', hive_partitioning = true, "
            "hive_types = {'cluster': 'VARCHAR', 'day': 'DATE'})"
        )
    return f"read_parquet('{_quoted(str(path / '*.parquet'))}')"


def _quoted(text: str) -> str:
    return text.replace("'", "''")


def _normalised(name: str, kind: str) -> str:
    column = f'"{name}"'
    expr = {
        INT: f"CAST({column} AS BIGINT)",
        FLOAT: f"CAST({column} AS DOUBLE)",
        STR: f"CAST({column} AS VARCHAR)",
        # TIMESTAMP (naive, UTC) or TIMESTAMP WITH TIME ZONE alike: microseconds since the epoch
        TS: f"epoch_us({column})",
        DAY: f"strftime(CAST({column} AS DATE), '%Y-%m-%d')",
        FILE: f"regexp_extract(CAST({column} AS VARCHAR), '[^/]*$')",
    }[kind]
    return f'{expr} AS "{name}"'


def _relation(con: duckdb.DuckDBPyConnection, directory: Path, table: str, view: str) -> int:
    source = _source(directory, table)
    present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    missing = [name for name, _ in TABLES[table] if name not in present]
    if missing:
        raise MissingColumns(f"no column {', '.join(missing)} in {directory / table}")
    columns = ", ".join(_normalised(name, kind) for name, kind in TABLES[table])
    con.execute(f"CREATE OR REPLACE TEMP TABLE {view} AS SELECT {columns} FROM {source}")
    count = con.execute(f"SELECT count(*) FROM {view}").fetchone()
    return int(count[0]) if count else 0


def compare_table(
    con: duckdb.DuckDBPyConnection, left: Path, right: Path, table: str, shown: int = 5
) -> TableDiff:
    columns = tuple(name for name, _ in TABLES[table])
    try:
        rows = (_relation(con, left, table, "l"), _relation(con, right, table, "r"))
    except duckdb.Error as e:
        return TableDiff(table, columns, (0, 0), error=f"cannot read: {str(e).splitlines()[0]}")
    except MissingColumns as e:
        return TableDiff(table, columns, (0, 0), error=str(e))
    order = ", ".join(f'"{c}" NULLS FIRST' for c in columns)
    diff = TableDiff(table, columns, rows)
    for a, b, attr in (("l", "r", "left"), ("r", "l", "right")):
        only = f"(SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b})"
        count = con.execute(f"SELECT count(*) FROM {only}").fetchone()
        setattr(diff, f"only_{attr}", int(count[0]) if count else 0)
        first = con.execute(f"SELECT * FROM {only} ORDER BY {order} LIMIT {int(shown)}").fetchall()
        setattr(diff, f"first_{attr}", first)
    return diff


def compare_outputs(
    left: Path, right: Path, tables: Sequence[str] = tuple(TABLES), shown: int = 5
) -> list[TableDiff]:
    """Every table of ``tables`` in the outputs ``left`` and ``right``, compared row by row."""
    con = duckdb.connect()
    try:
        return [compare_table(con, left, right, table, shown) for table in tables]
    finally:
        con.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("left", type=Path, help="one output directory (e.g. Spark's)")
    parser.add_argument("right", type=Path, help="the other (e.g. the DuckDB peer's)")
    parser.add_argument("--shown", type=int, default=5, help="differing rows shown per table and side")
    args = parser.parse_args(argv)
    diffs = compare_outputs(args.left, args.right, shown=args.shown)
    for diff in diffs:
        for line in diff.describe((str(args.left), str(args.right))):
            print(line)
    return 0 if all(d.same for d in diffs) else 1


if __name__ == "__main__":
    sys.exit(main())
