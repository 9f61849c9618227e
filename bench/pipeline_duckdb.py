"""The telemetry pipeline's tables computed with DuckDB: the benchmark's peer for the Spark job.

What a competent DuckDB user writes for the same job, with the same verdict on every line:

1. *read + check*: each archive file split into lines exactly as Spark's text source splits them
   (``\\n``, ``\\r\\n`` or a lone ``\\r``; a UTF-8 byte order mark at a file's start dropped) in
   NumPy, handed to DuckDB as an Arrow array of raw bytes (the next file is read while DuckDB checks
   one). In SQL, one parse per line into a typed STRUCT (``json_transform`` with the archive's schema,
   :data:`garlicfarm.pipeline.native.LINE_TYPE`), then the Spark job's own JVM rule
   (:mod:`garlicfarm.pipeline.native`): a line is *clean* when the struct, written back as JSON, gives
   the line's very text (which rules out non-UTF-8 bytes, repeated or unknown keys, wrong types,
   floats, whitespace, deeper nesting) and the schema's ranges, enumerations and sizes hold (the same
   expressions, per destination too, in SQL). A line holding a ``\\u`` escape is not parsed in SQL
   (DuckDB's parser fails the whole query on a lone surrogate). Every other line goes through the
   schema's own Python checker (``records._checked``, what Spark's ``mapInPandas`` runs), which gives
   the exact verdict and reason. So both engines accept exactly the same records, with the same
   fields, and reject the same lines for the same reasons.
2. *replay*: each farm's valid records, copies dropped (a record counts at its first index), in index
   order (one query a farm, largest first, so the first replay starts after one farm's sort), as Arrow,
   replayed through the very same ``replay_farm`` the Spark job runs,
   read as already checked (``accepted=True``, ``schema.parse_accepted``, as Spark's replay does), one
   farm per task in ``jobs`` processes; windows and Meta LS2 weights written as Parquet.
3. *member health*: ``health.member_health``'s aggregation in SQL (copies, gaps against the 60 s interval,
   restarts, unhealthy reports, the percentiles by Spark's exact rank rule, windows published from the
   timeline), written as Parquet.
4. *rejects*: the rejected lines with their line numbers, and whole files the listing set aside.

The tables are written as Spark writes them: ``cluster=/day=`` partitions, UTC timestamps.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import multiprocessing
import os
import resource
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.types import ArrayType, BooleanType, DataType, LongType, MapType, StringType, StructType

from garlicfarm.app.schema import (
    MAX_BLOCKLIST,
    MAX_DATE,
    MAX_DESTINATIONS,
    MAX_INT,
    MAX_RECORD_BYTES,
    MAX_STRING,
    PUBLISH_CONFIGS,
    SCHEMA_VERSION,
)
from garlicfarm.pipeline import native
from garlicfarm.pipeline.files import ArchiveFile, Listing
from garlicfarm.pipeline.intake import list_local
from garlicfarm.pipeline.records import CHECKED_SCHEMA, _checked
from garlicfarm.pipeline.replay import WindowState, replay_farm

WINDOW_MS = 300_000
INTERVAL_MS = 60_000
BOM = b"\xef\xbb\xbf"
PERCENTILES = (0.5, 0.9, 0.99)


def _structure(dtype: DataType) -> Any:
    """A Spark type as ``json_transform``'s structure."""
    if isinstance(dtype, StructType):
        return {f.name: _structure(f.dataType) for f in dtype.fields}
    if isinstance(dtype, ArrayType):
        return [_structure(dtype.elementType)]
    if isinstance(dtype, MapType):
        return "MAP(VARCHAR, VARCHAR)"
    return {LongType: "BIGINT", StringType: "VARCHAR", BooleanType: "BOOLEAN"}[type(dtype)]


#: the archive line's schema, the JVM check's own (native.LINE_TYPE)
LINE_STRUCTURE = json.dumps(_structure(native.LINE_TYPE))


def _between(column: str, low: int, high: int) -> str:
    return f"({column} IS NOT NULL AND {column} BETWEEN {low} AND {high})"


def _number(column: str) -> str:
    return _between(column, 0, MAX_INT)


def _text(column: str) -> str:
    return f"(length({column}) <= {MAX_STRING})"


def _optional_text(column: str) -> str:
    return f"({column} IS NULL OR {_text(column)})"


def _numbers(struct: StructType) -> list[str]:
    return [field.name for field in struct.fields if isinstance(field.dataType, LongType)]


