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

import hashlib
import heapq
import itertools
import json
import logging
import operator
import time
from collections.abc import Iterable, Iterator
from typing import Any

import attrs
import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the usual name
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from garlicfarm.app import scoring
from garlicfarm.app.schema import StatusRecord, parse_accepted
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
        # a checkpoint row (the other columns are placeholders): the replay as it stood when the log's
        # time left the UTC day starting at ``window_start`` (JSON, see :func:`checkpoint_payload`)
        StructField("checkpoint", BinaryType(), True),
    ]
)
DAY_MS = 86_400_000


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
    cluster: str,
    members: Iterable[int],
    rows: Iterable[tuple[int, int, bytes]],
    window_ms: int,
    *,
    accepted: bool = False,
) -> Iterator[WindowState]:
    """``rows`` are ``(index, date, record bytes)`` of status records, in log order: each applied as
    a committed entry is (checked by the schema), or, if ``accepted`` (the schema has accepted every
    one already), read as such (:func:`schema.parse_accepted`)."""
    replay = FarmReplay(cluster, members, window_ms, accepted=accepted)
    for index, date, data in rows:
        closed = replay.feed(index, date, data)
        if closed is not None:
            yield closed
    last = replay.finish()
    if last is not None:
        yield last


class FarmReplay:
    """One farm's log through a ``FarmState``, record by record: a window's state comes out when the
    log's time leaves it. :meth:`checkpoint` and :meth:`resume` carry the replay over to another run
    (the incremental pipeline, incremental.py): the FarmState's own snapshot (as Raft snapshots it)
    and the few counters of the window being filled."""

    def __init__(
        self, cluster: str, members: Iterable[int], window_ms: int, *, accepted: bool = False
    ) -> None:
        # the Meta LS2 is computed when a window closes, not after every record: nothing depends on it
        self.state = FarmState(cluster, track_leases=False)
        self.state.apply(0, members_configuration(members))
        self.window_ms = window_ms
        self.accepted = accepted
        self.window: int | None = None  #: the window being filled (its number: start // window_ms)
        self.changes = self.records = 0
        self.had_publisher = False
        self.warned = False
        self.newest = 0  #: the newest date applied

    def feed(self, index: int, date: int, data: bytes) -> WindowState | None:
        """Apply one record; the window it closed, if it moved the log's time out of one."""
        state, window_ms = self.state, self.window_ms
        # The farm's time is the date a quorum reached (scoring.farm_time): it moves past ``newest``
        # never, so only a record that could cross into a new window keeps the state as it stands
        # before the record (what the live farm showed at the window's end): a few references.
        self.newest = max(self.newest, date)
        closing = None
        if self.window is not None and self.newest // window_ms != self.window:
            closing = _Moment(state.publisher, dict(state.latest), state.now, state.index)
        before, rejected = state.publisher, state.rejected
        if self.accepted:
            state.apply_status(index, parse_accepted(data, state.cluster))
        else:
            state.apply(index, LogEntry(1, Application(data)))
        closed = None
        if state.now:  # the farm's time is known once a quorum of members has reported
            current = state.now // window_ms
            if self.window is None:
                self.window = current
            elif current != self.window:
                assert closing is not None
                closed = _window_state(state, closing, self.window * window_ms, self.changes, self.records)
                self.changes = self.records = 0
                self.window = current
        self.records += 1
        if state.publisher != before and self.had_publisher:
            self.changes += 1
        self.had_publisher = self.had_publisher or state.publisher is not None
        if state.rejected > rejected and not self.warned:
            self.warned = True
            log.warning(
                "%s: entry %d was not applied as a status record (%d rejected)",
                state.cluster,
                index,
                state.rejected,
            )
        return closed

    def finish(self) -> WindowState | None:
        """The window being filled, as it stands at the end of the rows."""
        if self.window is None:
            return None
        state = self.state
        now = _Moment(state.publisher, state.latest, state.now, state.index)
        return _window_state(state, now, self.window * self.window_ms, self.changes, self.records)

    def checkpoint(self) -> dict[str, Any]:
        """What :meth:`resume` needs to go on exactly as this replay would (JSON-ready)."""
        return {
            "state": self.state.snapshot().decode(),
            "window": self.window,
            "changes": self.changes,
            "records": self.records,
            "had_publisher": self.had_publisher,
            "warned": self.warned,
            "newest": self.newest,
        }

    @classmethod
    def resume(
        cls, cluster: str, members: Iterable[int], window_ms: int, saved: dict[str, Any]
    ) -> FarmReplay:
        """A replay that goes on from :meth:`checkpoint`'s ``saved`` (accepted records only).
        Raises ValueError (or KeyError, TypeError) on a checkpoint that is not one."""
        replay = cls(cluster, members, window_ms, accepted=True)
        replay.state.restore(saved["state"].encode())
        if replay.state.members != frozenset(members):
            raise ValueError("the checkpoint's members are not the farm's")
        replay.window = None if saved["window"] is None else int(saved["window"])
        replay.changes, replay.records = int(saved["changes"]), int(saved["records"])
        replay.had_publisher, replay.warned = bool(saved["had_publisher"]), bool(saved["warned"])
        replay.newest = int(saved["newest"])
        return replay


