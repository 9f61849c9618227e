"""Reading the archive: every line checked by the schema's own code, bad lines set aside, never fatal.

A line is ``{"index", "recorded", "record"}``. The record goes through
:func:`garlicfarm.app.schema.parse_entry` exactly as a committed entry does on a live server, so the
pipeline rejects what the farm rejects, for the same reason. Lines are read as bytes (Spark's text
source keeps a line's raw bytes; the cast to binary hands them over untouched), so bytes that are not
UTF-8 are caught here rather than silently replaced.
"""

from __future__ import annotations

import functools
import json
from typing import Any, TypeGuard

import attrs
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the usual name
from pyspark.sql.pandas.functions import pandas_udf
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

#: how much of a rejected line the rejects table keeps
REJECT_LINE_CHARS = 300

#: reject kinds: where in a line the problem is
ENCODING, JSON, ENVELOPE, SCHEMA, ADMIN = "encoding", "json", "envelope", "schema", "admin"

#: what the Python checker returns for a line (:func:`check_lines`)
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


def check_lines(values: pd.Series) -> pd.DataFrame:
    """The pandas UDF body: each line (bytes) checked by :func:`parse_line`, as
    :data:`CHECKED_SCHEMA`; a null in (a line the JVM already vouched for) gives a null row out."""
    names = CHECKED_SCHEMA.fieldNames()
    present = values.notna()
    if not present.any():  # the common batch: every line vouched for
        return _nulls(len(values))
    columns: dict[str, list[Any]] = {name: [] for name in names}
    empty = (None,) * len(names)
    for value in values.tolist():
        row = empty if value is None else _checked(bytes(value))
        for name, item in zip(names, row, strict=True):
            columns[name].append(item)
    return _frame(columns, CHECKED_SCHEMA)


@functools.lru_cache(maxsize=4)
def _nulls(rows: int) -> pd.DataFrame:
    """A batch of null rows (one length, Arrow's batch size, nearly always: made once)."""
    return _frame({name: [None] * rows for name in CHECKED_SCHEMA.fieldNames()}, CHECKED_SCHEMA)


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


def read_archive(spark: SparkSession, uri: str) -> DataFrame:
    """Every line of the archive under ``uri``, parsed (lazily): valid records and rejects alike.

    One pass: the JVM reads and checks every line (:mod:`.native`); only the lines it cannot vouch for
    reach the Python checker (the others cross to Python as nulls), whose verdict is then the line's."""
    # exactly the archive's files (node-<id>.jsonl, compressed or not): not a .jsonl.bak beside them
    lines = spark.read.option("pathGlobFilter", "*.{jsonl,jsonl.gz}").text(uri)
    partition = F.col("date").cast("string") if "date" in lines.columns else F.lit(None).cast("string")
    classified = native.classify(
        lines.select(
            F.col("value").cast("binary").alias("value"),
            partition.alias("partition"),
            F.col("_metadata.file_path").alias("file"),
            # where a line is: the file's chunk this task read, and the row's place in the task
            F.col("_metadata.file_block_start").alias("block"),
            F.monotonically_increasing_id().alias("row"),
        )
    )
    jvm_columns = zip(VALID_FIELDS, native.clean_columns(), strict=True)
    natively = classified.select(
        "clean",
        *[column.alias(f"jvm_{name}") for name, column in jvm_columns],
        *("partition", "file", "block", "row"),
        F.when(~F.col("clean"), F.col("value")).alias("suspect"),
    )
    checker = pandas_udf(check_lines, CHECKED_SCHEMA)  # type: ignore[call-overload]
    checked = natively.withColumn("python", checker("suspect"))
    clean, python = F.col("clean"), F.col("python")
    return checked.select(
        *[F.when(clean, F.col(f"jvm_{name}")).otherwise(python[name]).alias(name) for name in VALID_FIELDS],
        *[python[name].alias(name) for name in ("kind", "reason", "line")],
        *("partition", "file", "block", "row"),
    )


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
