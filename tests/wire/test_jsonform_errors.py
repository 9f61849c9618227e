"""The inspector's JSON form refuses what describes no message with the path of the offending member
and what is wrong with it, exactly (garlicfarm.wire.jsonform.from_json): the message a user of
``garlicfarm inspect`` reads."""

from __future__ import annotations

from typing import Any

import pytest

from garlicfarm.wire import AppendEntriesRequest, LogPack
from garlicfarm.wire.jsonform import JsonFormError, from_json

HEADER = {
    "type": "AppendEntriesRequest",
    "source": 1,
    "destination": 2,
    "term": 3,
    "last_log_term": 0,
    "last_log_index": 0,
    "commit_index": 0,
}
RESPONSE = {"type": "AppendEntriesResponse", "source": 1, "destination": 2, "term": 3, "next_index": 1}


def entry(value_type: str, value: Any) -> dict[str, Any]:
    return {**HEADER, "entries": [{"term": 1, "value_type": value_type, "value": value}]}


def snapshot(**changes: Any) -> dict[str, Any]:
    value = {
        "last_log_index": 5,
        "last_log_term": 1,
        "config": {"log_index": 0, "last_log_index": 0, "servers": []},
        "offset": 0,
        "data_b64": "",
        "done": True,
    }
    return entry("SnapshotSyncRequest", {**value, **changes})


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([], "expected an object"),
        ({}, "missing type"),
        ({"type": "nope"}, "type: unknown message type 'nope'"),
        ({"type": 7}, "type: unknown message type 7"),
        (
            {k: v for k, v in HEADER.items() if k not in ("term", "commit_index")},
            "missing commit_index, term",
        ),
        ({**HEADER, "x": 1, "a": 2}, "unexpected a, x"),
        ({**RESPONSE, "accepted": True, "extra": 0}, "unexpected extra"),
        ({**RESPONSE, "accepted": 1}, "accepted: expected true or false"),
        ({**HEADER, "term": -1}, "term: expected an integer 0..18446744073709551615"),
        ({**HEADER, "source": 2**32}, "source: expected an integer 0..4294967295"),
        ({**HEADER, "source": True}, "source: expected an integer 0..4294967295"),
        ({**HEADER, "source": 1.0}, "source: expected an integer 0..4294967295"),
        ({**HEADER, "entries": {}}, "entries: expected a list"),
        ({**HEADER, "entries": [7]}, "entries[0]: expected an object"),
        (
            {**HEADER, "entries": [{"term": 1, "value_type": "x", "value": 1}]},
            "entries[0].value_type: unknown value type 'x'",
        ),
        (
            {**HEADER, "entries": [{"term": -2, "value_type": "Application", "value": 1}]},
            "entries[0].term: expected an integer 0..18446744073709551615",
        ),
        (entry("Application", {"hex": "zz"}), "entries[0].value.hex: expected a hex string"),
        (entry("Application", {"hex": 12}), "entries[0].value.hex: expected a hex string"),
        (
            entry("ClusterServer", {"id": 1, "endpoint": 5}),
            "entries[0].value.endpoint: expected a string or null",
        ),
        (
            entry("ClusterServer", {"id": 1, "endpoint": "\ud800"}),
            "entries[0].value.endpoint: not encodable as UTF-8",
        ),
        (entry("ClusterServer", {"endpoint": "x"}), "entries[0].value: missing id"),
        (
            entry(
                "Configuration",
                {"log_index": 0, "last_log_index": 0, "servers": [{"id": 1, "endpoint": None}]},
            ),
            "entries[0].value.servers[0].endpoint: expected a string",
        ),
        (
            entry("Configuration", {"log_index": 0, "last_log_index": 0, "servers": 3}),
            "entries[0].value.servers: expected a list",
        ),
        (
            entry("LogPack", {"entries": [], "base_offset": -1}),
            "entries[0].value.base_offset: expected an unsigned 64-bit integer",
        ),
        (
            entry("LogPack", {"entries": [], "base_offset": True}),
            "entries[0].value.base_offset: expected an unsigned 64-bit integer",
        ),
        (
            entry("LogPack", {"entries": [], "base_offset": 2**64}),
            "entries[0].value.base_offset: expected an unsigned 64-bit integer",
        ),
        (entry("LogPack", {"entries": [], "other": 1}), "entries[0].value: unexpected other"),
        (snapshot(done="yes"), "entries[0].value.done: expected true or false"),
        (snapshot(data_b64="%%"), "entries[0].value.data_b64: expected a base64 string"),
        (snapshot(data_b64=7), "entries[0].value.data_b64: expected a base64 string"),
        (snapshot(offset=-1), "entries[0].value.offset: expected an integer 0..18446744073709551615"),
        (snapshot(config=[]), "entries[0].value.config: expected an object"),
    ],
)
def test_what_is_wrong_and_where(obj: Any, message: str) -> None:
    with pytest.raises(JsonFormError) as raised:
        from_json(obj)
    assert str(raised.value) == message


def test_the_largest_values_are_taken() -> None:
    message = from_json({**HEADER, "source": 2**32 - 1, "term": 2**64 - 1})
    assert message.source == 2**32 - 1 and message.term == 2**64 - 1
    pack = from_json(entry("LogPack", {"entries": [], "base_offset": 2**64 - 1}))
    assert isinstance(pack, AppendEntriesRequest) and isinstance(pack.entries[0].value, LogPack)
    assert pack.entries[0].value.base_offset == 2**64 - 1


def test_an_optional_member_alone_is_not_unexpected() -> None:
    message = from_json({**HEADER, "entries": []})
    assert isinstance(message, AppendEntriesRequest) and message.entries == ()
