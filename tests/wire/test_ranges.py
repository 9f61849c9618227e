"""Values off the wire are range-checked at the codec: JRaft's ints and longs are signed, so terms,
indexes and offsets are 0..2^63-1 and server ids 1..2^31-1; all ones (-1) only where it is a marker.

Regression: one AppendEntries with term 2^64-1 was adopted and persisted; the node's next pre-vote
could not be encoded and the farm was wedged across restarts.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from garlicfarm.wire import (
    AppendEntriesRequest,
    AppendEntriesResponse,
    ClusterServer,
    Configuration,
    InvalidField,
    LogEntry,
    RequestVoteRequest,
    Response,
    SnapshotSyncRequest,
    decode,
    encode,
)
from garlicfarm.wire.codec import EncodeError, encode_entry
from garlicfarm.wire.messages import RemoveServerRequest
from garlicfarm.wire.payloads import Application

HEADER = struct.Struct(">BIIQQQQI")
RESPONSE = struct.Struct(">BIIQQB")
TOO_BIG = st.integers(2**63, 2**64 - 4)  # -1..-3 are markers, tested on their own


def header(**fields: int) -> bytes:
    values = {"type": 3, "source": 1, "destination": 2, "term": 1, "lt": 0, "li": 0, "commit": 0, "size": 0}
    values.update(fields)
    return HEADER.pack(*values.values())


@given(term=TOO_BIG)
def test_a_term_past_2_63_is_refused(term: int) -> None:
    with pytest.raises(InvalidField, match=r"term is \d+, not a signed 64-bit value") as info:
        decode(header(term=term))
    assert info.value.offset == 9


def test_all_ones_term_is_refused() -> None:
    with pytest.raises(InvalidField, match="term"):
        decode(header(term=2**64 - 1))


@pytest.mark.parametrize(("field", "offset"), [("lt", 17), ("li", 25)])
def test_log_positions_past_2_63_are_refused(field: str, offset: int) -> None:
    with pytest.raises(InvalidField) as info:
        decode(header(**{field: 2**63}))
    assert info.value.offset == offset


@pytest.mark.parametrize("marker", [2**64 - 1, 2**64 - 2, 2**64 - 3])
def test_commit_index_markers_pass_but_2_63_and_minus_4_do_not(marker: int) -> None:
    """-1: pre-vote; -2: a transfer vote; -3: TimeoutNow (raft/types.py). They must encode too: a
    leader that could not encode its TimeoutNow stopped (found by bench/rolling.py)."""
    vote = decode(header(type=1, commit=marker))
    assert isinstance(vote, RequestVoteRequest) and vote.commit_index == marker
    assert decode(encode(vote)) == vote
    for bad in (2**63, 2**64 - 4):
        with pytest.raises(InvalidField, match="commitIndex"):
            decode(header(type=1, commit=bad))


@pytest.mark.parametrize("bad_id", [2**31, 2**32 - 2])
def test_ids_are_signed_ints_or_minus_one(bad_id: int) -> None:
    with pytest.raises(InvalidField, match="not a server id"):
        decode(header(source=bad_id))
    with pytest.raises(InvalidField, match="not a server id"):
        decode(RESPONSE.pack(4, 1, bad_id, 1, 1, 1))
    assert decode(RESPONSE.pack(4, 1, 0xFFFFFFFF, 1, 1, 0)).destination == 0xFFFFFFFF


def test_response_term_and_next_index() -> None:
    with pytest.raises(InvalidField, match="term"):
        decode(RESPONSE.pack(4, 1, 2, 2**63, 1, 1))
    with pytest.raises(InvalidField, match="nextIndex"):
        decode(RESPONSE.pack(4, 1, 2, 1, 2**63, 1))
    answer = decode(RESPONSE.pack(2, 1, 2, 1, 2**64 - 1, 1))
    assert isinstance(answer, Response) and answer.next_index == 2**64 - 1


def test_entry_terms_and_payload_values_are_checked() -> None:
    entry = encode_entry(LogEntry(2**63, Application(b"x")))
    with pytest.raises(InvalidField, match="log entry term"):
        decode(header(size=len(entry)) + entry)
    server = encode_entry(LogEntry(1, ClusterServer(2**31)))
    with pytest.raises(InvalidField, match="server id"):
        decode(header(type=8, size=len(server)) + server)
    config = encode_entry(LogEntry(1, Configuration(2**63, 0, ())))
    with pytest.raises(InvalidField, match="configuration logIndex"):
        decode(header(size=len(config)) + config)
    snapshot = encode_entry(LogEntry(0, SnapshotSyncRequest(1, 2**63, Configuration(0, 0, ()), 0, b"", True)))
    with pytest.raises(InvalidField, match="snapshot lastLogTerm"):
        decode(header(type=16, size=len(snapshot)) + snapshot)


def test_the_encoder_never_sends_what_the_decoder_refuses() -> None:
    for message in (
        AppendEntriesRequest(term=2**64 - 1),
        RequestVoteRequest(last_log_index=2**63),
        AppendEntriesResponse(next_index=2**63),
        RemoveServerRequest(source=2**31),
    ):
        with pytest.raises(EncodeError):
            encode(message)
    assert decode(encode(AppendEntriesRequest(term=2**63 - 1))).term == 2**63 - 1
