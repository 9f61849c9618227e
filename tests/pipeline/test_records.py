"""Checking archive lines (no Spark needed): the schema's own verdict, a reason for every reject."""

from __future__ import annotations

import json

import pytest

from garlicfarm.pipeline.records import Parsed, Reject, parse_line
from tests.app.records import record


def _line(index: int = 5, recorded: int = 1) -> bytes:
    return json.dumps({"index": index, "recorded": recorded, "record": record(2, 1_000_000)}).encode()


def test_a_valid_line_gives_the_record_and_its_bytes() -> None:
    parsed = parse_line(_line())
    assert isinstance(parsed, Parsed)
    assert (parsed.index, parsed.recorded, parsed.record.id, parsed.record.date) == (5, 1, 2, 1_000_000)
    assert json.loads(parsed.data)["cluster"] == "farm"


@pytest.mark.parametrize(
    ("line", "kind", "reason"),
    [
        (b"\xc3\x28", "encoding", "not UTF-8 at byte 0"),
        (b"{", "json", "not JSON"),
        (b"[" * 100_000, "json", "nested too deep"),
        (b"[]", "envelope", "a line is a JSON object"),
        (b'{"index":0,"recorded":1,"record":{}}', "envelope", "index"),
        (b'{"index":true,"recorded":1,"record":{}}', "envelope", "index"),
        (b'{"index":1,"recorded":-1,"record":{}}', "envelope", "recorded"),
        (b'{"index":1,"recorded":1}', "envelope", "record"),
        (b'{"index":1,"recorded":1,"record":{"cluster":5}}', "schema", "cluster"),
        (
            b'{"index":1,"recorded":1,"record":{"cluster":"farm","date":1,"id":1,"version":2}}',
            "schema",
            "version",
        ),
        (
            b'{"index":1,"recorded":1,"record":{"cluster":"farm","date":1,"id":1,"config":'
            + b'{"a":' * 20
            + b"1"
            + b"}" * 21
            + b"}",
            "schema",
            "nested deeper",
        ),
        (
            b'{"index":1,"recorded":1,"record":{"cluster":"farm","date":1,"id":1,"config":{"x":"'
            + b"z" * 70_000
            + b'"}}}',
            "schema",
            "bytes, more than",
        ),
        (
            b'{"index":1,"recorded":1,"record":{"cluster":"farm","date":1,"admin":{"action":"include",'
            b'"destination":"d"}}}',
            "admin",
            "admin command",
        ),
    ],
)
def test_bad_lines_are_rejected_with_a_kind_and_a_reason(line: bytes, kind: str, reason: str) -> None:
    result = parse_line(line)
    assert isinstance(result, Reject)
    assert result.kind == kind
    assert reason in result.reason


def test_a_lone_surrogate_escape_is_rejected_as_the_live_schema_rejects_it() -> None:
    raw = record(2, 1_000_000)
    raw["config"] = {"s": "\udcff"}
    line = json.dumps({"index": 1, "recorded": 1, "record": raw}).encode()  # ASCII: "\\udcff"
    parsed = parse_line(line)
    assert isinstance(parsed, Reject) and parsed.kind == "schema"
    assert parsed.reason == "config.s: holds a lone surrogate, not valid Unicode text"


def test_a_reject_naming_a_lone_surrogate_can_be_stored() -> None:
    """Regression (issue 18): a rejected line's cluster ``"\\ud800"`` could not go into the rejects
    table (not UTF-8 text) and failed the whole job."""
    from garlicfarm.pipeline.records import _checked

    checked = _checked(b'{"index":1,"recorded":1,"record":{"cluster":"\\ud800x","date":1,"id":0}}')
    assert checked[0] is False
    assert checked[1] == "\\ud800x"
    for value in checked:
        if isinstance(value, str):
            value.encode("utf-8")
