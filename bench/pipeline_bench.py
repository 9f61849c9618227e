"""The telemetry pipeline on Spark against the same aggregations in DuckDB, on the same archive files.

    python -m bench.pipeline_bench --archive /tmp/gf-bench/archive [--generate 100x10x8] [--json OUT]

``--generate FxMxD`` first writes an archive with ``garlicfarm synth`` (F farms x M members x D days at
the real 60 s interval: 100x10x8 gives ~11.2 million status records, ~5.5 GB) unless it exists.

Spark side: ``garlicfarm pipeline --master local[*]``, the whole job as a user runs it (wall time from
the command's start, JVM start-up included): read and check every line with the schema's own code,
rejects, the publisher timeline and Meta LS2 weights (each farm's log replayed through ``FarmState``),
member health, report.html.

DuckDB side, on the same files, one process, DuckDB's own threads for the SQL:

1. *read + check*: every line as text; a line is valid when it is JSON and its fields have the
   schema's types and ranges (envelope index/recorded, record cluster/date/id/version, the router's
   numbers and netStatus, meta.publishConfig, destinations a list, at most 64 KiB). The schema's
   nesting-depth limit and its checks inside each destination are *not* expressed in SQL: such lines
   count as valid here (then FarmState rejects them in step 3). Lines that are not UTF-8 are skipped by
   DuckDB's reader (counted as rejects by difference only if you count lines yourself).
2. *member health*: the same per farm/member/day aggregation as ``member_health`` (copies removed,
   gaps and missed reports against the 60 s interval, restarts, unhealthy reports, max uptime, exact
   p50/p90/p99 of bandwidth and tunnels), written to Parquet.
3. *publisher timeline + weights*: the valid records streamed out of DuckDB in (farm, index) order,
   de-duplicated, and replayed through the very same ``replay_farm`` (FarmState) the Spark job runs,
   one farm per task in ``--replay-jobs`` Python processes (default: the cores, as Spark's local[*]);
   windows and weights written to Parquet.

Both sides print their row counts, so the outputs can be compared.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import psutil
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from garlicfarm.pipeline.replay import WindowState, replay_farm

WINDOW_MS = 300_000
INTERVAL_MS = 60_000
MAX_RECORD_BYTES = 64 * 1024

READ = """
CREATE TEMP TABLE parsed AS
WITH raw AS (
    SELECT line FROM read_csv($files, columns = {'line': 'VARCHAR'}, header = false, delim = '\\x01',
                              quote = '', escape = '', ignore_errors = true, strict_mode = false,
                              max_line_size = 8000000)
), j AS (
    SELECT CASE WHEN json_valid(line) THEN line::JSON END AS j FROM raw
), r AS (
    SELECT j, j -> '$.record' AS rec FROM j
)
SELECT
    rec ->> '$.cluster' AS cluster,
    TRY_CAST(j ->> '$.index' AS BIGINT) AS idx,
    TRY_CAST(rec ->> '$.date' AS BIGINT) AS date,
    TRY_CAST(rec ->> '$.id' AS BIGINT) AS id,
    coalesce(TRY_CAST(rec ->> '$.router.uptime' AS BIGINT), 0) AS uptime,
    NOT starts_with(coalesce(rec ->> '$.router.netStatus', 'UNKNOWN'), 'ERROR') AS healthy,
    coalesce(TRY_CAST(rec ->> '$.router.participatingTunnels' AS BIGINT), 0) AS tunnels,
    coalesce(TRY_CAST(rec ->> '$.router.bandwidthCurrent' AS BIGINT), 0) AS bandwidth,
    rec::VARCHAR AS record,
    j IS NOT NULL
        AND json_type(j, '$.index') = 'UBIGINT' AND TRY_CAST(j ->> '$.index' AS BIGINT) >= 1
        AND json_type(j, '$.recorded') = 'UBIGINT'
        AND json_type(rec) = 'OBJECT'
        AND json_type(rec, '$.cluster') = 'VARCHAR'
        AND json_type(rec, '$.date') = 'UBIGINT'
        AND json_type(rec, '$.id') = 'UBIGINT' AND TRY_CAST(rec ->> '$.id' AS BIGINT) BETWEEN 1 AND 2147483647
        AND coalesce(rec ->> '$.version', '1') = '1'
        AND coalesce(json_type(rec, '$.router.netStatus'), 'VARCHAR') = 'VARCHAR'
        AND coalesce(json_type(rec, '$.router.uptime'), 'UBIGINT') = 'UBIGINT'
        AND coalesce(json_type(rec, '$.router.jobLag'), 'UBIGINT') = 'UBIGINT'
        AND coalesce(json_type(rec, '$.router.participatingTunnels'), 'UBIGINT') = 'UBIGINT'
        AND coalesce(json_type(rec, '$.router.bandwidthCurrent'), 'UBIGINT') = 'UBIGINT'
        AND coalesce(rec ->> '$.meta.publishConfig', 'auto') IN ('on', 'off', 'auto')
        AND coalesce(json_type(rec, '$.destinations'), 'ARRAY') = 'ARRAY'
        AND strlen(rec::VARCHAR) <= $max_bytes AS ok
