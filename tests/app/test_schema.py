"""Status records: what passes, and every way to fail — the same verdict on every server."""

from __future__ import annotations

import contextlib
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from garlicfarm.app.schema import (
    MAX_BLOCKLIST,
    MAX_DATE,
    MAX_DEPTH,
    MAX_DESTINATIONS,
    MAX_RECORD_BYTES,
    MAX_STRING,
    AdminCommand,
    SchemaError,
    StatusRecord,
    ignored_reason,
    parse_entry,
    parse_json,
    record_from_json,
    record_to_json,
)
from tests.app.records import record


def parse(value: object) -> object:
    return parse_entry(json.dumps(value).encode(), "farm")


def test_a_full_record_parses_and_round_trips() -> None:
    parsed = parse(record(3, 1000))
    assert isinstance(parsed, StatusRecord)
    assert (parsed.id, parsed.date, parsed.router.netStatus) == (3, 1000, "OK")
    assert record_from_json(json.loads(json.dumps(record_to_json(parsed)))) == parsed


def test_optional_sections_default() -> None:
    parsed = parse({"cluster": "farm", "date": 5, "id": 1})
    assert isinstance(parsed, StatusRecord)
    assert parsed.meta.publishConfig == "auto" and parsed.destinations == ()


def test_admin_commands() -> None:
    parsed = parse({"cluster": "farm", "date": 9, "admin": {"action": "exclude", "destination": "abc"}})
    assert parsed == AdminCommand("farm", 9, "exclude", "abc")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([1, 2], "a record is a JSON object"),
        ({"cluster": "other", "date": 1, "id": 1}, "is not this farm"),
        ({"cluster": "farm", "id": 1}, "date: missing"),
        ({"cluster": "farm", "date": "yesterday", "id": 1}, "date: must be an integer"),
        ({"cluster": "farm", "date": -5, "id": 1}, "date: must be an integer"),
        ({"cluster": "farm", "date": 1, "id": 0}, "id: 0 is not a server id"),
        ({"cluster": "farm", "date": 1, "id": True}, "id: must be an integer"),
        ({"cluster": "farm", "date": 1, "id": 1, "version": 2}, "version: 2"),
        ({"cluster": "farm", "date": 1, "id": 1, "meta": []}, "meta: must be an object"),
        ({"cluster": "farm", "date": 1, "id": 1, "meta": {"publishConfig": "always"}}, "publishConfig"),
        ({"cluster": "farm", "date": 1, "id": 1, "meta": {"publishing": "yes"}}, "publishing"),
        ({"cluster": "farm", "date": 1, "id": 1, "router": {"uptime": 1.5}}, "router.uptime"),
        ({"cluster": "farm", "date": 1, "id": 1, "destinations": {}}, "destinations: must be a list"),
        ({"cluster": "farm", "date": 1, "id": 1, "destinations": [{"destination": "d"}] * 65}, "65 entries"),
        (
            {"cluster": "farm", "date": 1, "id": 1, "destinations": [{}]},
            "destinations[0].destination: missing",
        ),
        (
            {
                "cluster": "farm",
                "date": 1,
                "id": 1,
                "destinations": [{"destination": "d", "blocklist": ["x"] * 300}],
            },
            "blocklist",
        ),
        ({"cluster": "farm", "date": 1, "admin": {"action": "nuke", "destination": "d"}}, "admin.action"),
        (
            {
                "cluster": "farm",
                "date": 1,
                "id": 1,
                "config": {"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}},
            },
            "nested",
        ),
    ],
)
def test_bad_records(value: object, message: str) -> None:
    with pytest.raises(SchemaError, match=re.escape(message)):
        parse(value)