def _all(checks: list[str]) -> str:
    return "(" + "\n        AND ".join(checks) + ")"


def _none_fails(items: str, var: str, check: str) -> str:
    """Every item of the list ``items`` passes ``check`` (NULL counts as failing)."""
    return f"(len(list_filter({items}, lambda {var}: NOT coalesce({check}, false))) = 0)"


def _destination_checks(d: str) -> str:
    return _all(
        [
            f"{d} IS NOT NULL",
            f"{d}.destination IS NOT NULL",
            _text(f"{d}.destination"),
            f"{d}.blocklist IS NOT NULL",
            f"len({d}.blocklist) <= {MAX_BLOCKLIST}",
            _none_fails(f"{d}.blocklist", "b", f"b IS NOT NULL AND {_text('b')}"),
            *[_number(f"{d}.{name}") for name in _numbers(native.DESTINATION_TYPE)],
        ]
    )


def record_checks() -> str:
    """``native._record_checks`` in SQL, over ``j`` (the parsed line)."""
    r, meta, router = "j.record", "j.record.meta", "j.record.router"
    configs = ", ".join(f"'{c}'" for c in PUBLISH_CONFIGS)
    return _all(
        [
            _between("j.index", 1, MAX_INT),
            _between("j.recorded", 1, 2**31 - 1),
            f"{r} IS NOT NULL",
            f"{r}.cluster IS NOT NULL",
            f"{r}.config IS NOT NULL",
            _between(f"{r}.date", 0, MAX_DATE),
            _between(f"{r}.id", 1, 2**31 - 1),
            f"{r}.version IS NOT NULL AND {r}.version = {SCHEMA_VERSION}",
            f"{r}.destinations IS NOT NULL",
            f"len({r}.destinations) <= {MAX_DESTINATIONS}",
            _none_fails(f"{r}.destinations", "d", _destination_checks("d")),
            f"{meta} IS NOT NULL",
            _optional_text(f"{meta}.destination"),
            _optional_text(f'{meta}."lastPublishedLS"'),
            _between(f'{meta}."lastPublishedTime"', 0, MAX_DATE),
            f'({meta}."publishConfig" IS NULL OR {meta}."publishConfig" IN ({configs}))',
            f"{meta}.publishing IS NOT NULL",
            f"{router} IS NOT NULL",
            _optional_text(f'{router}."netStatus"'),
            _optional_text(f'{router}."lastPublishedRI"'),
            *[_number(f'{router}."{name}"') for name in _numbers(native.ROUTER_TYPE)],
        ]
    )


LINES_TABLE = """
CREATE TABLE lines (
    partition VARCHAR, file VARCHAR, line_number BIGINT, clean BOOLEAN,
    cluster VARCHAR, idx BIGINT, recorded BIGINT, id BIGINT, date BIGINT, uptime BIGINT,
    healthy BOOLEAN, tunnels BIGINT, bandwidth BIGINT, record BLOB,
    suspect BLOB
)
"""

#: one file's lines (``chunk``: ``raw`` bytes with their terminator, ``line_number``) parsed and checked
CHECK = f"""
INSERT INTO lines
WITH l AS (
    SELECT line_number, raw, try(decode(raw)) AS text FROM chunk
), p AS (
    SELECT line_number, raw, text,
           -- one parse into the typed struct; a line with a \\u escape is left to Python (DuckDB's
           -- parser fails the whole query on a lone surrogate), as is one too long to be clean
           CASE WHEN strlen(text) <= {MAX_RECORD_BYTES} AND NOT contains(text, '\\u') AND json_valid(text)
                THEN json_transform(text, '{LINE_STRUCTURE}') END AS j
    FROM l
), c AS (
    SELECT *, to_json(j.record) AS record_json FROM p
), v AS (
    SELECT *,
        coalesce(
            text = '{{"index":' || CAST(j.index AS VARCHAR) || ',"record":' || record_json
                   || ',"recorded":' || CAST(j.recorded AS VARCHAR) || '}}'
            AND {record_checks()},
            false) AS clean
    FROM c
)
SELECT $partition, $file, line_number, clean,
       CASE WHEN clean THEN j.record.cluster END,
       CASE WHEN clean THEN j.index END,
       CASE WHEN clean THEN j.recorded END,
       CASE WHEN clean THEN j.record.id END,
       CASE WHEN clean THEN j.record.date END,
       CASE WHEN clean THEN j.record.router.uptime END,
       CASE WHEN clean THEN NOT starts_with(coalesce(nullif(j.record.router."netStatus", ''), 'UNKNOWN'),
                                            'ERROR') END,
       CASE WHEN clean THEN j.record.router."participatingTunnels" END,
       CASE WHEN clean THEN j.record.router."bandwidthCurrent" END,
       CASE WHEN clean THEN encode(record_json) END,
       CASE WHEN NOT clean THEN raw END
FROM v
"""

