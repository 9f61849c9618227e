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

A run over an archive seen before is incremental (incremental.py): stages 1 to 3 for the partitions
that changed only, 4 and 5 for the farms they touch, from their checkpoints.

Exit status: 0; 1 on an error (one line on stderr); :data:`QUARANTINE_STATUS` when files were set aside.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import logging
import os
import shutil
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TextIO
from urllib.parse import unquote

import attrs
from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the usual name
from pyspark.sql.types import StructType

from garlicfarm.pipeline import report
from garlicfarm.pipeline.files import FOREIGN, QUARANTINED, Listing
from garlicfarm.pipeline.health import last_reports, member_health
from garlicfarm.pipeline.incremental import (
    DEFAULT_DIR,
    MANIFEST,
    FarmPart,
    FarmPlan,
    Manifest,
    Partition,
    RunPlan,
    carry_partitions,
    checkpoint_path,
    day_name,
    partitions_for,
    remove_checkpoints_after,
    settings_of,
    write_atomically,
    write_manifest,
)
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
from garlicfarm.pipeline.replay import (
    WINDOW_SCHEMA,
    FarmSize,
    checkpoints_of,
    replay_farms,
    timeline_table,
    weights_table,
)
from garlicfarm.pipeline.session import REQUIRED_CONF, build_session
from garlicfarm.pipeline.tables import (
    PARTITIONED,
    REJECT_COLUMNS,
    TABLES,
    declared,
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

#: the checked lines while the job runs, when there are no checkpoints to keep them beside
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
    """The job; ``listing``: the local archive's, if it was listed before Spark started.

    Incremental (docs/pipeline.md, "Incremental runs"): only the archive's partitions that changed
    since the last run are read and checked, and only the farms they touch are replayed, each from its
    checkpoint before the change; the other outputs stay as they were."""
    started = time.monotonic()
    for key, value in REQUIRED_CONF.items():
        spark.conf.set(key, value)
    check_archive(options.archive)
    out, fmt = options.out, options.format
    ckdir = checkpoint_dir(options)
    with _stage(spark, "listing the archive's files and checking the compressed ones"):
        if ckdir is None:
            listing = checked_listing(spark, options.archive, listing or list_local(options.archive))
            run = RunPlan.full_run(_settings(options), listing)
        else:
            listing = listing or list_local(options.archive)
            assert listing is not None  # a local archive
            # tables removed since the last run (by hand): what the checkpoints skip is gone too
            missing = [name for name in TABLES if not _exists(table_uri(out, name))]
            if missing and not options.full and (ckdir / MANIFEST).exists():
                log.info("tables missing in %s (%s): a full run", out, ", ".join(missing))
            run = RunPlan.plan(_settings(options), listing, ckdir, options.full or bool(missing))
            listing = checked_listing(spark, options.archive, run.to_read(listing))
    staged = table_uri(out, STAGING) if ckdir is None else str(ckdir / "lines")
    windows: DataFrame | None = None
    schemas: dict[str, StructType] = {}
    try:
        new = _read_changed(spark, options, listing, run, staged)
        manifest = run.next_manifest(new)
        valid_rows = sum(f.rows for p in manifest.partitions.values() for f in p.farms.values())
        counts = {True: valid_rows, False: sum(p.lines for p in manifest.partitions.values()) - valid_rows}
        farms = run.farm_plans(manifest, ckdir)
        log.info(
            "%d valid status records from %d farms, %d rejected lines; "
            "%d partitions read, %d farms to replay",
            counts[True],
            len(manifest.farms()),
            counts[False],
            len(run.changed),
            len(farms),
        )
        with _stage(spark, "writing rejects"):
            schemas["rejects"] = _write_rejects(spark, options, listing, run, staged, bool(listing.files))
        if not counts[True]:
            rejected = counts[False]
            what = (
                f"all {rejected} lines rejected (see {table_uri(out, 'rejects')})" if rejected else "no lines"
            )
            raise PipelineError(f"no valid status records in {options.archive}: {what}")
        valid = _staged_lines(spark, staged, partitions_for(farms, manifest)).where(F.col("ok"))
        _drop_outputs(spark, options, run, farms, manifest)
        with _stage(
            spark, f"replaying the logs of {len(farms)} farms (publisher timeline, Meta LS2 weights)"
        ):
            tasks = spark.sparkContext.defaultParallelism
            sizes = {farm: FarmSize(plan.records, manifest.members(farm)) for farm, plan in farms.items()}
            resume = {farm: plan.saved for farm, plan in farms.items() if plan.saved is not None}
            windows = (
                replay_farms(valid, options.window_ms, sizes, tasks, resume)
                if farms
                else spark.createDataFrame([], WINDOW_SCHEMA)
            ).persist(StorageLevel.MEMORY_AND_DISK)
            for name, table in (
                ("publisher_timeline", timeline_table(windows, options.window_ms)),
                ("destination_weights", weights_table(windows, options.window_ms)),
            ):
                # no farm touched: the table stays as it is (its schema is all the stages below need)
                schemas[name] = (
                    write_table(table, out, name, fmt, "append") if farms else declared(table, name).schema
                )
            if ckdir is not None and farms:
                _save_checkpoints(ckdir, farms, checkpoints_of(windows))
        timeline = read_table(spark, out, "publisher_timeline", fmt, schemas["publisher_timeline"])
        with _stage(spark, "member health"):
            since = _health_since(spark, farms)
            fresh = valid.join(F.broadcast(since), "cluster").where(
                F.col("since").isNull() | (F.to_date(F.timestamp_millis("date")) >= F.col("since"))
            )
            carry = _carry(spark, staged, farms, manifest, since)
            health = member_health(fresh, timeline, options.interval_ms, carry)
            schemas["member_health"] = (
                write_table(health, out, "member_health", fmt, "append")
                if farms
                else declared(health, "member_health").schema
            )
        with _stage(spark, "report"):
            tables = {name: read_table(spark, out, name, fmt, schemas[name]) for name in TABLES}
            data, summary = _collect(tables, options, counts, started)
            summary = attrs.evolve(summary, listing=listing)
            write_text(spark, table_uri(out, "report.html"), report.render(data))
        if ckdir is not None:
            write_manifest(ckdir, manifest)  # last: a run killed before it is redone from the same point
    finally:
        if windows is not None:
            windows.unpersist()
        if ckdir is None:
            remove(spark, staged)
    summary = attrs.evolve(summary, seconds=time.monotonic() - started)
    log.info("pipeline done in %.1f s", summary.seconds)
    return summary


def checkpoint_dir(options: PipelineOptions) -> Path | None:
    """Where checkpoints go: ``--checkpoints``, else ``OUT/_checkpoints`` for a local ``--out``; None:
    no incremental runs (an ``--out`` elsewhere: every run reads and replays everything)."""
    if options.checkpoints is not None:
        if not is_local(options.checkpoints):
            raise PipelineError(f"--checkpoints must be a local directory, not {options.checkpoints}")
        return local_path(options.checkpoints)
    if is_local(options.out):
        return local_path(options.out) / DEFAULT_DIR
    return None


def _settings(options: PipelineOptions) -> dict[str, object]:
    return settings_of(options.archive, options.window_ms, options.interval_ms, options.format)


def _staged_part(
    spark: SparkSession, uri: str, partitions: Iterable[str] | None, schema: StructType | None = None
) -> DataFrame | None:
    """The staged lines of ``partitions`` (all if None); None when none was staged."""
    reader = spark.read if schema is None else spark.read.schema(schema)
    if partitions is None or not is_local(uri):  # a remote staging holds this run's partitions only
        return reader.parquet(uri).drop("p")
    paths = [f"{uri}/p={p}" for p in sorted(partitions) if (local_path(uri) / f"p={p}").is_dir()]
    if not paths:
        return None
    return reader.option("basePath", uri).parquet(*paths).drop("p")


def _staged_lines(spark: SparkSession, staged: str, partitions: Iterable[str] | None) -> DataFrame:
    """Every line of ``partitions`` as checked (:data:`PARSED_SCHEMA`), from the staged Parquet."""
    partitions = None if partitions is None else sorted(partitions)
    jvm = _staged_part(spark, f"{staged}/jvm", partitions)
    python = _staged_part(spark, f"{staged}/python", partitions, PARSED_SCHEMA)
    frames = [f for f in (None if jvm is None else vouched(jvm), python) if f is not None]
    if not frames:
        return spark.createDataFrame([], PARSED_SCHEMA)
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _read_changed(
    spark: SparkSession, options: PipelineOptions, listing: Listing, run: RunPlan, staged: str
) -> dict[str, Partition]:
    """Read and check the partitions that changed into the staged Parquet (one directory per
    partition, kept between runs beside the checkpoints); what each holds, for the manifest."""
    jvm_uri, python_uri = f"{staged}/jvm", f"{staged}/python"
    if run.full:
        remove(spark, staged)
    else:
        for partition in run.changed | run.removed:
            remove(spark, f"{jvm_uri}/p={partition}")
            remove(spark, f"{python_uri}/p={partition}")
    files = [f.path for f in listing.files]
    read = run.changed
    try:
        with _stage(spark, "reading and checking the archive"):
            # once: every line, checked by the JVM, typed, as Parquet beside the tables (compact,
            # and each stage below reads only the columns it needs)
            _stage_by_partition(spark, listing, jvm_uri)
    except AnalysisException as e:
        raise PipelineError(f"cannot read the archive at {options.archive}: {e.getMessage()}") from None
    with _stage(spark, "checking the lines the JVM could not vouch for with the schema's own code"):
        jvm_read = _staged_part(spark, jvm_uri, read) if files else None
        if jvm_read is not None:
            checked = python_checked(jvm_read).withColumn("p", F.col("partition"))
            checked.write.mode("append").partitionBy("p").parquet(python_uri)
    return _partition_stats(_staged_lines(spark, staged, read) if files else None, run)


def _stage_by_partition(spark: SparkSession, listing: Listing, uri: str) -> None:
    """Each partition's files checked by the JVM into their own directory (``p=<day>``), a job each,
    several at once: ``partitionBy`` would sort all the lines (record bytes and all) by partition
    first, which cost 5 times the reading itself on 1.4 million lines."""
    by_partition: dict[str, list[str]] = {}
    for f in listing.files:
        by_partition.setdefault(f.partition, []).append(f.path)

    def stage(partition: str) -> None:
        jvm_checked(spark, by_partition[partition]).write.mode("overwrite").parquet(f"{uri}/p={partition}")

    workers = max(1, min(len(by_partition), spark.sparkContext.defaultParallelism))
    with ThreadPoolExecutor(workers) as pool:
        for done in [pool.submit(stage, p) for p in sorted(by_partition)]:
            done.result()


def _partition_stats(parsed: DataFrame | None, run: RunPlan) -> dict[str, Partition]:
    if parsed is None:
        return {}
    day = F.date_format(F.to_date(F.timestamp_millis(F.col("date"))), "yyyy-MM-dd")
    rows = (
        parsed.groupBy("partition", "ok", "cluster")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.min("index").alias("lo"),
            F.max("index").alias("hi"),
            F.array_sort(F.collect_set("id")).alias("members"),
            F.array_sort(F.collect_set(day)).alias("days"),
        )
        .collect()
    )
    lines: dict[str, int] = {}
    farms: dict[str, dict[str, FarmPart]] = {}
    for row in rows:
        name = row["partition"]
        lines[name] = lines.get(name, 0) + int(row["rows"])
        if row["ok"]:
            farms.setdefault(name, {})[row["cluster"]] = FarmPart(
                int(row["lo"]),
                int(row["hi"]),
                int(row["rows"]),
                tuple(int(i) for i in row["members"]),
                tuple(row["days"]),
            )
    return {
        name: Partition(run.fingerprints.get(name, ""), n, farms.get(name, {})) for name, n in lines.items()
    }


