"""Reading the archive: every line checked by the schema's own code, bad lines set aside, never fatal.

A line is ``{"index", "recorded", "record"}``. The record goes through
:func:`garlicfarm.app.schema.parse_entry` exactly as a committed entry does on a live server, so the
pipeline rejects what the farm rejects, for the same reason. Lines are read as bytes (Spark's text
source keeps a line's raw bytes; the cast to binary hands them over untouched), so bytes that are not
UTF-8 are caught here rather than silently replaced.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, TypeGuard

import attrs
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the usual name
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from garlicfarm.app import scoring
from garlicfarm.app.schema import (
    MAX_INT,
    AdminCommand,
    SchemaError,
    StatusRecord,
    parse_entry,
    unique_keys,
)
from garlicfarm.pipeline import native
from garlicfarm.pipeline.intake import checked_listing, list_local

#: how much of a rejected line the rejects table keeps
REJECT_LINE_CHARS = 300

#: reject kinds: where in a line the problem is
ENCODING, JSON, ENVELOPE, SCHEMA, ADMIN = "encoding", "json", "envelope", "schema", "admin"

#: what the checks give for a line (:func:`_checked`, and the JVM for a clean one)
CHECKED_SCHEMA = StructType(
    [
        StructField("ok", BooleanType(), True),
        StructField("cluster", StringType(), True),
        StructField("index", LongType(), True),
        StructField("recorded", IntegerType(), True),
        StructField("id", IntegerType(), True),
        StructField("date", LongType(), True),
        StructField("uptime", LongType(), True),
        StructField("net_status", StringType(), True),
        StructField("healthy", BooleanType(), True),
        StructField("tunnels", LongType(), True),
        StructField("bandwidth", LongType(), True),
        StructField("job_lag", LongType(), True),
        StructField("publish_config", StringType(), True),
        StructField("destinations", IntegerType(), True),
        # the record as parse_entry read it: what the replay feeds FarmState
        StructField("record", BinaryType(), True),
        # rejects only
        StructField("kind", StringType(), True),
        StructField("reason", StringType(), True),
        StructField("line", StringType(), True),
    ]
)
#: where a line is
WHERE = ("partition", "file", "block", "row")

#: the columns of a valid line, whichever path checked it
VALID_FIELDS = CHECKED_SCHEMA.fieldNames()[: CHECKED_SCHEMA.fieldNames().index("kind")]

#: what :func:`read_archive` gives for every line: the checked fields and where the line is
PARSED_SCHEMA = StructType(
    [
        *CHECKED_SCHEMA.fields,
        StructField("partition", StringType(), True),
        StructField("file", StringType(), True),
        StructField("block", LongType(), True),  # the byte where the task's chunk of the file starts
        StructField("row", LongType(), True),  # monotonically_increasing_id, in file order in a chunk
    ]
)


@attrs.frozen
class Parsed:
    index: int
    recorded: int
    record: StatusRecord
    data: bytes


@attrs.frozen
class Reject:
    kind: str
    reason: str
    index: int | None = None
    cluster: str | None = None


def _positive_int(value: Any, limit: int) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= limit


def parse_line(line: bytes) -> Parsed | Reject:
    """One archive line, checked: the envelope here, the record by the schema's ``parse_entry``."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        return Reject(ENCODING, f"not UTF-8 at byte {e.start}")
    try:
        envelope = json.loads(text, object_pairs_hook=unique_keys)  # strict, as the live schema
    except RecursionError:
        return Reject(JSON, "nested too deep")
    except ValueError as e:
        return Reject(JSON, f"not JSON: {e}")
    if not isinstance(envelope, dict):
        return Reject(ENVELOPE, "a line is a JSON object")
    index = envelope.get("index")
    if not _positive_int(index, MAX_INT):
        return Reject(ENVELOPE, "index: must be a log index (a positive integer)")
    recorded = envelope.get("recorded")
    if not _positive_int(recorded, 2**31 - 1):
        return Reject(ENVELOPE, "recorded: must be a server id", index)
    raw = envelope.get("record")
    if not isinstance(raw, dict):
        return Reject(ENVELOPE, "record: must be an object", index)
    cluster = raw.get("cluster")
    if not isinstance(cluster, str):
        return Reject(SCHEMA, "cluster: missing or not a string", index)
    try:
        data = json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode()
    except UnicodeEncodeError:  # a lone surrogate from a \\u escape: keep it escaped
        data = json.dumps(raw, separators=(",", ":")).encode()
    try:
        entry = parse_entry(data, cluster)
    except SchemaError as e:
        return Reject(SCHEMA, str(e), index, cluster)
    if isinstance(entry, AdminCommand):
        return Reject(ADMIN, "an admin command: the archive holds status records only", index, cluster)
    return Parsed(index, recorded, entry, data)