def test_hostile_bytes() -> None:
    with pytest.raises(SchemaError, match="not UTF-8 at byte 1"):
        parse_entry(b"{\xff}", "farm")
    with pytest.raises(SchemaError, match="not JSON"):
        parse_entry(b"{", "farm")
    with pytest.raises(SchemaError, match="nested deeper"):
        parse_entry(b"[" * 20_000 + b"]" * 20_000, "farm")
    with pytest.raises(SchemaError, match="more than 65536"):
        parse_entry(b" " * 70_000, "farm")
    with pytest.raises(SchemaError, match="nested deeper"):
        parse_entry(b'{"cluster":"farm","date":1,"id":1,"config":' + b"[" * 60 + b"]" * 60 + b"}", "farm")


@given(st.binary(max_size=300))
def test_any_bytes_give_a_record_or_a_schema_error(data: bytes) -> None:
    with contextlib.suppress(SchemaError):
        parse_entry(data, "farm")


@pytest.mark.parametrize(
    "digest",
    ["a" * 65, "a" * 64 + "0", "a" * 64 + "\n", "a" * 64 + " ", "a" * 63, "A" * 64, "g" + "a" * 63],
)
def test_a_log_digest_is_64_lowercase_hex_digits_and_nothing_after(digest: str) -> None:
    value = {"cluster": "farm", "date": 1, "id": 1, "log": {"index": 3, "digest": digest}}
    with pytest.raises(SchemaError, match=re.escape("log.digest: must be 64 lowercase hex digits")):
        parse(value)


def test_a_log_digest_of_64_hex_digits_is_kept() -> None:
    parsed = parse({"cluster": "farm", "date": 1, "id": 1, "log": {"index": 3, "digest": "0f" * 32}})
    assert isinstance(parsed, StatusRecord)
    assert parsed.log is not None and (parsed.log.index, parsed.log.digest) == (3, "0f" * 32)


@pytest.mark.parametrize(
    ("admin", "date", "says"),
    [
        ({"action": 5, "destination": "d"}, 5, "admin.action: must be a string"),
        ({"destination": "d"}, 5, "admin.action: missing"),
        ({"action": "exclude"}, 5, "admin.destination: missing"),
        ({"action": "exclude", "destination": 7}, 5, "admin.destination: must be a string"),
        ({"action": "exclude", "destination": "d"}, None, "date: missing"),
    ],
)
def test_an_admin_commands_refusal_names_its_field(
    admin: dict[str, object], date: int | None, says: str
) -> None:
    command = {"cluster": "farm", "id": 1, "admin": admin, **({} if date is None else {"date": date})}
    with pytest.raises(SchemaError) as raised:
        parse(command)
    assert str(raised.value).startswith(says)


def test_nesting_up_to_the_bound_is_read_and_one_deeper_is_not() -> None:
    assert parse_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    # at the bound, what is wrong there is named (not the depth)
    surrogate = b"[" * (MAX_DEPTH - 1) + b'"\\ud800"' + b"]" * (MAX_DEPTH - 1)
    with pytest.raises(SchemaError, match=rf"^(\[0\]){{{MAX_DEPTH - 1}}}: holds a lone surrogate"):
        parse_json(surrogate)
    with pytest.raises(SchemaError, match=f"^nested deeper than {MAX_DEPTH}$"):
        parse_json(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))


def test_objects_nested_up_to_the_bound_are_read_and_one_deeper_are_not() -> None:
    def nested(depth: int, leaf: bytes = b"1") -> bytes:
        return b'{"k":' * (depth - 1) + leaf + b"}" * (depth - 1)

    assert parse_json(nested(MAX_DEPTH)) is not None
    with pytest.raises(SchemaError, match=rf"^k(\.k){{{MAX_DEPTH - 2}}}: holds a lone surrogate"):
        parse_json(nested(MAX_DEPTH, b'"\\ud800"'))
    with pytest.raises(SchemaError, match=f"^nested deeper than {MAX_DEPTH}$"):
        parse_json(nested(MAX_DEPTH + 1))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (b'"\\ud800"', "value: holds a lone surrogate, not valid Unicode text"),
        (b'{"meta": {"x": "a\\udfff"}}', "meta.x: holds a lone surrogate, not valid Unicode text"),
        (b'{"list": [1, "\\ud800"]}', "list[1]: holds a lone surrogate, not valid Unicode text"),
        (b'{"meta": {"\\ud800k": 1}}', "meta: key '\\ud800k' holds a lone surrogate"),
    ],
)
def test_a_lone_surrogate_is_named_by_its_path(text: bytes, says: str) -> None:
    with pytest.raises(SchemaError) as raised:
        parse_json(text)
    assert str(raised.value) == says