CHECKED_TABLE = """
CREATE TABLE checked (
    partition VARCHAR, file VARCHAR, line_number BIGINT, ok BOOLEAN,
    cluster VARCHAR, idx BIGINT, recorded BIGINT, id BIGINT, date BIGINT, uptime BIGINT,
    healthy BOOLEAN, tunnels BIGINT, bandwidth BIGINT, record BLOB,
    kind VARCHAR, reason VARCHAR, line VARCHAR
)
"""
_VALID_COLUMNS = "cluster, idx, recorded, id, date, uptime, healthy, tunnels, bandwidth, record"
VALID = f"""
CREATE VIEW valid AS
SELECT {_VALID_COLUMNS} FROM lines WHERE clean
UNION ALL
SELECT {_VALID_COLUMNS} FROM checked WHERE ok
"""

#: one farm's replay rows: each record once (at its first index), in log order
REPLAY_ROWS = """
SELECT idx, date, record FROM valid WHERE cluster = $cluster
QUALIFY row_number() OVER (PARTITION BY id, date ORDER BY idx) = 1
ORDER BY idx
"""


def _percentile(column: str, p: float) -> str:
    """Spark's ``percentile_approx`` where it is exact (here: up to 10,000 values a group): the value
    of rank ceil(p * n), p a double."""
    return f"list_sort(list({column}))[CAST(ceil(CAST({p!r} AS DOUBLE) * count(*)) AS BIGINT)]"


_PERCENTILES = ", ".join(
    f"{_percentile(column, p)} AS {column}_p{round(p * 100)}"
    for column in ("bandwidth", "tunnels")
    for p in PERCENTILES
)
HEALTH = f"""
COPY (
    WITH v AS (
        SELECT cluster, id, date, idx, uptime, healthy, tunnels, bandwidth,
               date - lag(date) OVER w AS gap_ms, uptime < lag(uptime) OVER w AS restart
        FROM valid
        WINDOW w AS (PARTITION BY cluster, id ORDER BY date, idx, recorded)
    ), u AS (
        SELECT *, CAST(epoch_ms(date) AS DATE) AS day,
               coalesce(gap_ms > CAST($interval AS DOUBLE) * 1.5, false) AS late
        FROM v WHERE gap_ms IS NULL OR gap_ms > 0
    ), health AS (
        SELECT cluster, id, day, count(*) AS reports,
               epoch_ms(min(date)) AS first_report, epoch_ms(max(date)) AS last_report,
               max(uptime) AS uptime_max_ms,
               CAST($interval AS DOUBLE) / 1000 AS interval_s,
               CAST(sum(CASE WHEN late THEN 1 ELSE 0 END) AS BIGINT) AS gaps,
               CAST(sum(CASE WHEN late THEN round(gap_ms / CAST($interval AS DOUBLE)) - 1 ELSE 0 END)
                    AS BIGINT) AS missed_reports,
               coalesce(max(gap_ms), 0) / 1000 AS longest_gap_s,
               CAST(sum(CASE WHEN healthy THEN 0 ELSE 1 END) AS BIGINT) AS unhealthy_reports,
               CAST(sum(CASE WHEN restart THEN 1 ELSE 0 END) AS BIGINT) AS restarts,
               {_PERCENTILES}
        FROM u GROUP BY cluster, id, day
    ), published AS (
        SELECT cluster, day, publisher AS id, count(*) AS publisher_windows
        FROM timeline WHERE publisher IS NOT NULL GROUP BY ALL
    ), changes AS (
        SELECT cluster, day, CAST(sum(changes) AS BIGINT) AS farm_publisher_changes FROM timeline GROUP BY ALL
    )
    SELECT h.*, reports / (reports + missed_reports) AS availability,
           CAST(coalesce(publisher_windows, 0) AS BIGINT) AS publisher_windows,
           CAST(coalesce(farm_publisher_changes, 0) AS BIGINT) AS farm_publisher_changes
    FROM health h
    LEFT JOIN published USING (cluster, id, day)
    LEFT JOIN changes USING (cluster, day)
) TO $out (FORMAT parquet, PARTITION_BY (cluster, day))
"""