@attrs.frozen
class _Moment:
    """The part of a farm's state that changes with a record, as it stood at some moment."""

    publisher: int | None
    latest: dict[int, StatusRecord]
    now: int
    index: int


def _window_state(state: FarmState, at: _Moment, start: int, changes: int, records: int) -> WindowState:
    publisher = at.publisher
    eligible = sum(1 for r in at.latest.values() if scoring.eligible(r, at.now, state.members))
    return WindowState(
        cluster=state.cluster,
        window_start=start,
        publisher=publisher,
        publisher_score=scoring.score(at.latest[publisher]) if publisher is not None else None,
        eligible=eligible,
        members=len(state.members),
        changes=changes,
        records=records,
        log_time=at.now,
        last_index=at.index,
        leases=scoring.meta_ls(at.latest, at.now, state.excluded),
    )


@attrs.frozen
class FarmSize:
    """What the replay's plan needs of a farm: its valid records (copies included) and member ids."""

    records: int
    members: tuple[int, ...]


def plan_bins(sizes: dict[str, int], bins: int) -> dict[str, int]:
    """Farms onto ``bins`` tasks, largest first onto the least loaded (LPT: within 4/3 of the best)."""
    loads = [(0, b) for b in range(bins)]
    heapq.heapify(loads)
    placed: dict[str, int] = {}
    for farm in sorted(sizes, key=lambda f: (-sizes[f], f)):
        load, b = heapq.heappop(loads)
        placed[farm] = b
        heapq.heappush(loads, (load + sizes[farm], b))
    return placed


def partition_keys(spark: SparkSession, partitions: int) -> list[int]:
    """For each partition ``p``, a number that ``repartition(partitions, column)`` sends to ``p``:
    Spark places a row by ``pmod(hash(column), partitions)``, which these are read from."""
    found: dict[int, int] = {}
    span = 0
    while len(found) < partitions:
        placed = spark.range(span, span + 64 * partitions).select(
            "id", F.expr(f"pmod(hash(id), {partitions})").alias("p")
        )
        for row in placed.collect():
            found.setdefault(int(row["p"]), int(row["id"]))
        span += 64 * partitions
    return [found[p] for p in range(partitions)]


_ARROW_WINDOWS = to_arrow_schema(WINDOW_SCHEMA)
#: window rows handed back to the JVM at a time
WINDOWS_PER_BATCH = 4096


