"""``garlicfarm pipeline`` (the telemetry archive on Spark) and ``garlicfarm synth`` (archives to test it).

PySpark is imported only when ``pipeline`` runs, so the rest of the command works without the
``spark`` extra.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import sys
import time
from pathlib import Path
from typing import TextIO

from garlicfarm.pipeline.intake import list_local
from garlicfarm.pipeline.options import PipelineError, add_pipeline_arguments, options_from, spark_conf_from
from garlicfarm.pipeline.synth import BAD_SHARE, SynthSettings, generate


def run_pipeline(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    """The job; its exit status: 0, or 3 when archive files were quarantined (docs/pipeline.md)."""
    options_from(args)  # bad options, a missing or empty local archive: said before PySpark loads
    spark_conf_from(args)
    listing = list_local(args.archive)
    try:
        from garlicfarm.pipeline.job import configure_logging, run_from_args
    except ImportError as e:
        raise PipelineError(
            f"PySpark is not installed ({e.name}): pip install 'garlicfarm[spark]' (and Java 17+)"
        ) from None
    configure_logging()
    return run_from_args(args, stdout, listing).exit_status


def run_synth(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    for name in ("farms", "members", "days"):
        if getattr(args, name) < 1:
            raise PipelineError(f"--{name} must be at least 1")
    try:
        start = datetime.date.fromisoformat(args.start)
    except ValueError:
        raise PipelineError(f"--start: not a date (YYYY-MM-DD): {args.start!r}") from None
    if (24 * 3600) % args.interval or not 1 <= args.interval <= 3600:
        raise PipelineError("--interval must divide a day and be from 1 to 3600 seconds")
    if not 0 <= args.bad_share <= 1:
        raise PipelineError("--bad-share must be from 0 to 1")
    settings = SynthSettings(
        farms=args.farms,
        members=args.members,
        days=args.days,
        interval_s=args.interval,
        seed=args.seed,
        start=start,
        node=args.node,
        bad_share=args.bad_share,
    )
    expected = args.farms * args.members * args.days * (24 * 3600 // args.interval)
    stdout.write(f"about {expected:,} records into {args.out}\n")
    stdout.flush()
    started = time.monotonic()

    def progress(done: int, total: int) -> None:
        elapsed = time.monotonic() - started
        sys.stderr.write(f"synth: day {done}/{total} written ({elapsed:.0f} s)\n")

    logging.getLogger("garlicfarm.pipeline.synth").setLevel(logging.WARNING)
    result = generate(settings, Path(args.out), progress)
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(result.bad_kinds.items())) or "none"
    stdout.write(
        f"{result.records:,} status records and {result.bad:,} bad lines ({kinds}) in {result.files} files, "
        f"{result.bytes / 1e6:,.1f} MB, {time.monotonic() - started:.1f} s\n"
    )


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pipeline = sub.add_parser(
        "pipeline",
        help="analyse a telemetry archive on Spark: publisher timeline, Meta LS2 weights, member health",
        description="Read a telemetry archive (date=YYYY-MM-DD/node-<id>.jsonl) and write, under --out, the "
        "tables (Parquet or CSV, by farm and day) publisher_timeline/, destination_weights/, "
        "member_health/, rejects/ and report.html. "
        "The publisher is chosen by replaying each farm's records through the live service's own FarmState. "
        "Bad lines go to rejects/ with their reason; they never stop the job. Corrupt or unreadable "
        "archive files are quarantined (listed in rejects/, exit status 3) and the rest processed. Also "
        "runnable as 'spark-submit garlicfarm/pipeline/job.py ...'. See docs/pipeline.md.",
    )
    add_pipeline_arguments(pipeline)
    pipeline.set_defaults(run=run_pipeline)

    synth = sub.add_parser(
        "synth",
        help="generate a realistic telemetry archive (for tests and benchmarks)",
        description="Write a telemetry archive in the farm's own layout: FARMS farms of MEMBERS members "
        "reporting every INTERVAL seconds for DAYS days, with outages (and router restarts), stale reports "
        "delivered late, router error states, a daily load curve, and a share of bad lines (cut short, "
        "not JSON, wrong types, not UTF-8, unknown schema version, too deep, too large). Deterministic "
        "for a --seed. About 900 bytes a record.",
    )
    synth.add_argument("--out", required=True, metavar="DIR", help="the archive directory (created)")
    synth.add_argument("--farms", type=int, required=True, metavar="F", help="number of farms")
    synth.add_argument("--members", type=int, required=True, metavar="M", help="members per farm")
    synth.add_argument("--days", type=int, required=True, metavar="D", help="days of reports")
    synth.add_argument(
        "--interval", type=int, default=60, metavar="SECONDS", help="reporting interval (default 60)"
    )
    synth.add_argument("--seed", type=int, default=0, help="PRNG seed (default 0)")
    synth.add_argument(
        "--start", default="2026-01-01", metavar="YYYY-MM-DD", help="first day, UTC (default 2026-01-01)"
    )
    synth.add_argument(
        "--node", type=int, default=1, help="the archiving node's id in the file names (default 1)"
    )
    synth.add_argument(
        "--bad-share",
        type=float,
        default=BAD_SHARE,
        metavar="FRACTION",
        help=f"share of lines written broken (default {BAD_SHARE})",
    )
    synth.set_defaults(run=run_synth)