TIMELINE = """
CREATE TEMP TABLE timeline AS
SELECT cluster, make_timestamp(window_start * 1000) AS window_start,
       make_timestamp((window_start + $window) * 1000) AS window_end,
       CAST(make_timestamp(window_start * 1000) AS DATE) AS day,
       publisher, publisher_score, eligible, members, CAST(len(lease_destinations) AS INTEGER) AS leases,
       changes, records, make_timestamp(log_time * 1000) AS log_time, last_index,
       lease_destinations, lease_weights
FROM windows
"""
WRITE_TIMELINE = """
COPY (SELECT * EXCLUDE (lease_destinations, lease_weights) FROM timeline)
TO $out (FORMAT parquet, PARTITION_BY (cluster, day))
"""
WRITE_WEIGHTS = """
COPY (
    SELECT cluster, window_start, window_end, day, rank,
           lease_destinations[rank] AS destination, lease_weights[rank] AS weight
    FROM timeline, LATERAL (SELECT CAST(unnest(range(1, len(lease_destinations) + 1)) AS INTEGER) AS rank)
) TO $out (FORMAT parquet, PARTITION_BY (cluster, day))
"""
WRITE_REJECTS = """
COPY (
    SELECT partition, file, line_number, cluster, idx AS "index", kind, reason, line,
           CAST(NULL AS BIGINT) AS lines_read, CAST(NULL AS BIGINT) AS bytes_read
    FROM checked WHERE NOT ok
    UNION ALL
    SELECT * FROM file_rejects
) TO $out (FORMAT parquet)
"""


def split_lines(data: bytes) -> pa.Array:
    """``data`` (a whole archive file) as lines, cut the way Hadoop's line reader cuts them (at
    ``\n``, ``\r\n`` or a lone ``\r``; a UTF-8 byte order mark at the start dropped; the last line
    may have no terminator): one Arrow array of raw bytes, built in NumPy (the terminators cut out)."""
    a = np.frombuffer(data, dtype=np.uint8)
    start = len(BOM) if data.startswith(BOM) else 0
    newline = a == 10
    cr = a == 13
    cr[:-1] &= ~newline[1:]  # the \r of \r\n ends nothing: its \n does
    terminator = newline | cr
    ends = np.flatnonzero(terminator[start:]) + start + 1  # each line's end, its terminator included
    if len(a) > start and (len(ends) == 0 or ends[-1] < len(a)):
        ends = np.append(ends, len(a))  # the last line, with no terminator
    starts = np.concatenate([np.array([start], np.int64), ends[:-1]])
    # a line's terminator: none (the last line may have none), \n, \r, or \r\n
    last = a[ends - 1]
    crlf = (last == 10) & (ends - 2 >= starts) & (a[np.maximum(ends - 2, 0)] == 13)
    lengths = ends - starts - ((last == 10) | (last == 13)) - crlf
    offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths, dtype=np.int64)])
    # every \r and \n is (part of) a terminator: the lines are the other bytes
    keep = ~(newline | (a == 13))
    keep[:start] = False
    body = a[keep]
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(body)]
    )


def _read_file(path: str, compressed: bool) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if compressed else data


def _check_suspects(con: duckdb.DuckDBPyConnection) -> int:
    """The lines SQL did not vouch for, through the schema's own Python checker (Spark's mapInPandas
    body); their rows into ``checked``."""
    names = CHECKED_SCHEMA.fieldNames()
    keep: tuple[str, ...] = ("ok", "cluster", "index", "recorded", "id", "date", "uptime", "healthy")
    keep = (*keep, "tunnels", "bandwidth", "record", "kind", "reason", "line")
    picked = [names.index(name) for name in keep]
    rows: dict[str, list[Any]] = {name: [] for name in ("partition", "file", "line_number", *keep)}
    for partition, file, number, raw in con.execute(
        "SELECT partition, file, line_number, suspect FROM lines WHERE NOT clean"
    ).fetchall():
        values = _checked(bytes(raw))
        rows["partition"].append(partition)
        rows["file"].append(file)
        rows["line_number"].append(number)
        for name, i in zip(keep, picked, strict=True):
            rows[name].append(values[i])
    suspects = pa.table(
        {
            **{k: pa.array(v, pa.string()) for k, v in rows.items() if k in ("partition", "file")},
            "line_number": pa.array(rows["line_number"], pa.int64()),
            **{
                k: pa.array(rows[k], pa.int64())
                for k in ("index", "recorded", "id", "date", "uptime", "tunnels", "bandwidth")
            },
            "ok": pa.array(rows["ok"], pa.bool_()),
            "healthy": pa.array(rows["healthy"], pa.bool_()),
            "cluster": pa.array(rows["cluster"], pa.string()),
            "record": pa.array(rows["record"], pa.binary()),
            **{k: pa.array(rows[k], pa.string()) for k in ("kind", "reason", "line")},
        }
    )
    con.register("suspects", suspects)
    con.execute(
        'INSERT INTO checked SELECT partition, file, line_number, ok, cluster, "index", recorded, id, '
        "date, uptime, healthy, tunnels, bandwidth, record, kind, reason, line FROM suspects"
    )
    con.unregister("suspects")
    return len(rows["ok"])


