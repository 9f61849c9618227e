"""Checking archive lines in the JVM: the schema's verdict as Spark expressions, for the common case.

A line is *clean* when the JVM can vouch for it alone:

1. ``from_json`` with the archive's exact schema (:data:`LINE_TYPE`) and ``to_json`` of the result give
   back the line's very bytes. The farm's archive writes every line in that canonical form (keys
   sorted, every field present, compact), so real lines pass; and the equality rules out, without any
   further check, what the JVM's JSON reader would gloss over: bytes that are not UTF-8, a lone
   surrogate (``"\\ud800"`` is re-written differently), a repeated key (re-written once), a field the
   schema does not know (an admin command, a nested ``config``), a number of the wrong type, a float, a
   number too large for a long (the field comes back null), whitespace, nesting deeper than the schema;
2. the schema's ranges, enumerations and sizes hold (:func:`_record_checks`), as Spark expressions.

Every other line goes through the schema's own Python checker (:func:`records.python_checked`), which
gives the exact verdict and reason. A clean line is therefore one the live schema accepts, with the
same fields: tests/pipeline/test_native.py holds the two paths to the same verdict on hostile lines.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the usual name
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from garlicfarm.app.schema import (
    MAX_BLOCKLIST,
    MAX_DATE,
    MAX_DESTINATIONS,
    MAX_INT,
    MAX_RECORD_BYTES,
    MAX_STRING,
    PUBLISH_CONFIGS,
    SCHEMA_VERSION,
)


def _struct(fields: dict[str, DataType]) -> StructType:
    # sorted: the archive writes keys sorted, and to_json writes a struct's fields in their order
    return StructType([StructField(name, fields[name], True) for name in sorted(fields)])


_INT = LongType()
_STR = StringType()

DESTINATION_TYPE = _struct(
    {
        "bandwidthConfigured": _INT,
        "bandwidthCurrent": _INT,
        "blocklist": ArrayType(_STR, True),
        "connectionsConfigured": _INT,
        "connectionsCurrent": _INT,
        "destination": _STR,
        "tunnelsConfigured": _INT,
        "tunnelsCurrent": _INT,
        "uptime": _INT,
    }
)
META_TYPE = _struct(
    {
        "destination": _STR,
        "lastPublishedLS": _STR,
        "lastPublishedTime": _INT,
        "publishConfig": _STR,
        "publishing": BooleanType(),
    }
)
ROUTER_TYPE = _struct(
    {
        "bandwidthConfigured": _INT,
        "bandwidthCurrent": _INT,
        "exploratoryTunnels": _INT,
        "jobLag": _INT,
        "lastPublishedRI": _STR,
        "netStatus": _STR,
        "participatingTunnels": _INT,
        "uptime": _INT,
    }
)
RECORD_TYPE = _struct(
    {
        "cluster": _STR,
        # free-form in the schema; only the common flat form is vouched for here, the rest is checked
        # in Python (a nested value comes back as a string, and the bytes differ)
        "config": MapType(_STR, _STR, True),
        "date": _INT,
        "destinations": ArrayType(DESTINATION_TYPE, True),
        "id": _INT,
        "meta": META_TYPE,
        "router": ROUTER_TYPE,
        "version": _INT,
    }
)
LINE_TYPE = _struct({"index": _INT, "record": RECORD_TYPE, "recorded": _INT})

#: null fields are written, as the archive writes them
_TO_JSON = {"ignoreNullFields": "false"}


def _between(column: Column, low: int, high: int) -> Column:
    return column.isNotNull() & (column >= low) & (column <= high)


def _number(column: Column) -> Column:
    return _between(column, 0, MAX_INT)


def _text(column: Column) -> Column:
    return F.length(column) <= MAX_STRING


def _optional_text(column: Column) -> Column:
    return column.isNull() | _text(column)


def _numbers(struct: StructType) -> list[str]:
    return [field.name for field in struct.fields if isinstance(field.dataType, LongType)]


def _destination_checks(d: Column) -> Column:
    numbers = [_number(d[name]) for name in _numbers(DESTINATION_TYPE)]
    blocklist = d["blocklist"]
    return (
        d.isNotNull()
        & d["destination"].isNotNull()
        & _text(d["destination"])
        & blocklist.isNotNull()
        & (F.size(blocklist) <= MAX_BLOCKLIST)
        & F.forall(blocklist, lambda item: item.isNotNull() & _text(item))
        & _all(numbers)
    )


def _all(checks: list[Column]) -> Column:
    out = checks[0]
    for check in checks[1:]:
        out = out & check
    return out


def _record_checks(line: Column) -> Column:
    """What ``schema._status`` and the envelope check demand of a line the JVM read exactly."""
    r = line["record"]
    meta, router = r["meta"], r["router"]
    router_numbers = [_number(router[name]) for name in _numbers(ROUTER_TYPE)]
    return _all(
        [
            _between(line["index"], 1, MAX_INT),
            _between(line["recorded"], 1, 2**31 - 1),
            r.isNotNull(),
            r["cluster"].isNotNull(),
            r["config"].isNotNull(),
            _between(r["date"], 0, MAX_DATE),
            _between(r["id"], 1, 2**31 - 1),
            r["version"].isNotNull() & (r["version"] == SCHEMA_VERSION),
            r["destinations"].isNotNull(),
            F.size(r["destinations"]) <= MAX_DESTINATIONS,
            F.forall(r["destinations"], _destination_checks),
            meta.isNotNull(),
            _optional_text(meta["destination"]),
            _optional_text(meta["lastPublishedLS"]),
            _between(meta["lastPublishedTime"], 0, MAX_DATE),
            meta["publishConfig"].isNull() | meta["publishConfig"].isin(*PUBLISH_CONFIGS),
            meta["publishing"].isNotNull(),
            router.isNotNull(),
            _optional_text(router["netStatus"]),
            _optional_text(router["lastPublishedRI"]),
            *router_numbers,
        ]
    )


def classify(lines: DataFrame) -> DataFrame:
    """``lines`` (a binary ``value`` and anything else) with ``line``, the struct the JVM read, and
    ``clean``: whether the JVM alone vouches for the line (see the module's text)."""
    text = F.col("value").cast("string")
    read = F.from_json(text, LINE_TYPE, {"mode": "PERMISSIVE"})
    with_line = lines.withColumn("line", read)
    again = F.to_json(F.col("line"), _TO_JSON).cast("binary")
    clean = (
        (F.octet_length("value") <= MAX_RECORD_BYTES)
        & F.col("line").isNotNull()
        & F.coalesce(again == F.col("value"), F.lit(False))
        & F.coalesce(_record_checks(F.col("line")), F.lit(False))
    )
    return with_line.withColumn("clean", clean)


def clean_columns() -> list[Column]:
    """The parsed columns (:data:`records.VALID_FIELDS`) of a clean line."""
    r = F.col("line.record")
    router = r["router"]
    net_status = F.coalesce(F.nullif(router["netStatus"], F.lit("")), F.lit("UNKNOWN"))
    return [
        F.lit(True).alias("ok"),
        r["cluster"].alias("cluster"),
        F.col("line.index").alias("index"),
        F.col("line.recorded").cast("int").alias("recorded"),
        r["id"].cast("int").alias("id"),
        r["date"].alias("date"),
        router["uptime"].alias("uptime"),
        net_status.alias("net_status"),
        (~net_status.startswith("ERROR")).alias("healthy"),
        router["participatingTunnels"].alias("tunnels"),
        router["bandwidthCurrent"].alias("bandwidth"),
        router["jobLag"].alias("job_lag"),
        F.coalesce(r["meta"]["publishConfig"], F.lit("auto")).alias("publish_config"),
        F.size(r["destinations"]).cast("int").alias("destinations"),
        _record_bytes(F.col("value"), F.col("line.index"), F.col("line.recorded")).alias("record"),
    ]


def _record_bytes(value: Column, index: Column, recorded: Column) -> Column:
    """The record's bytes inside a clean line (canonical: ``{"index":I,"record":{...},"recorded":R}``),
    cut out rather than written again."""
    start = len('{"index":') + F.length(index.cast("string")) + len(',"record":') + 1
    suffix = len(',"recorded":') + F.length(recorded.cast("string")) + len("}")
    return F.substring(value, start, F.octet_length(value) - (start - 1) - suffix)