def test_a_long_key_is_shown_by_its_first_64_characters() -> None:
    key = "k" * 100 + "\\ud800"
    with pytest.raises(SchemaError) as raised:
        parse_json(b'{"%s": 1}' % key.encode())
    assert str(raised.value) == f": key '{'k' * 64}' holds a lone surrogate"


def test_a_records_config_survives_the_round_trip() -> None:
    parsed = parse({**record(3, 1000), "config": {"tunnels": {"length": 3}}})
    assert isinstance(parsed, StatusRecord)
    assert record_from_json(json.loads(json.dumps(record_to_json(parsed)))).config == {
        "tunnels": {"length": 3}
    }


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json", None),  # refused outright by the leader, never applied
        (json.dumps(record(3, 1000)).encode(), None),  # this farm's
        (
            json.dumps({**record(3, 1000), "cluster": "other"}).encode(),
            "cluster: 'other' is not this farm ('farm')",
        ),
        (b"[1, 2]", "a record is a JSON object"),
    ],
)
def test_what_the_application_will_ignore_is_said(data: bytes, reason: str | None) -> None:
    assert ignored_reason(data, "farm") == reason


@pytest.mark.parametrize(
    ("section", "field", "value", "says"),
    [
        ("meta", "destination", 5, "meta.destination: must be a string"),
        ("meta", "lastPublishedLS", 5, "meta.lastPublishedLS: must be a string"),
        ("meta", "lastPublishedTime", "x", "meta.lastPublishedTime: must be an integer"),
        ("router", "bandwidthCurrent", "x", "router.bandwidthCurrent: must be an integer"),
        ("router", "uptime", "x", "router.uptime: must be an integer"),
        ("router", "jobLag", "x", "router.jobLag: must be an integer"),
        ("router", "exploratoryTunnels", "x", "router.exploratoryTunnels: must be an integer"),
        ("router", "participatingTunnels", "x", "router.participatingTunnels: must be an integer"),
        ("router", "bandwidthConfigured", "x", "router.bandwidthConfigured: must be an integer"),
        ("router", "netStatus", 5, "router.netStatus: must be a string"),
        ("router", "lastPublishedRI", 5, "router.lastPublishedRI: must be a string"),
        ("meta", "publishing", "yes", "meta.publishing: must be true or false"),
    ],
)
def test_a_bad_field_is_named_by_its_path(section: str, field: str, value: object, says: str) -> None:
    bad = record(3, 1000)
    bad[section][field] = value
    with pytest.raises(SchemaError) as raised:
        parse(bad)
    assert str(raised.value).startswith(says)


def test_a_string_may_hold_max_string_characters_and_not_one_more() -> None:
    at_bound = record(3, 1000)
    at_bound["meta"]["destination"] = "d" * MAX_STRING
    assert isinstance(parse(at_bound), StatusRecord)
    at_bound["meta"]["destination"] = "d" * (MAX_STRING + 1)
    with pytest.raises(SchemaError, match=f"^meta.destination: must be a string of at most {MAX_STRING}"):
        parse(at_bound)


def test_a_byte_order_mark_is_refused_as_json_says_it() -> None:
    with pytest.raises(SchemaError) as raised:
        parse_json(b"\xef\xbb\xbf{}")
    assert (
        str(raised.value)
        == "not JSON: Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"
    )


