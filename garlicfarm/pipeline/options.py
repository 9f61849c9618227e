"""The pipeline's options, shared by ``garlicfarm pipeline`` and the ``spark-submit`` entry point."""

from __future__ import annotations

import argparse
import re

import attrs

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
FORMATS = ("parquet", "csv")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class PipelineError(Exception):
    """A one-line error for the user (bad option, missing archive); the command exits 1."""


@attrs.frozen
class PipelineOptions:
    archive: str
    out: str
    window_ms: int = 300_000
    #: the reporting interval gaps are measured against; None: each member's median gap
    interval_ms: int | None = 60_000
    #: farms drawn one by one in the report (the tables hold them all)
    report_farms: int = 12
    #: the tables' format: parquet or csv (with a header line)
    format: str = "parquet"
    #: where the incremental runs' checkpoints live; None: ``OUT/_checkpoints`` (local ``--out`` only)
    checkpoints: str | None = None
    #: replay every farm's whole history, whatever the checkpoints say
    full: bool = False


def parse_duration(text: str) -> int:
    """``"5m"``, ``"300s"``, ``"1h"``, ``"1d"``, ``"500ms"`` or plain seconds, in milliseconds."""
    match = _DURATION.match(text)
    if match is None or int(match.group(1)) <= 0:
        raise PipelineError(f"not a duration: {text!r} (say 300, 300s, 5m, 1h or 1d)")
    return int(match.group(1)) * _UNIT_MS[match.group(2) or "s"]


def parse_interval(text: str) -> int | None:
    return None if text.strip() == "auto" else parse_duration(text)


def add_pipeline_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--archive",
        required=True,
        metavar="URI",
        help="the telemetry archive: a directory of date=YYYY-MM-DD/node-<id>.jsonl, local or any "
        "Hadoop-compatible URI (hdfs://, s3a://, file://)",
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="URI",
        help="where the Parquet tables and report.html go (replaced if there)",
    )
    parser.add_argument(
        "--master",
        metavar="URL",
        help="Spark master: local[*] (the default outside spark-submit), local[2], spark://host:7077, ...",
    )
    parser.add_argument(
        "--window", default="5m", metavar="DURATION", help="publisher timeline window (default 5m)"
    )
    parser.add_argument(
        "--interval",
        default="60s",
        metavar="DURATION|auto",
        help="the members' reporting interval, for counting gaps: a duration, or 'auto' for each "
        "member's median gap (default 60s)",
    )
    parser.add_argument(
        "--report-farms",
        type=int,
        default=12,
        metavar="N",
        help="farms whose timeline the report draws (default 12; the tables hold every farm)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="parquet",
        help="the tables' format: parquet (default) or csv (with a header line); partitioned by farm "
        "and day alike",
    )
    parser.add_argument(
        "--checkpoints",
        metavar="DIR",
        help="where each farm's replay is checkpointed at the end of each day, with the archive's "
        "fingerprints, for incremental runs (default OUT/_checkpoints; local directories only)",
    )
    parser.add_argument(
        "--full",
        "--no-incremental",
        action="store_true",
        help="replay every farm's whole history and read the whole archive again, whatever the "
        "checkpoints say (they are written anew)",
    )
    parser.add_argument(
        "--driver-memory",
        default="4g",
        metavar="SIZE",
        help="driver JVM heap when this command starts Spark itself (default 4g; under spark-submit, "
        "use its own --driver-memory)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark configuration property (repeatable)",
    )


def options_from(args: argparse.Namespace) -> PipelineOptions:
    if args.report_farms < 0:
        raise PipelineError("--report-farms must be 0 or more")
    return PipelineOptions(
        archive=args.archive,
        out=args.out,
        window_ms=parse_duration(args.window),
        interval_ms=parse_interval(args.interval),
        report_farms=args.report_farms,
        format=args.format,
        checkpoints=args.checkpoints,
        full=args.full,
    )


def spark_conf_from(args: argparse.Namespace) -> dict[str, str]:
    conf: dict[str, str] = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PipelineError(f"--conf wants KEY=VALUE, not {item!r}")
        conf[key.strip()] = value
    return conf
