"""Reading the archive: every line checked by the schema's own code, bad lines set aside, never fatal.

A line is ``{"index", "recorded", "record"}``. The record goes through
:func:`garlicfarm.app.schema.parse_entry` exactly as a committed entry does on a live server, so the
pipeline rejects what the farm rejects, for the same reason. Lines are read as bytes (Spark's text
source keeps a line's raw bytes; the cast to binary hands them over untouched), so bytes that are not
UTF-8 are caught here rather than silently replaced.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TypeGuard

import attrs
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
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

#: how much of a rejected line the rejects table keeps
REJECT_LINE_CHARS = 300

#: reject kinds: where in a line the problem is
ENCODING, JSON, ENVELOPE, SCHEMA, ADMIN = "encoding", "json", "envelope", "schema", "admin"

PARSED_SCHEMA = StructType(
    [
        StructField("ok", BooleanType(), False),
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
        StructField("partition", StringType(), True),
        StructField("file", StringType(), True),
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


def _shown(line: bytes) -> str:
    return line[:REJECT_LINE_CHARS].decode("utf-8", "backslashreplace")


def parse_batches(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """``mapInPandas`` body: columns ``value`` (bytes), ``partition``, ``file`` to :data:`PARSED_SCHEMA`."""
    names = [f.name for f in PARSED_SCHEMA.fields]
    for batch in batches:
        columns: dict[str, list[Any]] = {name: [] for name in names}
        rows = zip(batch["value"].tolist(), batch["partition"].tolist(), batch["file"].tolist(), strict=True)
        for value, partition, file in rows:
            line = bytes(value)
            result = parse_line(line)
            if isinstance(result, Parsed):
                record = result.record
                router = record.router
                row: tuple[Any, ...] = (
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
                    None,
                    None,
                )
            else:
                row = (False, result.cluster, result.index, *[None] * 12)
                row += (result.kind, result.reason, _shown(line), partition, file)
            for name, item in zip(names, row, strict=True):
                columns[name].append(item)
        yield _frame(columns)


def _frame(columns: dict[str, list[Any]]) -> pd.DataFrame:
    # Nullable pandas dtypes: a plain int column with a null would become float and lose digits.
    data: dict[str, Any] = {}
    for field in PARSED_SCHEMA.fields:
        values = columns[field.name]
        if isinstance(field.dataType, IntegerType | LongType):
            data[field.name] = pd.array(values, dtype="Int64")
        elif isinstance(field.dataType, BooleanType):
            data[field.name] = pd.array(values, dtype="boolean")
        else:
            data[field.name] = pd.Series(values, dtype=object)
    return pd.DataFrame(data)


def read_archive(spark: SparkSession, uri: str) -> DataFrame:
    """Every line of the archive under ``uri``, parsed (lazily): valid records and rejects alike."""
    # exactly the archive's files (node-<id>.jsonl, compressed or not): not a .jsonl.bak beside them
    lines = spark.read.option("pathGlobFilter", "*.{jsonl,jsonl.gz}").text(uri)
    partition = F.col("date").cast("string") if "date" in lines.columns else F.lit(None).cast("string")
    return lines.select(
        F.col("value").cast("binary").alias("value"),
        partition.alias("partition"),
        F.col("_metadata.file_path").alias("file"),
    ).mapInPandas(parse_batches, PARSED_SCHEMA)
