"""Hostile status records against the apply path (property tests).

Apply is total and deterministic: whatever a committed Application entry holds — any Unicode with
lone surrogates, extreme integers and dates, deep nesting, repeated keys — ``apply`` never raises,
two FarmStates fed the same entries give byte-identical snapshots, a snapshot restores to the same
state, and the pipeline's archive reader gives the same verdict as the live schema.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from garlicfarm.app.schema import (
    MAX_DATE,
    SchemaError,
    StatusRecord,
    parse_accepted,
    parse_entry,
    record_to_json,
)
from garlicfarm.app.state import FarmState
from garlicfarm.pipeline.records import Parsed, parse_line
from garlicfarm.wire import Application, ClusterServer, Configuration, LogEntry

CLUSTER = "farm"
surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
texts = st.one_of(st.text(max_size=12), st.text(alphabet=surrogates, min_size=1, max_size=2))
integers = st.one_of(
    st.integers(-2, 5),
    st.sampled_from([2**31 - 1, 2**31, 2**53, 2**53 + 1, 2**63, 2**64, MAX_DATE, MAX_DATE + 1, 10**30]),
    st.integers(1_600_000_000_000, 4_200_000_000_000),  # 2020 to 2103
)
scalars = st.one_of(st.none(), st.booleans(), integers, st.floats(allow_nan=False), texts)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=12,
)
FIELDS = {
    "date": integers,
    "id": st.one_of(st.integers(1, 4), integers),
    "version": st.sampled_from([1, 1, 2]),
    "meta": st.fixed_dictionaries(
        {},
        optional={
            "destination": texts,
            "publishConfig": st.sampled_from(["on", "off", "auto", "x"]),
            "publishing": st.booleans(),
            "lastPublishedTime": integers,
        },
    ),
    "router": st.fixed_dictionaries(
        {},
        optional={
            "netStatus": texts,
            "uptime": integers,
            "participatingTunnels": integers,
            "jobLag": integers,
        },
    ),
    "destinations": st.lists(
        st.fixed_dictionaries(
            {"destination": texts}, optional={"uptime": integers, "blocklist": st.lists(texts, max_size=2)}
        ),
        max_size=3,
    ),
    "config": json_values,
    "admin": st.fixed_dictionaries({"action": st.sampled_from(["exclude", "include"]), "destination": texts}),
}
records = st.fixed_dictionaries(
    {"cluster": st.sampled_from([CLUSTER, CLUSTER, "other"])},
    optional={k: v for k, v in FIELDS.items() if k != "admin"},
)
admin_commands = st.fixed_dictionaries(
    {"cluster": st.just(CLUSTER), "admin": FIELDS["admin"]}, optional={"date": integers}
)


def encoded(value: Any) -> bytes:
    """JSON bytes as a client might send them: \\u escapes for what UTF-8 cannot carry."""
    return json.dumps(value).encode()


def with_duplicate(data: bytes) -> bytes:
    return data[:-1] + b', "id": 2}' if data.endswith(b"}") and b'"id"' in data else data


entry_bytes = st.one_of(
    records.map(encoded),
    admin_commands.map(encoded),
    records.map(encoded).map(with_duplicate),
    json_values.map(encoded),
    st.binary(max_size=40),
)
CONFIG = Configuration(0, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:{9000 + i}") for i in (1, 2, 3)))


def feed(entries: list[bytes]) -> FarmState:
    state = FarmState(CLUSTER)
    state.apply(1, LogEntry(1, CONFIG))
    for index, data in enumerate(entries, start=2):
        state.apply(index, LogEntry(1, Application(data)))
    return state


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(entry_bytes, max_size=12))
def test_apply_is_total_and_deterministic(entries: list[bytes]) -> None:
    one, two = feed(entries), feed(entries)  # never raises
    snapshot = one.snapshot()
    assert snapshot == two.snapshot()
    assert one.check_snapshot(snapshot) is None
    restored = FarmState(CLUSTER)
    restored.restore(snapshot)
    assert restored.snapshot() == snapshot
    assert (restored.publisher, restored.leases, restored.now) == (one.publisher, one.leases, one.now)


@settings(max_examples=300, deadline=None)
@given(entry_bytes)
def test_the_leader_admits_only_what_apply_keeps_or_ignores_harmlessly(data: bytes) -> None:
    state = FarmState(CLUSTER)
    refusal = state.check(LogEntry(1, Application(data)))
    try:
        parse_entry(data, CLUSTER)
        valid = True
    except SchemaError:
        valid = False
    if valid:
        assert refusal is None
    if refusal is None:
        data.decode("utf-8")  # strict text, storable and sendable as it is


@settings(max_examples=300, deadline=None)
@given(records.map(encoded).map(lambda d: d) | records.map(encoded).map(with_duplicate))
def test_the_pipeline_reader_agrees_with_the_live_schema(data: bytes) -> None:
    try:
        cluster = json.loads(data).get("cluster")
    except ValueError:
        return
    try:
        parse_entry(data, str(cluster))
        live = True
    except SchemaError:
        live = False
    line = b'{"index":7,"recorded":1,"record":' + data + b"}"
    assert isinstance(parse_line(line), Parsed) == live, data


def test_lone_surrogate_and_far_dates_are_rejected_with_a_reason() -> None:
    state = feed(
        [
            b'{"cluster":"farm","id":1,"date":1700000000000,"router":{"netStatus":"\\ud800"}}',
            encoded({"cluster": CLUSTER, "id": 2, "date": MAX_DATE + 1}),
        ]
    )
    reasons = [r.reason for r in state.rejects]
    assert "lone surrogate" in reasons[0] and "year 9999" in reasons[1]
    state.snapshot().decode("utf-8")


_plain = st.text(max_size=12)
_number = st.one_of(st.integers(0, 2**53), st.sampled_from([0, 2**53]))
#: records the schema accepts, with every optional part left out, null or empty sometimes
accepted_records = st.fixed_dictionaries(
    {"cluster": st.just(CLUSTER), "date": st.integers(0, MAX_DATE), "id": st.integers(1, 2**31 - 1)},
    optional={
        "version": st.just(1),
        "meta": st.fixed_dictionaries(
            {},
            optional={
                "destination": st.none() | _plain,
                "lastPublishedLS": st.none() | _plain,
                "lastPublishedTime": st.integers(0, MAX_DATE),
                "publishConfig": st.sampled_from(["on", "off", "auto", None]),
                "publishing": st.booleans(),
            },
        ),
        "router": st.fixed_dictionaries(
            {},
            optional={
                "netStatus": st.none() | st.just("") | _plain,
                "lastPublishedRI": st.none() | _plain,
                **{
                    k: _number
                    for k in (
                        "uptime",
                        "jobLag",
                        "exploratoryTunnels",
                        "participatingTunnels",
                        "bandwidthConfigured",
                        "bandwidthCurrent",
                    )
                },
            },
        ),
        "destinations": st.lists(
            st.fixed_dictionaries(
                {"destination": _plain},
                optional={
                    "blocklist": st.lists(_plain, max_size=2),
                    **{
                        k: _number
                        for k in (
                            "uptime",
                            "tunnelsConfigured",
                            "tunnelsCurrent",
                            "bandwidthConfigured",
                            "bandwidthCurrent",
                            "connectionsConfigured",
                            "connectionsCurrent",
                        )
                    },
                },
            ),
            max_size=3,
        ),
        "config": st.dictionaries(_plain, json_values, max_size=2),
    },
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(accepted_records.map(encoded), records.map(encoded)))
def test_an_accepted_record_read_again_is_the_same_record(data: bytes) -> None:
    """``parse_accepted`` (the pipeline's replay of checked lines) gives what ``parse_entry`` gave."""
    try:
        expected = parse_entry(data, CLUSTER)
    except SchemaError:
        return
    assert isinstance(expected, StatusRecord)
    got = parse_accepted(data, CLUSTER)
    assert got == expected
    assert record_to_json(got) == record_to_json(expected)  # config too (not part of ==)
