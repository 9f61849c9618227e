"""The publisher timeline: each farm's log replayed through the live service's own ``FarmState``.

The publisher choice has hysteresis (it depends on the previous choice) and the log's time is the date
a quorum of members has reached (``scoring.farm_time``), so a farm's answer is sequential in its log:
each farm is one group, its records
applied in ``index`` order by a :class:`~garlicfarm.app.state.FarmState`, exactly as a server applies
committed entries. Nothing of the algorithm is re-implemented here.

A window is ``[k * W, (k + 1) * W)`` of log time (UTC, aligned to the epoch). The state reported for a
window is the state after the last entry applied while the log's time was inside it, i.e. what the
farm had decided when its time moved on. Windows in which the log's time never lay (the whole farm
silent) have no row: the farm's state did not change in them.

The archive holds no configuration entries: every id that reported in a farm counts as a member, fed
to the ``FarmState`` as one synthetic Configuration before the first record. Admin commands
(exclusions) are not archived either, so the Meta LS2 computed here includes excluded destinations.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

import attrs
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the usual name
from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

from garlicfarm.app import scoring
from garlicfarm.app.state import FarmState
from garlicfarm.wire.payloads import Application, ClusterServer, Configuration, LogEntry

log = logging.getLogger(__name__)

WINDOW_SCHEMA = StructType(
    [
        StructField("cluster", StringType(), False),
        StructField("window_start", LongType(), False),
        StructField("publisher", IntegerType(), True),
        StructField("publisher_score", IntegerType(), True),
        StructField("eligible", IntegerType(), False),
        StructField("members", IntegerType(), False),
        StructField("changes", IntegerType(), False),
        StructField("records", IntegerType(), False),
        StructField("log_time", LongType(), False),
        StructField("last_index", LongType(), False),
        StructField("lease_destinations", ArrayType(StringType(), False), False),
        StructField("lease_weights", ArrayType(IntegerType(), False), False),
    ]
)


@attrs.frozen
class WindowState:
    """A farm's decision at the end of one window of log time."""

    cluster: str
    window_start: int  #: ms since the epoch
    publisher: int | None
    publisher_score: int | None
    eligible: int  #: members eligible to publish at that moment
    members: int
    changes: int  #: publisher changes inside the window (the farm's first publisher is not a change)
    records: int  #: entries applied inside the window
    log_time: int
    last_index: int
    leases: tuple[scoring.Lease, ...]


def members_configuration(members: Iterable[int]) -> LogEntry:
    """The configuration the archive does not hold: every id that reported."""
    servers = tuple(ClusterServer(i) for i in sorted(set(members)))
    return LogEntry(0, Configuration(0, 0, servers))


def replay_farm(
    cluster: str, members: Iterable[int], rows: Iterable[tuple[int, int, bytes]], window_ms: int
) -> Iterator[WindowState]:
    """``rows`` are ``(index, date, record bytes)`` of valid status records, in log order."""
    state = FarmState(cluster)
    state.apply(0, members_configuration(members))
    window: int | None = None
    changes = records = 0
    had_publisher = False
    warned = False
    newest = 0
    for index, date, data in rows:
        # The farm's time is the date a quorum reached (scoring.farm_time): it moves past ``newest``
        # never, so only a record that could cross into a new window pays for the window's state
        # as it stands before the record (what the live farm showed at the window's end).
        newest = max(newest, date)
        closing = None
        if window is not None and newest // window_ms != window:
            closing = _window_state(state, window * window_ms, changes, records)
        before, rejected = state.publisher, state.rejected
        state.apply(index, LogEntry(1, Application(data)))
        if state.now:  # the farm's time is known once a quorum of members has reported
            current = state.now // window_ms
            if window is None:
                window = current
            elif current != window:
                assert closing is not None
                yield closing
                changes = records = 0
                window = current
        records += 1
        if state.publisher != before and had_publisher:
            changes += 1
        had_publisher = had_publisher or state.publisher is not None
        if state.rejected > rejected and not warned:
            warned = True
            log.warning(
                "%s: entry %d was not applied as a status record (%d rejected)",
                cluster,
                index,
                state.rejected,
            )
    if window is not None:
        yield _window_state(state, window * window_ms, changes, records)