def read_and_check(con: duckdb.DuckDBPyConnection, files: Sequence[ArchiveFile]) -> tuple[int, int]:
    """Every line of ``files`` read and checked into the tables ``lines`` (each line: clean and its
    fields, or the raw bytes of a suspect) and ``checked`` (the suspects, by the schema's own code), and
    the view ``valid``; how many lines, and how many were checked in Python. The next file is read and
    split while DuckDB checks one."""
    con.execute(LINES_TABLE)
    con.execute(CHECKED_TABLE)
    lines = 0
    with ThreadPoolExecutor(1) as reader:
        ahead = [reader.submit(_lines_of, f) for f in files[:1]]
        for i, f in enumerate(files):
            chunk = ahead.pop(0).result()
            if i + 1 < len(files):
                ahead.append(reader.submit(_lines_of, files[i + 1]))
            con.register("chunk", chunk)
            con.execute(CHECK, {"partition": f.partition, "file": f.path})
            con.unregister("chunk")
            lines += chunk.num_rows
            del chunk
    suspects = _check_suspects(con)
    con.execute(VALID)
    return lines, suspects


def _lines_of(f: ArchiveFile) -> pa.Table:
    raw = split_lines(_read_file(f.path, f.compressed))
    return pa.table({"raw": raw, "line_number": pa.array(np.arange(1, len(raw) + 1, dtype=np.int64))})


def _farm_tables(con: duckdb.DuckDBPyConnection, farms: dict[str, int]) -> Iterator[tuple[str, pa.Table]]:
    """Each farm's replay rows (``idx, date, record``, in log order), largest farm first: one query a
    farm, so that the first replay starts after one farm's sort, not the whole archive's."""
    for cluster in sorted(farms, key=lambda f: (-farms[f], f)):
        yield cluster, con.sql(REPLAY_ROWS, params={"cluster": cluster}).to_arrow_table()


def _replay(cluster: str, members: list[int], rows: pa.Table, window_ms: int) -> list[WindowState]:
    data = zip(
        rows.column("idx").to_pylist(),
        rows.column("date").to_pylist(),
        rows.column("record").to_pylist(),
        strict=True,
    )
    return list(replay_farm(cluster, members, data, window_ms, accepted=True))


def _windows_table(states: list[WindowState]) -> pa.Table:
    return pa.table(
        {
            "cluster": pa.array([s.cluster for s in states], pa.string()),
            "window_start": pa.array([s.window_start for s in states], pa.int64()),
            "publisher": pa.array([s.publisher for s in states], pa.int32()),
            "publisher_score": pa.array([s.publisher_score for s in states], pa.int32()),
            "eligible": pa.array([s.eligible for s in states], pa.int32()),
            "members": pa.array([s.members for s in states], pa.int32()),
            "changes": pa.array([s.changes for s in states], pa.int32()),
            "records": pa.array([s.records for s in states], pa.int32()),
            "log_time": pa.array([s.log_time for s in states], pa.int64()),
            "last_index": pa.array([s.last_index for s in states], pa.int64()),
            "lease_destinations": pa.array([[x.destination for x in s.leases] for s in states]),
            "lease_weights": pa.array([[x.weight for x in s.leases] for s in states], pa.list_(pa.int32())),
        }
    )


def _own_cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def _file_rejects(listing: Listing) -> pa.Table:
    rejects = listing.rejects
    return pa.table(
        {
            "partition": pa.array([r.partition for r in rejects], pa.string()),
            "file": pa.array([r.path for r in rejects], pa.string()),
            "line_number": pa.array([None] * len(rejects), pa.int64()),
            "cluster": pa.array([None] * len(rejects), pa.string()),
            "index": pa.array([None] * len(rejects), pa.int64()),
            "kind": pa.array([r.kind for r in rejects], pa.string()),
            "reason": pa.array([r.reason for r in rejects], pa.string()),
            "line": pa.array([None] * len(rejects), pa.string()),
            "lines_read": pa.array([r.lines_read for r in rejects], pa.int64()),
            "bytes_read": pa.array([r.bytes_read for r in rejects], pa.int64()),
        }
    )