def _write_rejects(
    spark: SparkSession, options: PipelineOptions, listing: Listing, run: RunPlan, staged: str, read: bool
) -> StructType:
    """The rejects of the partitions read now, and the last run's of the others."""
    out, fmt = options.out, options.format
    parsed = _staged_lines(spark, staged, None if run.full else run.changed) if read else None
    frames = [file_rejects(spark, listing.rejects)]
    if parsed is not None:
        rejects = with_line_numbers(spark, parsed.where(~F.col("ok")), parsed)
        frames.append(
            rejects.select(
                *REJECT_COLUMNS[:-2],
                *[F.lit(None).cast("long").alias(name) for name in REJECT_COLUMNS[-2:]],
            )
        )
    if run.old is not None and _exists(table_uri(out, "rejects")):
        again = sorted(run.changed | run.removed)
        kept = read_table(spark, out, "rejects", fmt, frames[0].schema).where(
            F.col("partition").isNotNull() & ~F.col("partition").isin(again) & (F.col("kind") != FOREIGN)
        )
        frames.append(kept)
    table = frames[0]
    for frame in frames[1:]:
        table = table.unionByName(frame)
    if run.old is None:
        return write_table(table, out, "rejects", fmt)
    # the old table is read while the new one is written: written beside it, then put in its place
    schema = write_table(table, out, "_rejects_next", fmt)
    remove(spark, table_uri(out, "rejects"))
    os.replace(local_path(table_uri(out, "_rejects_next")), local_path(table_uri(out, "rejects")))
    return schema


