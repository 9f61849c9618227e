"""The telemetry pipeline on Spark against a fair DuckDB peer, on the same archive files; then every
output table compared row by row.

    python -m bench.pipeline_bench --archive /tmp/gf-bench/archive [--generate 10x10x8] [--json OUT]

``--generate FxMxD`` first writes an archive with ``garlicfarm synth`` (F farms x M members x D days at
the real 60 s interval: 10x10x8 gives ~1.12 million lines, ~1.06 GB) unless it exists.

Spark side: ``garlicfarm pipeline --master local[*]``, the whole job as a user runs it (wall time from
the command's start, JVM start-up included): read and check every line (the JVM vouches for canonical
lines, the schema's own Python code checks the rest), rejects, the publisher timeline and Meta LS2
weights (each farm's log replayed through ``FarmState``), member health, report.html. Its log has a
line per stage with its time.

DuckDB side (bench/pipeline_duckdb.py, which says exactly what each step does): one process, DuckDB's
own threads for the SQL. *read_check*: one ``json_transform`` per line into a typed STRUCT and the same
checks as the JVM applies (the struct written back must give the line's text; the schema's ranges), the
rest through the schema's own Python checker, so both sides accept exactly the same records;
*replay*: the same ``replay_farm`` on records read as already checked (``parse_accepted``, as Spark),
one farm per task in ``--replay-jobs`` processes (default: the cores, as Spark's local[*]);
*write_timeline_weights*, *member_health* (the same aggregation in SQL), *rejects*: Parquet tables laid
out as Spark's (``cluster=/day=`` partitions).

Then bench/pipeline_compare.py reads both outputs and compares member health, publisher timeline,
destination weights and rejects row by row: on any difference it prints the first differing rows of
each table, and this command exits 1. CPU time, both sides: the process tree (sampled every 0.1 s).
The figures (JSON) go to standard output, the progress and the comparison to standard error.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from bench.pipeline_compare import compare_outputs
from bench.pipeline_duckdb import run_duckdb
from bench.proctree import run_measured, tree_cpu


class TreeCpu:
    """CPU seconds of this process and all its descendants (the replay pool), sampled every 0.1 s
    in a thread while it runs, so that processes which end are counted too."""

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._root = psutil.Process()
        tree_cpu(self._root, self.seen)
        self.start = sum(self.seen.values())

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            tree_cpu(self._root, self.seen)

    def __enter__(self) -> TreeCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        tree_cpu(self._root, self.seen)

    @property
    def seconds(self) -> float:
        return sum(self.seen.values()) - self.start


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
    seconds, cpu_seconds, stdout = run_measured(command, out / "pipeline.log")
    tables = {
        name: pq.ParquetDataset(out / name).read(columns=[]).num_rows
        for name in ("publisher_timeline", "destination_weights", "member_health", "rejects")
    }
    log = (out / "pipeline.log").read_text()
    tasks = [float(t) for t in re.findall(r"replay task: \d+ farms, \d+ records in ([0-9.]+) s", log)]
    stages = dict(re.findall(r"garlicfarm\.pipeline\.job: (.+?): done in ([0-9.]+) s", log))
    return {
        "total_s": seconds,
        "cpu_s": cpu_seconds,
        "stages_s": {k: float(v) for k, v in stages.items()},
        "replay_tasks_s": tasks,
        "replay_longest_over_mean": max(tasks) / (sum(tasks) / len(tasks)) if tasks else None,
        "summary": stdout.strip().splitlines(),
        "rows": tables,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.epilog = "\n\n".join(__doc__.split("\n\n")[1:])
    parser.add_argument(
        "--archive",
        type=Path,
        default=Path("/tmp/gf-bench/archive"),
        help="the archive both sides read (default /tmp/gf-bench/archive)",
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/gf-bench/out"), help="spark/ and duckdb/ here")
    parser.add_argument("--generate", metavar="FxMxD", help="write the archive first (e.g. 10x10x8)")
    parser.add_argument("--master", default="local[*]", help="the Spark side's master (default local[*])")
    parser.add_argument(
        "--replay-jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="processes for the DuckDB side's replay (default: the cores, as Spark's local[*])",
    )
    parser.add_argument("--skip-spark", action="store_true", help="keep --out/spark as it is")
    parser.add_argument("--skip-duckdb", action="store_true", help="keep --out/duckdb as it is")
    parser.add_argument("--no-compare", action="store_true", help="do not compare the outputs")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    if args.generate and not args.archive.exists():
        farms, members, days = args.generate.lower().split("x")
        synth = [sys.executable, "-m", "garlicfarm", "synth", "--out", str(args.archive)]
        subprocess.run([*synth, "--farms", farms, "--members", members, "--days", days], check=True)
    if not args.archive.is_dir():
        parser.error(f"no archive at {args.archive} (use --generate 10x10x8)")
    figures: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}",
        "archive": str(args.archive),
        "archive_bytes": sum(p.stat().st_size for p in args.archive.rglob("*.jsonl*")),
    }
    if not args.skip_spark:
        print("spark ...", file=sys.stderr, flush=True)
        figures["spark"] = run_spark(args.archive, args.out / "spark", args.master)
        print(json.dumps(figures["spark"]), file=sys.stderr, flush=True)
    if not args.skip_duckdb:
        print("duckdb ...", file=sys.stderr, flush=True)
        with TreeCpu() as cpu:
            started = time.monotonic()
            figures["duckdb"] = run_duckdb(args.archive, args.out / "duckdb", args.replay_jobs)
            figures["duckdb"]["total_s"] = time.monotonic() - started
        figures["duckdb"]["cpu_s"] = cpu.seconds
        print(json.dumps(figures["duckdb"]), file=sys.stderr, flush=True)
    if "spark" in figures and "duckdb" in figures:
        figures["ratio_spark_over_duckdb"] = figures["spark"]["total_s"] / figures["duckdb"]["total_s"]
        figures["cpu_ratio_spark_over_duckdb"] = figures["spark"]["cpu_s"] / figures["duckdb"]["cpu_s"]
    same = True
    if not args.no_compare:
        diffs = compare_outputs(args.out / "spark", args.out / "duckdb")
        same = all(d.same for d in diffs)
        for diff in diffs:
            for line in diff.describe(("spark", "duckdb")):
                print(line, file=sys.stderr)
        figures["comparison"] = {
            d.table: {"rows": list(d.rows), "only_spark": d.only_left, "only_duckdb": d.only_right}
            if d.error is None
            else {"error": d.error}
            for d in diffs
        }
        figures["identical"] = same
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
