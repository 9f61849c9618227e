"""Writing the job's tables, and reading them back for the report.

A table with a farm and a day (``cluster``, ``day``) is partitioned by them (``cluster=.../day=.../``,
one file per farm-day); ``rejects`` is not (its rows need not have a farm). Timestamps are UTC
``TIMESTAMP`` columns, in Parquet as INT64 microseconds (``session.REQUIRED_CONF``). Parquet (the
default) or CSV with a header line, whose timestamps are ISO 8601 with ``Z``.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the usual name
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from garlicfarm.pipeline.files import FileReject

TABLES = ("publisher_timeline", "destination_weights", "member_health", "rejects")
#: the tables with a farm and a day, partitioned by them
PARTITIONED = TABLES[:3]
PARTITION_KEYS = ("cluster", "day")

#: the rejects table: a bad line, or (``line_number`` null) a whole file and how much of it was read
REJECT_COLUMNS = (
    "partition",
    "file",
    "line_number",
    "cluster",
    "index",
    "kind",
    "reason",
    "line",
    "lines_read",
    "bytes_read",
)
REJECT_SCHEMA = (
    "partition string, file string, line_number long, cluster string, index long, kind string, "
    "reason string, line string, lines_read long, bytes_read long"
)
#: columns every row of a table has (besides the partition keys): written as non-nullable
REQUIRED = {
    "publisher_timeline": ("window_start", "window_end", "eligible", "members", "records", "log_time"),
    "destination_weights": ("window_start", "window_end", "rank", "destination", "weight"),
    "member_health": ("id", "reports", "first_report", "last_report"),
    "rejects": ("file", "kind", "reason"),
}


def table_uri(out: str, name: str) -> str:
    return f"{out.rstrip('/')}/{name}"


def partition_keys(name: str, frame: DataFrame) -> list[str]:
    if "rejects" in name:  # also the incremental run's next one, written beside it
        return []
    return [key for key in PARTITION_KEYS if key in frame.columns]


def write_table(frame: DataFrame, out: str, name: str, fmt: str, mode: str = "overwrite") -> StructType:
    """``frame`` as the table ``name`` under ``out`` (``mode``: ``append`` adds farm-day partitions to
    it); the schema it was written with."""
    keys = partition_keys(name, frame)
    frame = declared(frame, name)
    if keys:
        frame = frame.repartition(*keys)  # one file per farm and day
    writer = frame.write.mode(mode).format(fmt)
    if fmt == "csv":
        writer = writer.option("header", "true")
    if keys:
        writer = writer.partitionBy(*keys)
    writer.save(table_uri(out, name))
    return frame.schema


def declared(frame: DataFrame, name: str) -> DataFrame:
    """``frame`` with the table's required columns declared non-null (its schema is the table's)."""
    required = set(REQUIRED.get(name, ()))
    return frame.select(
        *[
            _declared_required(field) if field.name in required else F.col(field.name)
            for field in frame.schema.fields
        ]
    )


def _declared_required(field: StructField) -> Column:
    """``field`` declared non-null, so that the files say so. Every row has it (it comes from a valid
    record's or a window's fields, or the reject's own): the fallback is never taken, it only tells
    Spark (which has no "assert not null" in its API)."""
    column = F.col(field.name)
    if not field.nullable:
        return column
    dtype = field.dataType
    if isinstance(dtype, StringType):
        fallback = F.lit("")
    elif isinstance(dtype, TimestampType):
        fallback = F.timestamp_millis(F.lit(0))
    else:
        fallback = F.lit(0).cast(dtype)
    return F.coalesce(column, fallback).alias(field.name)


def read_table(spark: SparkSession, out: str, name: str, fmt: str, schema: StructType) -> DataFrame:
    reader = spark.read.schema(schema).format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true").option("multiLine", "true")
    return reader.load(table_uri(out, name))


def file_rejects(spark: SparkSession, rejects: Sequence[FileReject]) -> DataFrame:
    rows = [
        (r.partition, r.path, None, None, None, r.kind, r.reason, None, r.lines_read, r.bytes_read)
        for r in rejects
    ]
    return spark.createDataFrame(rows, REJECT_SCHEMA)


def is_local(uri: str) -> bool:
    return urlparse(uri).scheme in ("", "file")


def local_path(uri: str) -> Path:
    parsed = urlparse(uri)
    return Path(parsed.path if parsed.scheme == "file" else uri)


def write_text(spark: SparkSession, uri: str, text: str) -> None:
    """A small file next to the tables: local paths directly, anything else through Hadoop."""
    data = text.encode("utf-8")
    if is_local(uri):
        path = local_path(uri)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    target = jvm.org.apache.hadoop.fs.Path(uri)
    fs = target.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    stream = fs.create(target, True)
    try:
        stream.write(bytearray(data))
    finally:
        stream.close()


def remove(spark: SparkSession, uri: str) -> None:
    """Delete a directory the job wrote: local paths directly, anything else through Hadoop."""
    if is_local(uri):
        shutil.rmtree(local_path(uri), ignore_errors=True)
        return
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    target = jvm.org.apache.hadoop.fs.Path(uri)
    target.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(target, True)
