"""Member health per farm, member and day (UTC): plain Spark aggregations over the valid records.

Gaps: consecutive reports of a member (across midnight too; a gap counts on the day of the report that
ends it) further apart than 1.5 reporting intervals. ``missed_reports`` is how many reports such gaps
swallowed: round(gap / interval) - 1 each. The interval is given, or each member's median gap.
``availability`` is reports / (reports + missed_reports): the share of expected reports that arrived
(a silence at the very end of the archive, with no report after it, is not counted). ``restarts``
counts reports whose router uptime is lower than the member's previous report's.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the usual name

PERCENTILES = (0.5, 0.9, 0.99)
#: percentile_approx's accuracy: exact for up to this many values per group (a day is 1440 reports)
ACCURACY = 10_000


def _percentiles(column: str, prefix: str) -> list[Column]:
    values = F.percentile_approx(column, list(PERCENTILES), ACCURACY)
    return [values[i].alias(f"{prefix}_p{round(p * 100)}") for i, p in enumerate(PERCENTILES)]


COLUMNS = ("cluster", "id", "date", "index", "recorded", "uptime", "healthy", "tunnels", "bandwidth")


def last_reports(records: DataFrame) -> DataFrame:
    """Each member's last report among ``records`` (in the gaps' order: date, index, recorded): what
    an incremental run's first recomputed day measures its first gap and restart against."""
    last = F.max(F.struct("date", "index", "recorded", "uptime", "healthy", "tunnels", "bandwidth"))
    return records.groupBy("cluster", "id").agg(last.alias("last")).select("cluster", "id", "last.*")


def member_health(
    records: DataFrame, timeline: DataFrame, interval_ms: int | None, carry: DataFrame | None = None
) -> DataFrame:
    """``records``: the valid records, copies included; ``timeline`` as in ``publisher_timeline``;
    ``carry``: each member's report before the first of ``records`` (:func:`last_reports`), if
    ``records`` are not the member's first: it counts in the first gap and restart, nowhere else.

    Every node archives every committed record, so a record may be there several times: ordered by
    date then index, a copy is a row whose date equals the previous row's (a zero gap), and the copy
    kept is the one with the lowest index. One sort serves both the de-duplication and the gaps.
    """
    member = Window.partitionBy("cluster", "id").orderBy("date", "index", "recorded")
    rows = records.select(*COLUMNS).withColumn("carried", F.lit(False))
    if carry is not None:
        rows = rows.unionByName(carry.select(*COLUMNS).withColumn("carried", F.lit(True)))
    gaps = (
        rows.withColumn("gap_ms", F.col("date") - F.lag("date").over(member))
        # a copy has its original's uptime, so comparing with the previous row, copy or not, is right
        .withColumn("restart", F.col("uptime") < F.lag("uptime").over(member))
        .where((F.col("gap_ms").isNull() | (F.col("gap_ms") > 0)) & ~F.col("carried"))
        .withColumn("day", F.to_date(F.timestamp_millis(F.col("date"))))
    )
    if interval_ms is None:
        medians = gaps.groupBy("cluster", "id").agg(
            F.percentile_approx("gap_ms", 0.5, ACCURACY).cast("double").alias("interval_ms")
        )
        # a member with a single report has no gap to measure: fall back to the default minute
        gaps = gaps.join(medians, ["cluster", "id"]).withColumn(
            "interval_ms", F.coalesce(F.col("interval_ms"), F.lit(60_000.0))
        )
    else:
        gaps = gaps.withColumn("interval_ms", F.lit(float(interval_ms)))
    late = F.col("gap_ms") > F.col("interval_ms") * 1.5
    missed = F.when(late, F.round(F.col("gap_ms") / F.col("interval_ms")) - 1).otherwise(0)
    health = gaps.groupBy("cluster", "id", "day").agg(
        F.count(F.lit(1)).alias("reports"),
        F.timestamp_millis(F.min("date")).alias("first_report"),
        F.timestamp_millis(F.max("date")).alias("last_report"),
        F.max("uptime").alias("uptime_max_ms"),
        (F.first("interval_ms") / 1000).alias("interval_s"),
        F.sum(F.when(late, 1).otherwise(0)).alias("gaps"),
        F.sum(missed).cast("long").alias("missed_reports"),
        (F.coalesce(F.max("gap_ms"), F.lit(0)) / 1000).alias("longest_gap_s"),
        F.sum(F.when(F.col("healthy"), 0).otherwise(1)).alias("unhealthy_reports"),
        F.sum(F.when(F.col("restart"), 1).otherwise(0)).alias("restarts"),
        *_percentiles("bandwidth", "bandwidth"),
        *_percentiles("tunnels", "tunnels"),
    )
    published = (
        timeline.where(F.col("publisher").isNotNull())
        .groupBy("cluster", "day", F.col("publisher").alias("id"))
        .agg(F.count(F.lit(1)).alias("publisher_windows"))
    )
    changes = timeline.groupBy("cluster", "day").agg(F.sum("changes").alias("farm_publisher_changes"))
    return (
        health.join(published, ["cluster", "id", "day"], "left")
        .join(changes, ["cluster", "day"], "left")
        .fillna(0, ["publisher_windows", "farm_publisher_changes"])
        .select(
            "cluster",
            "id",
            "day",
            "reports",
            "first_report",
            "last_report",
            "uptime_max_ms",
            "interval_s",
            "gaps",
            "missed_reports",
            (F.col("reports") / (F.col("reports") + F.col("missed_reports"))).alias("availability"),
            "longest_gap_s",
            "unhealthy_reports",
            "restarts",
            *[f"bandwidth_p{round(p * 100)}" for p in PERCENTILES],
            *[f"tunnels_p{round(p * 100)}" for p in PERCENTILES],
            F.col("publisher_windows").cast("long").alias("publisher_windows"),
            F.col("farm_publisher_changes").cast("long").alias("farm_publisher_changes"),
        )
    )