class _Steps:
    def __init__(self, verbose: bool) -> None:
        self.times: dict[str, float] = {}
        self.verbose = verbose

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        yield
        self.times[f"{name}_s"] = time.monotonic() - started
        if self.verbose:
            print(f"duckdb {name}: {self.times[f'{name}_s']:.1f} s", file=sys.stderr, flush=True)


def run_duckdb(
    archive: Path, out: Path, jobs: int, window_ms: int = WINDOW_MS, verbose: bool = True
) -> dict[str, Any]:
    """The pipeline's four tables for ``archive`` under ``out`` (replaced), and the figures."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    started = time.monotonic()
    cpu_before = _own_cpu()
    steps = _Steps(verbose)
    # a pool of clean processes (forkserver): forking this one while DuckDB's threads run is unsafe
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["garlicfarm.pipeline.replay"])
    pool = ProcessPoolExecutor(jobs, mp_context=context)
    con = duckdb.connect()
    try:
        con.execute(f"SET temp_directory = '{out / 'duckdb.tmp'}'")
        con.execute("SET preserve_insertion_order = false")
        con.execute("SET enable_progress_bar = false")
        listing = list_local(str(archive))
        assert listing is not None
        with steps.step("read_check"):
            lines, suspects = read_and_check(con, listing.files)
        counts = con.execute(
            "SELECT (SELECT count(*) FROM valid), (SELECT count(*) FROM checked WHERE NOT ok)"
        ).fetchone()
        assert counts is not None
        valid, rejected = int(counts[0]), int(counts[1])
        per_farm = con.execute("SELECT cluster, count(*), list(DISTINCT id) FROM valid GROUP BY cluster")
        farms: dict[str, list[int]] = {}
        sizes: dict[str, int] = {}
        for cluster, size, ids in per_farm.fetchall():
            farms[str(cluster)], sizes[str(cluster)] = sorted(int(i) for i in ids), int(size)
        with steps.step("replay"):
            states: list[WindowState] = []
            # one farm per task on ``jobs`` processes, as Spark runs one farm per task on its cores;
            # at most 2 * jobs farms in flight, so memory stays bounded
            pending: list[Future[list[WindowState]]] = []
            for cluster, rows in _farm_tables(con, sizes):
                pending.append(pool.submit(_replay, cluster, farms[cluster], rows, window_ms))
                while len(pending) >= 2 * jobs:
                    states.extend(pending.pop(0).result())
            for future in pending:
                states.extend(future.result())
        with steps.step("write_timeline_weights"):
            con.register("windows", _windows_table(states))
            con.execute(TIMELINE, {"window": window_ms})
            con.execute(WRITE_TIMELINE, {"out": str(out / "publisher_timeline")})
            con.execute(WRITE_WEIGHTS, {"out": str(out / "destination_weights")})
        with steps.step("member_health"):
            con.execute(HEALTH, {"interval": INTERVAL_MS, "out": str(out / "member_health")})
        with steps.step("rejects"):
            (out / "rejects").mkdir()
            con.register("file_rejects", _file_rejects(listing))
            con.execute(WRITE_REJECTS, {"out": str(out / "rejects" / "rejects.parquet")})
        health_rows = con.execute(
            f"SELECT count(*) FROM read_parquet('{out / 'member_health'}/*/*/*.parquet')"
        ).fetchone()
    finally:
        con.close()
        pool.shutdown()
    shutil.rmtree(out / "duckdb.tmp", ignore_errors=True)
    return {
        **steps.times,
        "total_s": time.monotonic() - started,
        # this process (DuckDB's threads included), not the replay pool: the bench measures the tree
        "main_process_cpu_s": _own_cpu() - cpu_before,
        "lines_read": lines,
        "valid_records": valid,
        "rejected_lines": rejected,
        "lines_checked_in_python": suspects,
        "farms": len(farms),
        "windows": len(states),
        "lease_rows": sum(len(s.leases) for s in states),
        "member_health_rows": int(health_rows[0]) if health_rows else 0,
        "replay_jobs": jobs,
        "duckdb_threads": os.cpu_count(),
    }