def _storable(text: str) -> str:
    """``text`` with any lone surrogate (a rejected line's ``"\\ud800"``) written as an escape: a
    table's strings are UTF-8, and one such character failed the whole job."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _shown(line: bytes) -> str:
    return line[:REJECT_LINE_CHARS].decode("utf-8", "backslashreplace")


def check_batches(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """``mapInPandas`` body: the lines the JVM could not vouch for (``value`` and where it is), each
    checked by :func:`parse_line`, to :data:`PARSED_SCHEMA` rows."""
    names = CHECKED_SCHEMA.fieldNames()
    where = ("partition", "file", "block", "row")
    for batch in batches:
        columns: dict[str, list[Any]] = {name: [] for name in PARSED_SCHEMA.fieldNames()}
        for value in batch["value"].tolist():
            for name, item in zip(names, _checked(bytes(value)), strict=True):
                columns[name].append(item)
        for name in where:
            columns[name] = batch[name].tolist()
        yield _frame(columns, PARSED_SCHEMA)


def _checked(line: bytes) -> tuple[Any, ...]:
    result = parse_line(line)
    if isinstance(result, Reject):
        cluster = None if result.cluster is None else _storable(result.cluster)
        return (
            False,
            cluster,
            result.index,
            *[None] * 12,
            result.kind,
            _storable(result.reason),
            _shown(line),
        )
    record = result.record
    router = record.router
    return (
        True,
        record.cluster,
        result.index,
        result.recorded,
        record.id,
        record.date,
        router.uptime,
        router.netStatus,
        scoring.healthy(record),
        router.participatingTunnels,
        router.bandwidthCurrent,
        router.jobLag,
        record.meta.publishConfig,
        len(record.destinations),
        result.data,
        None,
        None,
        None,
    )


def _frame(columns: dict[str, list[Any]], schema: StructType) -> pd.DataFrame:
    # Nullable pandas dtypes: a plain int column with a null would become float and lose digits.
    data: dict[str, Any] = {}
    for field in schema.fields:
        values = columns[field.name]
        if isinstance(field.dataType, IntegerType | LongType):
            data[field.name] = pd.array(values, dtype="Int64")
        elif isinstance(field.dataType, BooleanType):
            data[field.name] = pd.array(values, dtype="boolean")
        else:
            data[field.name] = pd.Series(values, dtype=object)
    return pd.DataFrame(data)


def jvm_checked(spark: SparkSession, files: Sequence[str]) -> DataFrame:
    """Every line of ``files`` (the archive's, as :mod:`.intake` lists them) as the JVM reads it
    (lazily): ``clean`` (vouched for, :mod:`.native`), the fields of a clean line (``jvm_<name>``),
    where the line is, and the bytes of a line that is not clean (``suspect``, for
    :func:`python_checked`)."""
    # exactly these files, no directory discovery (so no partition inference: the partition comes
    # from the path)
    lines = spark.read.option("recursiveFileLookup", "true").text(list(files))
    classified = native.classify(
        lines.select(
            F.col("value").cast("binary").alias("value"),
            partition_of(F.col("_metadata.file_path")).alias("partition"),
            plain_path(F.col("_metadata.file_path")).alias("file"),
            # where a line is: the file's chunk this task read, and the row's place in the task
            F.col("_metadata.file_block_start").alias("block"),
            F.monotonically_increasing_id().alias("row"),
        )
    )
    jvm_columns = zip(VALID_FIELDS, native.clean_columns(), strict=True)
    return classified.select(
        "clean",
        *[column.alias(f"jvm_{name}") for name, column in jvm_columns],
        *WHERE,
        F.when(~F.col("clean"), F.col("value")).alias("suspect"),
    )


def plain_path(uri: Column) -> Column:
    """A local file's path as the filesystem spells it (Spark gives ``file:`` URIs, %-escaped); any
    other URI as it is."""
    escaped = F.regexp_replace(F.regexp_replace(uri, "^file:(//)?", ""), "[+]", "%2B")
    return F.when(uri.startswith("file:"), F.url_decode(escaped)).otherwise(uri)


def partition_of(uri: Column) -> Column:
    """The ``date=`` directory a file is in."""
    return F.nullif(F.regexp_extract(uri, "date=([0-9]{4}-[0-9]{2}-[0-9]{2})/[^/]*$", 1), F.lit(""))


def vouched(jvm: DataFrame) -> DataFrame:
    """The clean lines of :func:`jvm_checked`, as :data:`PARSED_SCHEMA` rows."""
    return jvm.where("clean").select(
        *[F.col(f"jvm_{name}").alias(name) for name in VALID_FIELDS],
        *[F.lit(None).cast("string").alias(name) for name in ("kind", "reason", "line")],
        *WHERE,
    )


def python_checked(jvm: DataFrame) -> DataFrame:
    """The other lines of :func:`jvm_checked` through the schema's own checker: its verdict is theirs."""
    suspects = jvm.where(~F.col("clean")).select(F.col("suspect").alias("value"), *WHERE)
    return suspects.mapInPandas(check_batches, PARSED_SCHEMA)


def read_archive(spark: SparkSession, uri: str) -> DataFrame:
    """Every line of the archive under ``uri``, parsed (lazily): valid records and rejects alike.

    (The job stages :func:`jvm_checked` first, so that the source is read once and Python starts
    only for the few lines the JVM cannot vouch for.)"""
    listing = checked_listing(spark, uri, list_local(uri))
    jvm = jvm_checked(spark, [f.path for f in listing.files])
    return vouched(jvm).unionByName(python_checked(jvm))


def with_line_numbers(spark: SparkSession, rejects: DataFrame, parsed: DataFrame) -> DataFrame:
    """``rejects`` with ``line_number``: where the line is in its file, counting from 1.

    A task reads a chunk of a file (``block``, its first byte) and numbers its rows in file order
    (``row``); the chunks of a file, in byte order, hold its lines in order. So a line's number is the
    lines of the chunks before its own, plus its place in its chunk: one small aggregation."""
    chunks = (
        parsed.groupBy("file", "block")
        .agg(F.count(F.lit(1)).alias("lines"), F.min("row").alias("first_row"))
        .collect()
    )
    starts: list[tuple[str, int, int, int]] = []
    before: dict[str, int] = {}
    for chunk in sorted(chunks, key=lambda c: (c["file"], c["block"])):
        file = chunk["file"]
        starts.append((file, int(chunk["block"]), int(chunk["first_row"]), before.get(file, 0)))
        before[file] = before.get(file, 0) + int(chunk["lines"])
    table = spark.createDataFrame(starts, "file string, block long, first_row long, lines_before long")
    number = F.col("lines_before") + F.col("row") - F.col("first_row") + 1
    return rejects.join(F.broadcast(table), ["file", "block"], "left").withColumn("line_number", number)