def _exists(uri: str) -> bool:
    return is_local(uri) and local_path(uri).is_dir()


def _drop_outputs(
    spark: SparkSession,
    options: PipelineOptions,
    run: RunPlan,
    plans: dict[str, FarmPlan],
    manifest: Manifest,
) -> None:
    """Remove the outputs this run writes again: everything in a full run; else, per farm touched,
    its timeline and weights after its checkpoint's day and its health from ``since`` on."""
    if run.old is None:
        for name in PARTITIONED:
            remove(spark, table_uri(options.out, name))
        return
    for farm, plan in plans.items():
        for name in ("publisher_timeline", "destination_weights"):
            _remove_days(options.out, name, farm, plan.kept_day, inclusive=False)
        _remove_days(options.out, "member_health", farm, plan.since, inclusive=True)
    for farm in run.gone_farms(manifest):
        for name in PARTITIONED:
            _remove_days(options.out, name, farm, None, inclusive=True)


def _remove_days(out: str, name: str, farm: str, bound: str | None, *, inclusive: bool) -> None:
    """Remove a farm's partitions of ``name`` from ``bound`` on (after it, unless ``inclusive``);
    all of them if None."""
    table = local_path(table_uri(out, name))
    for farm_dir in table.glob("cluster=*"):
        if unquote(farm_dir.name.removeprefix("cluster=")) != farm:
            continue
        for day_dir in farm_dir.glob("day=*"):
            day = day_dir.name.removeprefix("day=")
            if bound is None or day > bound or (inclusive and day == bound):
                shutil.rmtree(day_dir, ignore_errors=True)


