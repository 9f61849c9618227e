"""The pipeline job: archive in, tables (tables.py) and report.html out. Also a ``spark-submit`` application::

    spark-submit --py-files garlicfarm.zip garlicfarm/pipeline/job.py --archive URI --out URI
    python -m garlicfarm.pipeline --archive DIR --out DIR      # starts a local Spark itself

Stages (each one log line with its time; Spark's console progress bar shows the tasks of each):

0. list the archive's files and check the compressed ones; quarantine the bad (intake.py);
1. read every line and check it in the JVM against the schema (native.py); staged as Parquet;
2. the lines the JVM could not vouch for, checked by the schema's own Python code (records.py);
3. write the rejects, with their line numbers;
4. replay each farm's log through ``FarmState``: publisher timeline and Meta LS2 weights (replay.py);
5. member health, which joins the timeline written in 4;
6. the report, from the tables just written.

Exit status: 0; 1 on an error (one line on stderr); :data:`QUARANTINE_STATUS` when files were set aside.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import logging
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TextIO

import attrs
from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the usual name
from pyspark.sql.types import StructType

from garlicfarm.pipeline import report
from garlicfarm.pipeline.files import QUARANTINED, Listing
from garlicfarm.pipeline.health import member_health
from garlicfarm.pipeline.intake import checked_listing, list_local
from garlicfarm.pipeline.options import (
    PipelineError,
    PipelineOptions,
    add_pipeline_arguments,
    options_from,
    spark_conf_from,
)
from garlicfarm.pipeline.records import (
    PARSED_SCHEMA,
    jvm_checked,
    python_checked,
    vouched,
    with_line_numbers,
)
from garlicfarm.pipeline.replay import FarmSize, replay_farms, timeline_table, weights_table
from garlicfarm.pipeline.session import REQUIRED_CONF, build_session
from garlicfarm.pipeline.tables import (
    REJECT_COLUMNS,
    TABLES,
    file_rejects,
    is_local,
    local_path,
    read_table,
    remove,
    table_uri,
    write_table,
    write_text,
)

log = logging.getLogger(__name__)

#: the exit status of a job that ran but set whole files aside (see the rejects of kind "file")
QUARANTINE_STATUS = 3

#: the checked lines while the job runs (a directory beside the tables)
STAGING = "_checked_lines"
MAX_REJECT_REASONS = 10


@attrs.frozen
class PipelineSummary:
    lines: int
    records: int  #: valid status records, copies from several nodes included
    unique_records: int
    rejected: int
    farms: int
    members: int
    windows: int
    publisher_changes: int
    seconds: float
    reject_kinds: dict[str, int]
    listing: Listing = Listing((), ())

    @property
    def exit_status(self) -> int:
        """0, or :data:`QUARANTINE_STATUS` when any archive file was set aside."""
        return QUARANTINE_STATUS if self.listing.quarantined else 0

    def describe(self) -> list[str]:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.reject_kinds.items())) or "none"
        quarantined = (
            f" (quarantined, see rejects of kind {QUARANTINED!r}: "
            + ", ".join(r.path for r in self.listing.quarantined)
            + ")"
            if self.listing.quarantined
            else ""
        )
        return [
            f"{self.listing.describe()}{quarantined}",
            f"{self.lines:,} lines: {self.records:,} valid status records ({self.unique_records:,} unique), "
            f"{self.rejected:,} rejected ({kinds})",
            f"{self.farms} farms, {self.members} members, {self.windows:,} windows, "
            f"{self.publisher_changes:,} publisher changes",
            f"done in {self.seconds:.1f} s",
        ]


@contextlib.contextmanager
def _stage(spark: SparkSession, name: str) -> Iterator[None]:
    """A named step: one log line when it is done, with its time, and its name on its jobs in the UI."""
    started = time.monotonic()
    spark.sparkContext.setJobDescription(f"garlicfarm: {name}")
    try:
        yield
    finally:
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
    log.info("%s: done in %.1f s", name, time.monotonic() - started)


def check_archive(uri: str) -> None:
    """Fail early, before Spark starts, on a local archive that is not there."""
    if is_local(uri) and not local_path(uri).is_dir():
        raise PipelineError(f"no archive directory at {uri}")


def run_pipeline(
    spark: SparkSession, options: PipelineOptions, listing: Listing | None = None
) -> PipelineSummary:
    """The job; ``listing``: the local archive's, if it was listed before Spark started."""
    started = time.monotonic()
    for key, value in REQUIRED_CONF.items():
        spark.conf.set(key, value)
    check_archive(options.archive)
    with _stage(spark, "listing the archive's files and checking the compressed ones"):
        listing = checked_listing(spark, options.archive, listing or list_local(options.archive))
    out = options.out
    staged = table_uri(out, STAGING)
    jvm_uri, python_uri = f"{staged}/jvm", f"{staged}/python"
    windows: DataFrame | None = None
    fmt = options.format
    schemas: dict[str, StructType] = {}
    try:
        try:
            with _stage(spark, "reading and checking the archive"):
                # once: every line, checked by the JVM, typed, as Parquet beside the tables (compact,
                # and each stage below reads only the columns it needs); removed at the end
                jvm_checked(spark, [f.path for f in listing.files]).write.mode("overwrite").parquet(jvm_uri)
        except AnalysisException as e:
            raise PipelineError(f"cannot read the archive at {options.archive}: {e.getMessage()}") from None
        with _stage(spark, "checking the lines the JVM could not vouch for with the schema's own code"):
            python_checked(spark.read.parquet(jvm_uri)).write.mode("overwrite").parquet(python_uri)
        parsed = vouched(spark.read.parquet(jvm_uri)).unionByName(
            spark.read.schema(PARSED_SCHEMA).parquet(python_uri)
        )
        per_farm = (
            parsed.groupBy("ok", "cluster")
            .agg(F.count(F.lit(1)).alias("count"), F.array_sort(F.collect_set("id")).alias("members"))
            .collect()
        )
        counts = {ok: sum(int(r["count"]) for r in per_farm if r["ok"] is ok) for ok in (True, False)}
        farms = {
            r["cluster"]: FarmSize(int(r["count"]), tuple(int(i) for i in r["members"]))
            for r in per_farm
            if r["ok"]
        }
        log.info(
            "%d valid status records from %d farms, %d rejected lines",
            counts.get(True, 0),
            len(farms),
            counts.get(False, 0),
        )
        with _stage(spark, "writing rejects"):
            rejects = parsed.where(~F.col("ok"))
            if counts.get(False):
                rejects = with_line_numbers(spark, rejects, parsed)
            else:
                rejects = rejects.withColumn("line_number", F.lit(None).cast("long"))
            lines = rejects.select(
                *REJECT_COLUMNS[:-2],
                *[F.lit(None).cast("long").alias(name) for name in REJECT_COLUMNS[-2:]],
            )
            schemas["rejects"] = write_table(
                lines.unionByName(file_rejects(spark, listing.rejects)), out, "rejects", fmt
            )
        if not counts.get(True):
            rejected = counts.get(False, 0)
            what = (
                f"all {rejected} lines rejected (see {table_uri(out, 'rejects')})" if rejected else "no lines"
            )
            raise PipelineError(f"no valid status records in {options.archive}: {what}")
        valid = parsed.where(F.col("ok"))
        with _stage(
            spark, f"replaying the logs of {len(farms)} farms (publisher timeline, Meta LS2 weights)"
        ):
            tasks = spark.sparkContext.defaultParallelism
            windows = replay_farms(valid, options.window_ms, farms, tasks).persist(
                StorageLevel.MEMORY_AND_DISK
            )
            timeline = timeline_table(windows, options.window_ms)
            schemas["publisher_timeline"] = write_table(timeline, out, "publisher_timeline", fmt)
            weights = weights_table(windows, options.window_ms)
            schemas["destination_weights"] = write_table(weights, out, "destination_weights", fmt)
        timeline = read_table(spark, out, "publisher_timeline", fmt, schemas["publisher_timeline"])
        with _stage(spark, "member health"):
            health = member_health(valid, timeline, options.interval_ms)
            schemas["member_health"] = write_table(health, out, "member_health", fmt)
        with _stage(spark, "report"):
            tables = {name: read_table(spark, out, name, fmt, schemas[name]) for name in TABLES}
            data, summary = _collect(tables, options, counts, started)
            summary = attrs.evolve(summary, listing=listing)
            write_text(spark, table_uri(out, "report.html"), report.render(data))
    finally:
        if windows is not None:
            windows.unpersist()
        remove(spark, staged)
    summary = attrs.evolve(summary, seconds=time.monotonic() - started)
    log.info("pipeline done in %.1f s", summary.seconds)
    return summary