def _window_state(state: FarmState, start: int, changes: int, records: int) -> WindowState:
    publisher = state.publisher
    eligible = sum(1 for r in state.latest.values() if scoring.eligible(r, state.now, state.members))
    return WindowState(
        cluster=state.cluster,
        window_start=start,
        publisher=publisher,
        publisher_score=scoring.score(state.latest[publisher]) if publisher is not None else None,
        eligible=eligible,
        members=len(state.members),
        changes=changes,
        records=records,
        log_time=state.now,
        last_index=state.index,
        leases=state.leases,
    )


def farm_rows(frame: pd.DataFrame) -> list[tuple[int, int, bytes]]:
    """A farm's records in log order, each once (every node archives the same committed entries)."""
    ordered = frame.sort_values(["index", "id", "date"], kind="stable").drop_duplicates(["id", "date"])
    return list(
        zip(
            ordered["index"].astype("int64").tolist(),
            ordered["date"].astype("int64").tolist(),
            [bytes(b) for b in ordered["record"].tolist()],
            strict=True,
        )
    )


def replay_group(key: tuple[str], frame: pd.DataFrame, window_ms: int) -> pd.DataFrame:
    """``applyInPandas`` body: one farm's ``index, id, date, record`` to :data:`WINDOW_SCHEMA` rows."""
    (cluster,) = key
    members = frame["id"].astype("int64").unique().tolist()
    rows = farm_rows(frame)
    log.info("replaying %s: %d records, %d members", cluster, len(rows), len(members))
    states = list(replay_farm(cluster, members, rows, window_ms))
    return pd.DataFrame(
        {
            "cluster": pd.Series([s.cluster for s in states], dtype=object),
            "window_start": pd.Series([s.window_start for s in states], dtype="int64"),
            "publisher": pd.array([s.publisher for s in states], dtype="Int64"),
            "publisher_score": pd.array([s.publisher_score for s in states], dtype="Int64"),
            "eligible": pd.Series([s.eligible for s in states], dtype="int64"),
            "members": pd.Series([s.members for s in states], dtype="int64"),
            "changes": pd.Series([s.changes for s in states], dtype="int64"),
            "records": pd.Series([s.records for s in states], dtype="int64"),
            "log_time": pd.Series([s.log_time for s in states], dtype="int64"),
            "last_index": pd.Series([s.last_index for s in states], dtype="int64"),
            "lease_destinations": pd.Series(
                [[x.destination for x in s.leases] for s in states], dtype=object
            ),
            "lease_weights": pd.Series([[x.weight for x in s.leases] for s in states], dtype=object),
        }
    )


def replay_farms(valid: DataFrame, window_ms: int, farms: int) -> DataFrame:
    """One row per farm and window (:data:`WINDOW_SCHEMA`), from the valid records of ``farms`` farms."""

    def body(key: tuple[str], frame: pd.DataFrame) -> pd.DataFrame:
        return replay_group(key, frame, window_ms)

    # As many partitions as farms: adaptive execution would otherwise merge the shuffle by bytes into
    # a few partitions, and a few long Python tasks keep cores idle at the end. (An explicit count is
    # left alone by AQE, and the groupBy reuses this partitioning: one shuffle.)
    return (
        valid.select("cluster", "index", "id", "date", "record")
        .repartition(max(1, farms), "cluster")
        .groupBy("cluster")
        .applyInPandas(body, WINDOW_SCHEMA)
    )


def timeline_table(windows: DataFrame, window_ms: int) -> DataFrame:
    start = F.timestamp_millis(F.col("window_start"))
    return windows.select(
        "cluster",
        start.alias("window_start"),
        F.timestamp_millis(F.col("window_start") + F.lit(window_ms)).alias("window_end"),
        F.to_date(start).alias("day"),
        "publisher",
        "publisher_score",
        "eligible",
        "members",
        F.size("lease_destinations").alias("leases"),
        "changes",
        "records",
        F.timestamp_millis(F.col("log_time")).alias("log_time"),
        "last_index",
    )


def weights_table(windows: DataFrame, window_ms: int) -> DataFrame:
    start = F.timestamp_millis(F.col("window_start"))
    leases = windows.select(
        "cluster",
        start.alias("window_start"),
        F.timestamp_millis(F.col("window_start") + F.lit(window_ms)).alias("window_end"),
        F.posexplode(F.arrays_zip("lease_destinations", "lease_weights")).alias("pos", "lease"),
    )
    return leases.select(
        "cluster",
        "window_start",
        "window_end",
        (F.col("pos") + 1).alias("rank"),
        F.col("lease.lease_destinations").alias("destination"),
        F.col("lease.lease_weights").alias("weight"),
    )