def _save_checkpoints(
    directory: Path, plans: dict[str, FarmPlan], saved: list[tuple[str, int, bytes]]
) -> None:
    for farm, plan in plans.items():
        remove_checkpoints_after(directory, farm, plan.kept_day)
    for farm, day_start, payload in saved:
        write_atomically(checkpoint_path(directory, farm, day_name(day_start)), payload)
    log.info("%d checkpoints written to %s", len(saved), directory)


def _health_since(spark: SparkSession, plans: dict[str, FarmPlan]) -> DataFrame:
    rows = [
        (farm, None if p.since is None else datetime.date.fromisoformat(p.since)) for farm, p in plans.items()
    ]
    return spark.createDataFrame(rows, "cluster string, since date")


def _carry(
    spark: SparkSession, staged: str, plans: dict[str, FarmPlan], manifest: Manifest, since: DataFrame
) -> DataFrame | None:
    """Each member's last report before its farm's health is recomputed (see member_health)."""
    partitions = carry_partitions(plans, manifest)
    if not partitions:
        return None
    earlier = (
        _staged_lines(spark, staged, partitions)
        .where(F.col("ok"))
        .join(F.broadcast(since.where(F.col("since").isNotNull())), "cluster")
        .where(F.to_date(F.timestamp_millis("date")) < F.col("since"))
    )
    return last_reports(earlier)


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