BASE = {"cluster": "farm", "date": 1, "id": 1}


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"version": "1"}, "version: must be an integer from 0 to 2^53"),
        ({"config": []}, "config: must be an object"),
        ({"destinations": {}}, "destinations: must be a list"),
        ({"meta": {"publishConfig": 5}}, "meta.publishConfig: must be a string"),
        ({"log": {"index": 1, "digest": "x"}}, "log.digest: must be 64 lowercase hex digits (a SHA-256)"),
        ({"destinations": [5]}, "destinations[0]: must be an object"),
        (
            {"destinations": [{"destination": "d", "blocklist": [5]}]},
            "destinations[0].blocklist[0]: must be a string",
        ),
        (
            {"destinations": [{"destination": "d", "blocklist": ["b" * (MAX_STRING + 1)]}]},
            "destinations[0].blocklist[0]: must be a string",
        ),
        (
            {"destinations": [{"destination": "d", "blocklist": ["b"] * (MAX_BLOCKLIST + 1)}]},
            f"destinations[0].blocklist: must be a list of at most {MAX_BLOCKLIST} strings",
        ),
        (
            {"destinations": [{"destination": "d", "uptime": -1}]},
            "destinations[0].uptime: must be an integer",
        ),
        ({"date": MAX_DATE + 1}, f"date: {MAX_DATE + 1} ms is after the year 9999"),
    ],
)
def test_each_refusal_in_its_words(extra: dict[str, object], says: str) -> None:
    with pytest.raises(SchemaError) as raised:
        parse({**BASE, **extra})
    assert str(raised.value).startswith(says)


def test_each_bound_of_a_record_holds_at_itself() -> None:
    leaf = {"destination": "d", "blocklist": ["b" * MAX_STRING] + ["b"] * (MAX_BLOCKLIST - 1)}
    others = [{"destination": f"d{i}"} for i in range(MAX_DESTINATIONS - 1)]
    parsed = parse({**BASE, "date": MAX_DATE, "destinations": [leaf, *others]})
    assert isinstance(parsed, StatusRecord)
    assert parsed.date == MAX_DATE and len(parsed.destinations[0].blocklist) == MAX_BLOCKLIST
    assert len(parsed.destinations) == MAX_DESTINATIONS


def test_a_records_json_holds_its_destinations_with_their_blocklists_as_lists() -> None:
    parsed = parse({**BASE, "destinations": [{"destination": "d", "blocklist": ["b", "c"]}]})
    assert isinstance(parsed, StatusRecord)
    out = record_to_json(parsed)
    assert out["destinations"][0]["blocklist"] == ["b", "c"]
    assert type(out["destinations"][0]["blocklist"]) is list and type(out["destinations"]) is list


def test_integers_ids_and_the_record_size_hold_at_their_bounds_and_not_one_past() -> None:
    big = {**BASE, "router": {"uptime": 2**53}}
    parsed = parse(big)
    assert isinstance(parsed, StatusRecord) and parsed.router.uptime == 2**53
    with pytest.raises(SchemaError, match=r"^router.uptime: must be an integer from 0 to 2\^53"):
        parse({**BASE, "router": {"uptime": 2**53 + 1}})
    last = parse({**BASE, "id": 2**31 - 1})
    assert isinstance(last, StatusRecord) and last.id == 2**31 - 1
    with pytest.raises(SchemaError, match=rf"^id: {2**31} is not a server id$"):
        parse({**BASE, "id": 2**31})
    text = json.dumps(BASE).encode()
    padded = text[:-1] + b" " * (MAX_RECORD_BYTES - len(text)) + b"}"
    assert len(padded) == MAX_RECORD_BYTES and isinstance(parse_entry(padded, "farm"), StatusRecord)
    with pytest.raises(
        SchemaError, match=f"^record is {MAX_RECORD_BYTES + 1} bytes, more than {MAX_RECORD_BYTES}$"
    ):
        parse_entry(padded + b" ", "farm")


def test_an_empty_net_status_reads_as_unknown() -> None:
    parsed = parse({**BASE, "router": {"netStatus": ""}})
    assert isinstance(parsed, StatusRecord) and parsed.router.netStatus == "UNKNOWN"