def _collect(
    tables: dict[str, DataFrame], options: PipelineOptions, counts: dict[bool, int], started: float
) -> tuple[report.ReportData, PipelineSummary]:
    timeline, health, rejects = (tables[n] for n in ("publisher_timeline", "member_health", "rejects"))
    farms = sorted(row["cluster"] for row in timeline.select("cluster").distinct().collect())
    drawn = farms[: options.report_farms]
    timelines: dict[str, list[tuple[int, int | None]]] = {farm: [] for farm in drawn}
    if drawn:
        points = (
            timeline.where(F.col("cluster").isin(drawn))
            .select("cluster", F.unix_millis("window_start").alias("t"), "publisher")
            .orderBy("cluster", "t")
            .collect()
        )
        for row in points:
            timelines[row["cluster"]].append((int(row["t"]), row["publisher"]))
    changes = [
        (row["day"], row["cluster"], int(row["n"]))
        for row in timeline.groupBy("day", "cluster").agg(F.sum("changes").alias("n")).collect()
    ]
    members = [
        report.MemberSummary(
            cluster=row["cluster"],
            id=int(row["id"]),
            days=int(row["days"]),
            reports=int(row["reports"]),
            gaps=int(row["gaps"]),
            missed_reports=int(row["missed"]),
            longest_gap_s=float(row["longest"]),
            unhealthy_reports=int(row["unhealthy"]),
            restarts=int(row["restarts"]),
            uptime_max_ms=int(row["uptime"]),
            bandwidth_p50=int(row["bw"]),
            tunnels_p50=int(row["tunnels"]),
            publisher_windows=int(row["published"]),
        )
        for row in health.groupBy("cluster", "id")
        .agg(
            F.count(F.lit(1)).alias("days"),
            F.sum("reports").alias("reports"),
            F.sum("gaps").alias("gaps"),
            F.sum("missed_reports").alias("missed"),
            F.max("longest_gap_s").alias("longest"),
            F.sum("unhealthy_reports").alias("unhealthy"),
            F.sum("restarts").alias("restarts"),
            F.max("uptime_max_ms").alias("uptime"),
            F.percentile_approx("bandwidth_p50", 0.5).alias("bw"),
            F.percentile_approx("tunnels_p50", 0.5).alias("tunnels"),
            F.sum("publisher_windows").alias("published"),
        )
        .orderBy("cluster", "id")
        .collect()
    ]
    rejects = rejects.where(F.col("line_number").isNotNull())  # the lines; whole files are in the summary
    reject_kinds = {row["kind"]: int(row["count"]) for row in rejects.groupBy("kind").count().collect()}
    reasons = [
        (row["kind"], row["reason"], int(row["count"]))
        for row in rejects.groupBy("kind", "reason")
        .count()
        .orderBy(F.desc("count"), "kind", "reason")
        .limit(MAX_REJECT_REASONS)
        .collect()
    ]
    totals = timeline.agg(F.count(F.lit(1)).alias("windows"), F.sum("changes").alias("changes")).first()
    span = health.agg(F.min("day").alias("first"), F.max("day").alias("last")).first()
    windows = int(totals["windows"]) if totals is not None else 0
    publisher_changes = int(totals["changes"] or 0) if totals is not None else 0
    unique = sum(m.reports for m in members)
    summary = PipelineSummary(
        lines=counts.get(True, 0) + counts.get(False, 0),
        records=counts.get(True, 0),
        unique_records=unique,
        rejected=counts.get(False, 0),
        farms=len(farms),
        members=len(members),
        windows=windows,
        publisher_changes=publisher_changes,
        seconds=time.monotonic() - started,
        reject_kinds=reject_kinds,
    )
    days = f"{span['first']} to {span['last']}" if span is not None and span["first"] is not None else "none"
    data = report.ReportData(
        title="Garlic Farm telemetry",
        summary=[
            ("archive", options.archive),
            ("generated", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")),
            ("days", days),
            ("lines read", f"{summary.lines:,}"),
            ("valid status records", f"{summary.records:,} ({unique:,} unique)"),
            ("rejected lines", f"{summary.rejected:,}"),
            ("farms / members", f"{summary.farms} / {summary.members}"),
            ("windows", f"{windows:,} of {options.window_ms // 1000} s"),
            ("publisher changes", f"{publisher_changes:,}"),
            (
                "reporting interval",
                "each member's median gap"
                if options.interval_ms is None
                else f"{options.interval_ms / 1000:g} s",
            ),
        ],
        timelines=timelines,
        farms_total=len(farms),
        changes_per_day=changes,
        members=members,
        reject_kinds=sorted(reject_kinds.items(), key=lambda kv: (-kv[1], kv[0])),
        reject_reasons=reasons,
    )
    return data, summary


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="garlicfarm-pipeline", description="The farm's telemetry archive on Spark (docs/pipeline.md)."
    )
    add_pipeline_arguments(parser)
    return parser


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)


def run_from_args(
    args: argparse.Namespace, stdout: TextIO, listing: Listing | None = None
) -> PipelineSummary:
    """Options to session to run to summary on ``stdout``: the CLI and spark-submit alike.
    ``listing``: the local archive's, if the caller listed it already."""
    options = options_from(args)
    conf = spark_conf_from(args)
    check_archive(options.archive)
    if listing is None:
        listing = list_local(options.archive)  # an empty archive says so before Spark starts
    spark = build_session(args.master, driver_memory=args.driver_memory, conf=conf)
    try:
        summary = run_pipeline(spark, options, listing)
    finally:
        spark.stop()
    for line in summary.describe():
        stdout.write(line + "\n")
    stdout.write(f"tables and report.html in {options.out}\n")
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging()
    try:
        summary = run_from_args(args, sys.stdout)
    except PipelineError as e:
        sys.stderr.write(f"garlicfarm-pipeline: {e}\n")
        return 1
    return summary.exit_status


if __name__ == "__main__":
    sys.exit(main())
