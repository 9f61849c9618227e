"""More of the inspector's JSON form: each nested member's path in a refusal (a configuration's
fields and servers, a cluster server, a LogPack's entries, a snapshot's fields), unexpected members
refused at every level, and application values shown as bytes whenever their JSON would not give the
same bytes back (NaN, a lone "hex" object) while UTF-8 text stays text."""

from __future__ import annotations

from typing import Any

import pytest

from garlicfarm.wire import Application, LogPack
from garlicfarm.wire.jsonform import JsonFormError, application_to_json, from_json
from tests.wire.test_jsonform_errors import HEADER, entry, snapshot

TOO_BIG = "expected an integer 0..18446744073709551615"
CONFIG = {"log_index": 0, "last_log_index": 0, "servers": []}


def config(**changes: Any) -> dict[str, Any]:
    return {**CONFIG, **changes}


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            {**HEADER, "entries": [{"term": 1, "value_type": "Application", "value": 1, "x": 0}]},
            "entries[0]: unexpected x",
        ),
        (
            {**HEADER, "entries": [{"term": 1, "value_type": 1, "value": 1}]},
            "entries[0].value_type: unknown value type 1",
        ),
        (
            {**HEADER, "entries": [{"term": 1, "value_type": [], "value": 1}]},
            "entries[0].value_type: unknown value type []",
        ),
        ({"type": {}}, "type: unknown message type {}"),
        (entry("Configuration", config(x=1)), "entries[0].value: unexpected x"),
        (entry("Configuration", config(log_index=-1)), f"entries[0].value.log_index: {TOO_BIG}"),
        (entry("Configuration", config(last_log_index=-1)), f"entries[0].value.last_log_index: {TOO_BIG}"),
        (
            entry("Configuration", config(servers=[{"id": 1, "endpoint": "a", "x": 1}])),
            "entries[0].value.servers[0]: unexpected x",
        ),
        (
            entry("Configuration", config(servers=[{"id": 1}])),
            "entries[0].value.servers[0]: missing endpoint",
        ),
        (
            entry("Configuration", config(servers=[{"id": 2**32, "endpoint": "a"}])),
            "entries[0].value.servers[0].id: expected an integer 0..4294967295",
        ),
        (entry("ClusterServer", {"id": -1}), "entries[0].value.id: expected an integer 0..4294967295"),
        (entry("ClusterServer", {"id": 1, "x": 2}), "entries[0].value: unexpected x"),
        (entry("LogPack", {"entries": 5}), "entries[0].value.entries: expected a list"),
        (
            entry("LogPack", {"entries": [{"term": -1, "value_type": "Application", "value": 1}]}),
            f"entries[0].value.entries[0].term: {TOO_BIG}",
        ),
        (snapshot(last_log_index=-1), f"entries[0].value.last_log_index: {TOO_BIG}"),
        (snapshot(last_log_term=-1), f"entries[0].value.last_log_term: {TOO_BIG}"),
        (snapshot(config=config(log_index=-1)), f"entries[0].value.config.log_index: {TOO_BIG}"),
        (snapshot(extra=1), "entries[0].value: unexpected extra"),
        (
            entry("Application", float("nan")),
            "entries[0].value: Out of range float values are not JSON compliant",
        ),
        ({"type": "AppendEntriesResponse", "source": 1}, "missing accepted, destination, next_index, term"),
    ],
)
def test_each_nested_member_is_named(obj: Any, message: str) -> None:
    with pytest.raises(JsonFormError) as raised:
        from_json(obj)
    assert str(raised.value).startswith(message), str(raised.value)
    path, _, _ = message.rpartition(": ") if ": " in message else ("", "", message)
    assert raised.value.path == path.split(": ")[0]


def test_a_cluster_server_may_omit_its_endpoint() -> None:
    message = from_json(entry("ClusterServer", {"id": 3}))
    assert message.entries[0].value.endpoint is None  # type: ignore[union-attr]


def test_a_logpack_without_base_offset_starts_at_0() -> None:
    message = from_json(entry("LogPack", {"entries": []}))
    pack = message.entries[0].value  # type: ignore[union-attr]
    assert isinstance(pack, LogPack) and pack.base_offset == 0


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        (b'"\xc3\xa9t\xc3\xa9"', "été"),  # UTF-8 text stays text, not \\u escapes
        (b'{"hex":"00"}', {"hex": b'{"hex":"00"}'.hex()}),  # a lone hex object is bytes
        (b"NaN", {"hex": b"NaN".hex()}),  # not JSON a peer may rely on
        (b'{"a":1}', {"a": 1}),
    ],
)
def test_application_values_are_shown_as_text_only_when_they_give_the_same_bytes_back(
    data: bytes, shown: Any
) -> None:
    assert application_to_json(data) == shown
    assert Application(data).data == data
