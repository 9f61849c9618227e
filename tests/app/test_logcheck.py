"""The cross-member consistency check: members compare digests of their applied logs."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from twisted.logger import LogEvent, globalLogPublisher

from garlicfarm.app.logcheck import DIGESTS_KEPT, GENESIS, Divergence, LogDigest
from garlicfarm.app.node import DivergenceAlarm
from garlicfarm.app.publishing import status_record
from garlicfarm.app.schema import (
    LogMark,
    SchemaError,
    parse_accepted,
    parse_entry,
    record_from_json,
    record_to_json,
)
from garlicfarm.app.state import FarmState
from garlicfarm.router.interface import RouterStatus
from garlicfarm.wire import Application, ClusterServer, Configuration, LogEntry
from garlicfarm.wire.codec import encode_entry
from tests.app.records import entry, record

DATE = 1_700_000_000_000
MEMBERS = LogEntry(
    1, Configuration(1, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:900{i}") for i in (1, 2, 3)))
)


def a_log(n: int = 10) -> list[LogEntry]:
    return [MEMBERS] + [entry(record(1 + i % 3, DATE + i)) for i in range(n)]


def fed(log: list[LogEntry]) -> FarmState:
    state = FarmState("farm")
    for index, item in enumerate(log, 1):
        state.apply(index, item)
    return state


def report(server: int, mark: LogMark | None, date: int = DATE + 10**6) -> LogEntry:
    raw = record(server, date)
    if mark is not None:
        raw["log"] = {"index": mark.index, "digest": mark.digest}
    return entry(raw)


def test_the_same_log_gives_the_same_digest_at_every_index() -> None:
    one, other = LogDigest(), LogDigest()
    for index, item in enumerate(a_log(), 1):
        one.add(index, item)
        other.add(index, item)
        assert one.mark() == other.mark()
    assert one.at(0) is None  # before what is kept
    assert one.at(5) is not None and one.at(5) == other.at(5)
    assert one.at(12) is None  # not applied yet


def test_any_difference_in_an_entry_changes_the_digest_from_there_on() -> None:
    log = a_log()
    changed = list(log)
    changed[4] = LogEntry(2, log[4].value)  # only the term
    one, other = fed(log).digest, fed(changed).digest
    assert one.at(4) == other.at(4)
    assert all(one.at(i) != other.at(i) for i in range(5, len(log) + 1))


def test_a_hole_leaves_the_chain_unknown_rather_than_wrong() -> None:
    digest = LogDigest()
    digest.add(1, MEMBERS)
    digest.add(3, MEMBERS)
    assert digest.mark() is None and digest.at(1) is None
    digest.add(4, MEMBERS)
    assert digest.mark() is None


def test_the_latest_digests_are_kept_and_no_more() -> None:
    digest = LogDigest()
    n = DIGESTS_KEPT + 10
    for index in range(1, n + 1):
        digest.add(index, MEMBERS)
    assert digest.at(n) is not None and digest.at(n - DIGESTS_KEPT + 1) is not None
    assert digest.at(n - DIGESTS_KEPT) is None


def test_an_agreeing_report_is_a_check_and_no_alarm() -> None:
    log = a_log()
    state = fed(log)
    mark = fed(log[:7]).digest.mark()
    state.apply(len(log) + 1, report(2, mark))
    assert state.log_checks == 1
    assert state.divergent == {} and state.status()["log_divergence"] == []


def test_a_member_whose_log_differs_is_named_by_index_and_digests() -> None:
    log = a_log()
    forged = list(log)
    forged[5] = entry(record(3, DATE + 99))
    theirs = fed(forged[:8]).digest.mark()
    state = fed(log)
    seen: list[Divergence] = []
    state.on_divergence.append(seen.append)
    state.apply(len(log) + 1, report(3, theirs))
    assert theirs is not None
    ours = state.digest.at(8)
    assert ours is not None
    assert seen == [Divergence(3, 8, theirs.digest, ours.hex())]
    assert state.divergent == {3: seen[0]}
    assert state.status()["log_divergence"] == [
        f"server 3's committed log differs from this server's at index 8 "
        f"(digest {theirs.digest[:16]}… there, {ours.hex()[:16]}… here)"
    ]
    # the same report again is no new alarm; one that agrees (the member was wiped and resynced) clears it
    state.apply(len(log) + 2, report(3, theirs, DATE + 2 * 10**6))
    assert len(seen) == 1
    state.apply(len(log) + 3, report(3, state.digest.mark(), DATE + 3 * 10**6))
    assert state.divergent == {}


def test_reports_of_non_members_and_of_indexes_not_kept_give_no_verdict() -> None:
    state = fed(a_log())
    bogus = LogMark(3, "00" * 32)
    state.apply(12, report(7, bogus))  # not a member: nothing kept for it
    state.apply(13, report(2, LogMark(10**9, "00" * 32)))  # an index this server has not reached
    assert state.log_checks == 0 and state.divergent == {}


def test_the_chain_goes_on_through_a_snapshot() -> None:
    log = a_log()
    whole = fed(log)
    part = fed(log[:6])
    restored = FarmState("farm")
    restored.restore(part.snapshot())
    for index in range(7, len(log) + 1):
        restored.apply(index, log[index - 1])
    assert restored.digest.mark() == whole.digest.mark()


def test_a_snapshot_from_before_the_check_leaves_the_chain_unknown() -> None:
    state = fed(a_log())
    old = json.loads(state.snapshot())
    del old["digest"]
    restored = FarmState("farm")
    restored.restore(json.dumps(old).encode())
    assert restored.digest.mark() is None and restored.status()["log_digest"] is None
    restored.apply(12, report(2, state.digest.mark()))
    assert restored.log_checks == 0
    assert json.loads(restored.snapshot())["digest"] is None  # and it is snapshotted as unknown
    old["digest"] = "ab" * 31
    said = state.check_snapshot(json.dumps(old).encode())
    assert said == "not a snapshot of this farm's application state (ValueError: digest: not a SHA-256)"


def test_the_status_shows_the_digest_and_counts_every_check() -> None:
    log = a_log()
    state = fed(log)
    mark = state.digest.mark()
    assert mark is not None
    assert state.status()["log_digest"] == {"index": len(log), "digest": mark.digest}
    for n, index in enumerate((7, 8), start=1):
        state.apply(len(log) + n, report(2, fed(log[:index]).digest.mark(), DATE + n * 10**6))
    assert state.log_checks == 2 and state.status()["log_checks"] == 2


def test_a_status_report_carries_the_members_mark() -> None:
    mark = LogMark(41, "0f" * 32)
    raw = status_record("farm", 2, DATE, RouterStatus("OK", 0), [], log_mark=mark)
    assert raw["log"] == {"index": 41, "digest": "0f" * 32}
    data = json.dumps(raw).encode()
    parsed = parse_entry(data, "farm")
    assert parsed == parse_accepted(data, "farm")
    assert getattr(parsed, "log", None) == mark
    plain = status_record("farm", 2, DATE, RouterStatus("OK", 0), [])
    assert "log" not in plain
    # a member that never published says so by default
    assert plain["meta"] == {
        "destination": None,
        "lastPublishedTime": 0,
        "publishConfig": "auto",
        "publishing": False,
    }


@pytest.mark.parametrize(
    ("log", "message"),
    [
        ({"index": 1, "digest": "AB" * 32}, "log.digest: must be 64 lowercase hex digits"),
        ({"index": 1, "digest": "ab" * 31}, "log.digest: must be 64 lowercase hex digits"),
        ({"index": -1, "digest": "ab" * 32}, "log.index: must be an integer"),
        ({"digest": "ab" * 32}, "log.index: missing"),
        ({"index": 1}, "log.digest: missing"),
        ([1, 2], "log: must be an object"),
    ],
)
def test_a_malformed_mark_rejects_the_record(log: Any, message: str) -> None:
    raw = record(1, DATE)
    raw["log"] = log
    with pytest.raises(SchemaError, match=message):
        parse_entry(json.dumps(raw).encode(), "farm")


def test_a_records_mark_survives_the_archive_and_snapshot_form() -> None:
    raw = record(1, DATE)
    raw["log"] = {"index": 3, "digest": "cd" * 32}
    parsed = parse_entry(json.dumps(raw).encode(), "farm")
    assert record_from_json(json.loads(json.dumps(record_to_json(parsed)))) == parsed  # type: ignore[arg-type]
    plain = parse_entry(json.dumps(record(1, DATE)).encode(), "farm")
    assert "log" not in record_to_json(plain)  # type: ignore[arg-type]


def test_the_alarm_is_logged_once_then_at_most_every_minute_per_member() -> None:
    now = [0.0]
    alarm = DivergenceAlarm(lambda: now[0])
    events: list[LogEvent] = []
    observer: Any = events.append
    globalLogPublisher.addObserver(observer)
    try:
        for t, member in [(0, 3), (1, 3), (2, 2), (59, 3), (61, 3)]:
            now[0] = t
            alarm(Divergence(member, 5, "aa" * 32, "bb" * 32))
    finally:
        globalLogPublisher.removeObserver(observer)
    alarms = [e for e in events if "ALARM" in e.get("log_format", "")]
    assert [(e["what"][:8]) for e in alarms] == ["server 3", "server 2", "server 3"]
    assert all(e["log_level"].name == "error" for e in alarms)


def test_genesis_is_the_digest_before_the_first_entry() -> None:
    digest = LogDigest()
    assert digest.mark() == LogMark(0, GENESIS.hex())
    digest.add(1, LogEntry(1, Application(b"{}")))
    assert digest.at(0) is None and digest.mark() is not None and digest.mark() != LogMark(0, GENESIS.hex())


@given(st.lists(st.tuples(st.integers(0, 2**63 - 1), st.binary(max_size=200)), max_size=20))
def test_the_fast_path_for_application_entries_hashes_their_wire_encoding(
    entries: list[tuple[int, bytes]],
) -> None:
    """Application entries are hashed from a header built at once: the same bytes as the entry's
    wire encoding after its index (the chain's definition, and what a configuration entry takes)."""
    fast = LogDigest()
    value = GENESIS
    for index, (term, data) in enumerate(entries, 1):
        entry = LogEntry(term, Application(data))
        fast.add(index, entry)
        value = hashlib.sha256(value + index.to_bytes(8, "big") + encode_entry(entry)).digest()
        assert fast.value == value


def test_a_restored_snapshots_digest_is_kept_as_the_first_of_the_new_chain() -> None:
    digest = LogDigest()
    restored = hashlib.sha256(b"snapshot").digest()
    digest.reset(5, restored)
    assert digest.at(5) == restored and digest.mark() == LogMark(5, restored.hex())
    digest.add(6, LogEntry(1, Application(b"x")))
    assert digest.at(5) == restored and digest.at(6) == digest.value
    digest.reset(9, None)  # unknown: nothing to compare until the next snapshot
    assert digest.at(9) is None and digest.mark() is None


def test_any_other_entry_is_hashed_as_its_index_in_8_bytes_then_its_wire_encoding() -> None:
    digest = LogDigest()
    entry = LogEntry(2, Configuration(0, 0, (ClusterServer(1, "tcp://127.0.0.1:9001"),)))
    digest.add(1, entry)
    assert digest.value == hashlib.sha256(GENESIS + (1).to_bytes(8, "big") + encode_entry(entry)).digest()