FROM r
"""

HEALTH = """
COPY (
    WITH v AS (
        SELECT cluster, id, date, idx, uptime, healthy, tunnels, bandwidth,
               date - lag(date) OVER w AS gap_ms, uptime < lag(uptime) OVER w AS restart
        FROM parsed WHERE ok
        WINDOW w AS (PARTITION BY cluster, id ORDER BY date, idx)
    ), u AS (
        SELECT *, CAST(make_timestamp(date * 1000) AS DATE) AS day,
               coalesce(gap_ms > $late, false) AS late
        FROM v WHERE gap_ms IS NULL OR gap_ms > 0
    )
    SELECT cluster, id, day, count(*) AS reports, max(uptime) AS uptime_max_ms,
           sum(late::INT)::BIGINT AS gaps,
           sum(CASE WHEN late THEN round(gap_ms / $interval) - 1 ELSE 0 END)::BIGINT AS missed_reports,
           coalesce(max(gap_ms), 0) / 1000 AS longest_gap_s,
           sum((NOT healthy)::INT)::BIGINT AS unhealthy_reports,
           sum(coalesce(restart, false)::INT)::BIGINT AS restarts,
           quantile_disc(bandwidth, [0.5, 0.9, 0.99]) AS bandwidth_p,
           quantile_disc(tunnels, [0.5, 0.9, 0.99]) AS tunnels_p
    FROM u GROUP BY ALL
) TO $out (FORMAT parquet)
"""

REPLAY_ROWS = """
SELECT cluster, idx, date, id, record FROM parsed WHERE ok
QUALIFY row_number() OVER (PARTITION BY cluster, id, date ORDER BY idx) = 1
ORDER BY cluster, idx
"""


def _farm_rows(
    con: duckdb.DuckDBPyConnection,
) -> Iterator[tuple[str, list[int], list[tuple[int, int, bytes]]]]:
    """(farm, member ids, (index, date, record bytes) in log order) for each farm, streamed."""
    reader = con.sql(REPLAY_ROWS).to_arrow_reader(200_000)
    current: str | None = None
    members: set[int] = set()
    rows: list[tuple[int, int, bytes]] = []
    for batch in reader:
        columns = batch.to_pydict()
        for cluster, idx, date, member, record in zip(
            columns["cluster"], columns["idx"], columns["date"], columns["id"], columns["record"], strict=True
        ):
            if cluster != current:
                if current is not None:
                    yield current, sorted(members), rows
                current, members, rows = cluster, set(), []
            members.add(member)
            rows.append((idx, date, record.encode()))
    if current is not None:
        yield current, sorted(members), rows


def _windows_table(states: list[WindowState]) -> pa.Table:
    return pa.table(
        {
            "cluster": [s.cluster for s in states],
            "window_start": [s.window_start for s in states],
            "publisher": [s.publisher for s in states],
            "eligible": [s.eligible for s in states],
            "changes": [s.changes for s in states],
            "lease_destinations": [[x.destination for x in s.leases] for s in states],
            "lease_weights": [[x.weight for x in s.leases] for s in states],
        }
    )


def _own_cpu() -> float:
    """CPU seconds of this process and of its children that have ended (the replay pool's)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _progress(step: str, seconds: float) -> None:
    print(f"duckdb {step}: {seconds:.1f} s", file=sys.stderr, flush=True)


def _replay(cluster: str, members: list[int], rows: list[tuple[int, int, bytes]]) -> list[WindowState]:
    return list(replay_farm(cluster, members, rows, WINDOW_MS))


def run_duckdb(archive: Path, out: Path, jobs: int) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    con.execute(f"SET temp_directory = '{out / 'duckdb.tmp'}'")
    times: dict[str, float] = {}
    started = time.monotonic()
    cpu_before = _own_cpu()
    con.execute(READ, {"files": str(archive / "*" / "*.jsonl"), "max_bytes": MAX_RECORD_BYTES})
    times["read_check_s"] = time.monotonic() - started
    _progress("read_check", times["read_check_s"])
    counts = con.execute("SELECT count(*), count(*) FILTER (WHERE ok) FROM parsed").fetchone()
    assert counts is not None
    lines, valid = int(counts[0]), int(counts[1])
    step = time.monotonic()
    health_out = str(out / "member_health.parquet")
    con.execute(HEALTH, {"late": INTERVAL_MS * 1.5, "interval": float(INTERVAL_MS), "out": health_out})
    times["member_health_s"] = time.monotonic() - step
    _progress("member_health", times["member_health_s"])
    health_rows = pq.read_metadata(health_out).num_rows
    step = time.monotonic()
    states: list[WindowState] = []
    farms = 0
    # One farm per task on ``jobs`` processes, as Spark runs one farm per task on its cores; at most
    # 2 * jobs farms in flight, so memory stays bounded.
    with ProcessPoolExecutor(jobs) as pool:
        pending: list[Future[list[WindowState]]] = []
        for cluster, members, rows in _farm_rows(con):
            pending.append(pool.submit(_replay, cluster, members, rows))
            farms += 1
            while len(pending) >= 2 * jobs:
                states.extend(pending.pop(0).result())
        for future in pending:
            states.extend(future.result())
    pq.write_table(_windows_table(states), out / "publisher_windows.parquet")
    times["replay_s"] = time.monotonic() - step
    times["total_s"] = time.monotonic() - started
    times["cpu_s"] = _own_cpu() - cpu_before
    return {
        **times,
        "lines_read": lines,
        "valid_records": valid,
        "farms": farms,
        "windows": len(states),
        "lease_rows": sum(len(s.leases) for s in states),
        "member_health_rows": health_rows,
        "replay_jobs": jobs,
    }


def _tree_cpu(root: psutil.Process, seen: dict[int, float]) -> None:
    """CPU seconds of ``root`` and its descendants so far, kept per process (the last reading)."""
    for proc in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            seen[proc.pid] = times.user + times.system


def run_spark(archive: Path, out: Path, master: str) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "garlicfarm",
        "pipeline",
        "--archive",
        str(archive),
        "--out",
        str(out),
        "--master",
        master,
    ]
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    cpu: dict[int, float] = {}
    with (
        (out / "pipeline.log").open("w") as err,
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True) as proc,
    ):
        # the JVM and the Python workers are descendants: read their CPU time until they end
        root = psutil.Process(proc.pid)
        while proc.poll() is None:
            _tree_cpu(root, cpu)
            time.sleep(0.1)
        stdout = proc.stdout.read() if proc.stdout else ""
    seconds = time.monotonic() - started
    if proc.returncode:
        raise SystemExit(f"garlicfarm pipeline failed ({proc.returncode}): see {out / 'pipeline.log'}")
    tables = {
        name: pq.ParquetDataset(out / name).read(columns=[]).num_rows
        for name in ("publisher_timeline", "destination_weights", "member_health", "rejects")
    }
    log = (out / "pipeline.log").read_text()
    tasks = [float(t) for t in re.findall(r"replay task: \d+ farms, \d+ records in ([0-9.]+) s", log)]
    stages = dict(re.findall(r"garlicfarm\.pipeline\.job: (.+?): done in ([0-9.]+) s", log))
    return {
        "total_s": seconds,
        "cpu_s": sum(cpu.values()),
        "stages_s": {k: float(v) for k, v in stages.items()},
        "replay_tasks_s": tasks,
        "replay_longest_over_mean": max(tasks) / (sum(tasks) / len(tasks)) if tasks else None,
        "summary": stdout.strip().splitlines(),
        "rows": tables,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", type=Path, default=Path("/tmp/gf-bench/archive"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/gf-bench/out"))
    parser.add_argument("--generate", metavar="FxMxD", help="write the archive first (e.g. 100x10x8)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument(
        "--replay-jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="processes for the DuckDB side's replay (default: the cores, as Spark's local[*])",
    )
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--skip-duckdb", action="store_true")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    if args.generate and not args.archive.exists():
        farms, members, days = args.generate.lower().split("x")
        synth = [sys.executable, "-m", "garlicfarm", "synth", "--out", str(args.archive)]
        subprocess.run([*synth, "--farms", farms, "--members", members, "--days", days], check=True)
    if not args.archive.is_dir():
        parser.error(f"no archive at {args.archive} (use --generate 100x10x8)")
    figures: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}",
        "archive": str(args.archive),
        "archive_bytes": sum(p.stat().st_size for p in args.archive.rglob("*.jsonl")),
    }
    if not args.skip_spark:
        print("spark ...", file=sys.stderr, flush=True)
        figures["spark"] = run_spark(args.archive, args.out / "spark", args.master)
        print(json.dumps(figures["spark"]), file=sys.stderr, flush=True)
    if not args.skip_duckdb:
        print("duckdb ...", file=sys.stderr, flush=True)
        figures["duckdb"] = run_duckdb(args.archive, args.out / "duckdb", args.replay_jobs)
        print(json.dumps(figures["duckdb"]), file=sys.stderr, flush=True)
    if "spark" in figures and "duckdb" in figures:
        figures["ratio_spark_over_duckdb"] = figures["spark"]["total_s"] / figures["duckdb"]["total_s"]
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