def replay_stream(
    batches: Iterable[pa.RecordBatch],
    members: dict[str, tuple[int, ...]],
    window_ms: int,
    resume: dict[str, dict[str, Any]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: rows ``cluster, index, id, date, record, seed`` of accepted records, sorted
    by farm and index, to :data:`WINDOW_SCHEMA` batches (windows, and a checkpoint row each time a
    farm's log time leaves a UTC day); one farm in memory at a time. A farm in ``resume`` goes on from
    that checkpoint; its ``seed`` rows were applied before it and only say which copies to drop."""

    def rows() -> Iterator[tuple[str, int, int, int, bytes, bool]]:
        for batch in batches:
            names = ("cluster", "index", "id", "date", "record", "seed")
            yield from zip(*(batch.column(name).to_pylist() for name in names), strict=True)

    _worker_logging()
    task_started = time.monotonic()
    farms = records = 0
    pending: list[WindowState | tuple[str, int, bytes]] = []
    for cluster, group in itertools.groupby(rows(), key=operator.itemgetter(0)):
        started = time.monotonic()
        saved = (resume or {}).get(cluster)
        count = 0
        for item in _replay_checkpointed(cluster, members[cluster], group, window_ms, saved):
            if isinstance(item, WindowState):
                count += item.records
            pending.append(item)
            if len(pending) >= WINDOWS_PER_BATCH:
                yield _window_batch(pending)
                pending = []
        # progress, farm by farm, on the executor's standard error (the console, in local mode)
        log.info("replayed %s: %d records in %.1f s", cluster, count, time.monotonic() - started)
        farms, records = farms + 1, records + count
    if pending:
        yield _window_batch(pending)
    log.info("replay task: %d farms, %d records in %.1f s", farms, records, time.monotonic() - task_started)


def _replay_checkpointed(
    cluster: str,
    members: tuple[int, ...],
    group: Iterable[tuple[str, int, int, int, bytes, bool]],
    window_ms: int,
    saved: dict[str, Any] | None,
) -> Iterator[WindowState | tuple[str, int, bytes]]:
    """One farm's windows, and ``(cluster, day start, checkpoint payload)`` each time its log time
    leaves a UTC day: the state after the record that moved it out, so that every window of that day
    and before has come out and every later one comes out of a replay resumed there."""
    if saved is None:
        replay = FarmReplay(cluster, members, window_ms, accepted=True)
    else:
        replay = FarmReplay.resume(cluster, members, window_ms, saved["replay"])
    segment = _Segment()
    for index, member, date, data in _first_copies(group):
        closed = replay.feed(index, date, data)
        segment.add(index, data)
        if closed is None:
            continue
        yield closed
        day = closed.window_start // DAY_MS
        assert replay.window is not None
        if replay.window * window_ms // DAY_MS != day:
            payload = checkpoint_payload(replay, day, (index, member, date), members, segment)
            yield cluster, day * DAY_MS, payload
            segment = _Segment()
    last = replay.finish()
    if last is not None:
        yield last


class _Segment:
    """A fingerprint of the records applied since the last checkpoint: how many, and a SHA-256 over
    each one's index and bytes (in log order)."""

    def __init__(self) -> None:
        self.records = 0
        self.digest = hashlib.sha256()

    def add(self, index: int, data: bytes) -> None:
        self.records += 1
        self.digest.update(index.to_bytes(8, "big") + len(data).to_bytes(4, "big") + data)

    def describe(self) -> dict[str, Any]:
        return {"records": self.records, "sha256": self.digest.hexdigest()}


#: the checkpoint format's version (incremental.py reads it)
CHECKPOINT_VERSION = 1


def checkpoint_payload(
    replay: FarmReplay, day: int, cut: tuple[int, int, int], members: tuple[int, ...], segment: _Segment
) -> bytes:
    """The checkpoint of ``replay`` at the end of ``day`` (days since the epoch): the replay's own
    state, ``cut``, the last row applied (index, member, date: a resumed replay applies the rows after
    it), the farm's members and the fingerprint of the day's records."""
    body = {
        "version": CHECKPOINT_VERSION,
        "cluster": replay.state.cluster,
        "day": day,
        "cut": list(cut),
        "members": list(members),
        "window_ms": replay.window_ms,
        "replay": replay.checkpoint(),
        "input": segment.describe(),
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _first_copies(
    rows: Iterable[tuple[str, int, int, int, bytes, bool]],
) -> Iterator[tuple[int, int, int, bytes]]:
    """A farm's rows in log order, each record once: every node archives every committed entry, and
    a record (a member's report of one date) counts at its first index. A ``seed`` row (applied
    before the checkpoint the replay resumed from) is only remembered."""
    seen: set[tuple[int, int]] = set()
    for _, index, member, date, record, seed in rows:
        if (member, date) not in seen:
            seen.add((member, date))
            if not seed:
                yield index, member, date, record


def _worker_logging() -> None:
    """A Python worker starts with logging unconfigured: give this module's lines a way out."""
    if not log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)


def _window_batch(items: list[WindowState | tuple[str, int, bytes]]) -> pa.RecordBatch:
    states = [s for s in items if isinstance(s, WindowState)]
    marks = [s for s in items if not isinstance(s, WindowState)]
    n = len(marks)
    return pa.RecordBatch.from_pydict(
        {
            "cluster": [s.cluster for s in states] + [m[0] for m in marks],
            "window_start": [s.window_start for s in states] + [m[1] for m in marks],
            "publisher": [s.publisher for s in states] + [None] * n,
            "publisher_score": [s.publisher_score for s in states] + [None] * n,
            "eligible": [s.eligible for s in states] + [0] * n,
            "members": [s.members for s in states] + [0] * n,
            "changes": [s.changes for s in states] + [0] * n,
            "records": [s.records for s in states] + [0] * n,
            "log_time": [s.log_time for s in states] + [0] * n,
            "last_index": [s.last_index for s in states] + [0] * n,
            "lease_destinations": [[x.destination for x in s.leases] for s in states] + [[]] * n,
            "lease_weights": [[x.weight for x in s.leases] for s in states] + [[]] * n,
            "checkpoint": [None] * len(states) + [m[2] for m in marks],
        },
        schema=_ARROW_WINDOWS,
    )


def replay_farms(
    valid: DataFrame,
    window_ms: int,
    farms: dict[str, FarmSize],
    tasks: int,
    resume: dict[str, dict[str, Any]] | None = None,
) -> DataFrame:
    """One row per farm and window (:data:`WINDOW_SCHEMA`), from the valid records of ``farms``, and
    a checkpoint row per farm and day its log time left.

    The farms are packed by size onto at most ``tasks`` tasks (each farm is sequential: its whole log
    goes through one FarmState), each task's rows placed exactly by :func:`partition_keys`: one
    shuffle of typed columns and the record's bytes, one sort, and each task streams its farms' rows
    in log order, copies dropped as they come (:func:`_first_copies`).

    ``resume``: farms whose replay goes on from a checkpoint (:func:`checkpoint_payload`, read back);
    their rows up to its cut only seed the copies dropped."""
    spark = valid.sparkSession
    resume = resume or {}
    bins = max(1, min(len(farms), tasks))
    placed = plan_bins({farm: size.records for farm, size in farms.items()}, bins)
    keys = partition_keys(spark, bins)
    no_cut = (-1, 0, 0)
    plan = spark.createDataFrame(
        [
            (farm, keys[b], *(tuple(resume[farm]["cut"]) if farm in resume else no_cut))
            for farm, b in placed.items()
        ],
        "cluster string, replay_key long, cut_index long, cut_id int, cut_date long",
    )
    members = {farm: size.members for farm, size in farms.items()}

    def body(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return replay_stream(batches, members, window_ms, resume)

    # a row at or before the cut, in the replay's order, was applied before the checkpoint
    seed = (F.col("index") < F.col("cut_index")) | (
        (F.col("index") == F.col("cut_index"))
        & (
            (F.col("id") < F.col("cut_id"))
            | ((F.col("id") == F.col("cut_id")) & (F.col("date") <= F.col("cut_date")))
        )
    )
    # An explicit partition count is left alone by adaptive execution.
    return (
        valid.select("cluster", "index", "id", "date", "record")
        .join(F.broadcast(plan), "cluster")
        .withColumn("seed", seed)
        .repartition(bins, "replay_key")
        .sortWithinPartitions("cluster", "index", "id", "date")
        .drop("replay_key", "cut_index", "cut_id", "cut_date")
        .mapInArrow(body, WINDOW_SCHEMA)
    )


def checkpoints_of(windows: DataFrame) -> list[tuple[str, int, bytes]]:
    """The checkpoint rows of :func:`replay_farms`: (farm, day start in ms, payload)."""
    rows = windows.where(F.col("checkpoint").isNotNull()).select("cluster", "window_start", "checkpoint")
    return [(r["cluster"], int(r["window_start"]), bytes(r["checkpoint"])) for r in rows.collect()]


def _windows_only(windows: DataFrame) -> DataFrame:
    return windows.where(F.col("checkpoint").isNull())


def timeline_table(windows: DataFrame, window_ms: int) -> DataFrame:
    start = F.timestamp_millis(F.col("window_start"))
    return _windows_only(windows).select(
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
    leases = _windows_only(windows).select(
        "cluster",
        start.alias("window_start"),
        F.timestamp_millis(F.col("window_start") + F.lit(window_ms)).alias("window_end"),
        F.posexplode(F.arrays_zip("lease_destinations", "lease_weights")).alias("pos", "lease"),
    )
    return leases.select(
        "cluster",
        "window_start",
        "window_end",
        F.to_date("window_start").alias("day"),
        (F.col("pos") + 1).alias("rank"),
        F.col("lease.lease_destinations").alias("destination"),
        F.col("lease.lease_weights").alias("weight"),
    )
