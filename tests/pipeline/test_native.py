"""The JVM's check of archive lines against the live schema's (issue 18): the same verdict, the same
fields, on hostile lines; and the farm's own lines never need Python."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from garlicfarm.app.schema import MAX_DATE, MAX_INT, MAX_STRING
from garlicfarm.pipeline.synth import SynthSettings, generate

# ------------------------------------------------------------------------------------------ lines


def _ints(high: int) -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, high), st.sampled_from([0, 1, high]))


_TEXTS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "OK", "ERROR_X", "é" * MAX_STRING, "😀" * MAX_STRING, "a\x1fb", "/", "\u2028"]),
)
_NUMBER = _ints(MAX_INT)
_OPTIONAL_TEXT = st.one_of(st.none(), _TEXTS)

_DESTINATION = st.fixed_dictionaries(
    {
        "bandwidthConfigured": _NUMBER,
        "bandwidthCurrent": _NUMBER,
        "blocklist": st.lists(_TEXTS, max_size=2),
        "connectionsConfigured": _NUMBER,
        "connectionsCurrent": _NUMBER,
        "destination": _TEXTS,
        "tunnelsConfigured": _NUMBER,
        "tunnelsCurrent": _NUMBER,
        "uptime": _NUMBER,
    }
)

#: a record the live schema accepts, in the archive's canonical form
_RECORD = st.fixed_dictionaries(
    {
        "cluster": st.sampled_from(["farm-000", "f", ""]),
        "config": st.dictionaries(_TEXTS, st.one_of(_TEXTS, st.none()), max_size=2),
        "date": _ints(MAX_DATE),
        "destinations": st.lists(_DESTINATION, max_size=2),
        "id": st.one_of(st.integers(1, 2**31 - 1), st.sampled_from([1, 2**31 - 1])),
        "meta": st.fixed_dictionaries(
            {
                "destination": _OPTIONAL_TEXT,
                "lastPublishedLS": _OPTIONAL_TEXT,
                "lastPublishedTime": _ints(MAX_DATE),
                "publishConfig": st.sampled_from(["on", "off", "auto", None]),
                "publishing": st.booleans(),
            }
        ),
        "router": st.fixed_dictionaries(
            {
                "bandwidthConfigured": _NUMBER,
                "bandwidthCurrent": _NUMBER,
                "exploratoryTunnels": _NUMBER,
                "jobLag": _NUMBER,
                "lastPublishedRI": _OPTIONAL_TEXT,
                "netStatus": _OPTIONAL_TEXT,
                "participatingTunnels": _NUMBER,
                "uptime": _NUMBER,
            }
        ),
        "version": st.just(1),
    }
)

#: what a corrupted field holds instead
_HOSTILE: st.SearchStrategy[Any] = st.sampled_from(
    [
        None,
        -1,
        0,
        1.5,
        1e3,
        "7",
        True,
        [],
        {},
        [None],
        {"a": {"b": 1}},
        2,
        MAX_INT + 1,
        MAX_DATE + 1,
        2**31,
        2**63,
        2**64,
        "\ud800",
        "x" * (MAX_STRING + 1),
        "sometimes",
        [{}] * 65,
        ["x"] * 257,
    ]
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path] if path else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*path, i))
    return out


# textual changes the JVM's reader would gloss over
_EDITS = [
    *[lambda s: s] * 10,
    lambda s: s.replace('"date":', '"date":0,"date":', 1),  # a repeated key
    lambda s: s.replace('"id":', '"id" : ', 1),  # whitespace
    lambda s: s.replace("a", "\\u0061", 1),  # an escape that means the same
    lambda s: s.replace('"cluster":"', '"cluster":"\\ud800', 1),  # a lone surrogate
    lambda s: s.replace('"version":', '"admin":{},"version":', 1),  # a key the schema does not know
    lambda s: s.replace('"recorded":', '"recorded":1,"x":', 1),
    lambda s: s[: len(s) // 2],
    lambda s: s.replace('"index":', '"index":1.0,"i":', 1),
]


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    """An archive line: often exactly what the farm writes, else with a field or two corrupted, left
    out, or written in a way the JVM's reader would gloss over."""
    envelope: dict[str, Any] = {
        "index": draw(st.integers(1, MAX_INT)),
        "record": copy.deepcopy(draw(_RECORD)),  # changed below: not hypothesis's own copy
        "recorded": draw(st.integers(1, 2**31 - 1)),
    }
    for _ in range(draw(st.integers(0, 2))):
        *parent, key = draw(st.sampled_from(_paths(envelope)))
        holder = envelope
        for step in parent:
            holder = holder[step]
        if isinstance(holder, dict) and draw(st.booleans()):
            del holder[key]
        else:
            holder[key] = copy.deepcopy(draw(_HOSTILE))
    text = json.dumps(envelope, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    text = draw(st.sampled_from(_EDITS))(text)
    data: bytes = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 20)) == 0:
        data = data.replace(b"a", b"\xff", 1)  # not UTF-8
    return data


# ------------------------------------------------------------------------------------------ checks


def _both_paths(spark: Any, data: list[bytes]) -> list[tuple[bool, tuple[Any, ...], tuple[Any, ...]]]:
    """For each line: the JVM's ``clean``, read_archive's fields, the Python checker's fields."""
    from pyspark.sql import functions as F  # noqa: N812

    from garlicfarm.pipeline import native
    from garlicfarm.pipeline.records import CHECKED_SCHEMA, _checked, read_archive

    with tempfile.TemporaryDirectory() as directory:
        day = Path(directory, "date=2026-01-01")
        day.mkdir()
        (day / "node-1.jsonl").write_bytes(b"".join(line + b"\n" for line in data))
        rows = read_archive(spark, directory).orderBy("block", "row").collect()
        text = spark.read.text(directory).select(F.col("value").cast("binary").alias("value"))
        clean = [row.clean for row in native.classify(text).select("clean").collect()]
    names = CHECKED_SCHEMA.fieldNames()
    assert len(rows) == len(clean) == len(data)
    out = []
    for line, row, vouched in zip(data, rows, clean, strict=True):
        got = tuple(bytes(v) if isinstance(v, bytearray) else v for v in (row[name] for name in names))
        out.append((vouched, got, _checked(line)))
    return out


@settings(
    # each example costs two Spark jobs (~6 s each); 60 lines is near the most hypothesis generates in
    # one example. Every run draws other lines: runs together cover what one long run would.
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(st.lists(lines(), min_size=60, max_size=60))
def test_the_jvm_and_the_schema_give_one_verdict_on_hostile_lines(spark: Any, data: list[bytes]) -> None:
    for vouched, got, expected in _both_paths(spark, data):
        assert got == expected
        if vouched:
            assert expected[0] is True  # the JVM never vouches for a line the schema rejects


def test_the_farms_own_lines_never_need_python(spark: Any, tmp_path: Path) -> None:
    result = generate(
        SynthSettings(farms=2, members=3, days=1, interval_s=600, seed=5, bad_share=0.1), tmp_path
    )
    data = [line for path in sorted(tmp_path.rglob("*.jsonl")) for line in path.read_bytes().splitlines()]
    checked = _both_paths(spark, data)
    assert all(got == expected for _, got, expected in checked)
    # every good line (the archive's canonical form) is vouched for by the JVM; every bad one is not
    assert sum(vouched for vouched, _, _ in checked) == result.records
    assert sum(not expected[0] for _, _, expected in checked) == result.bad > 0
