"""Every rejection the decoder makes, word for word and byte for byte: the operator reading a peer's
refusal in the log learns which field was wrong and where it sits in the stream.

Each hostile message follows one valid 26-byte response in the same buffer, so every offset is a
stream offset (the frame's own position added), not one relative to the frame."""

from __future__ import annotations

import gzip
import struct
import zlib

import pytest

from garlicfarm.wire import (
    AppendEntriesRequest,
    AppendEntriesResponse,
    Application,
    Limits,
    LogEntry,
    LogPack,
    ProtocolError,
    SyncLogRequest,
    decode,
    decode_all,
    encode,
)
from garlicfarm.wire.codec import decode_frame, encode_log_pack, inflate_bounded
from tests.wire.test_codec import entry, server
from tests.wire.test_ranges import RESPONSE, header

PREFIX = encode(AppendEntriesResponse(1, 2, 3, 4, True))
AT = len(PREFIX)  # the hostile frame's first byte
BODY = AT + 45  # its first entry
VALUE = BODY + 13  # the first entry's value
BIG = 2**63  # one past the largest signed long
BIG_ID = 2**31  # one past the largest server id
LONG = "not a signed 64-bit value from 0 to 2^63-1"


def request(kind: int = 3, body: bytes = b"", **fields: int) -> bytes:
    """A request of type ``kind`` with header fields that differ from one another, then ``body``."""
    return (
        header(**{"type": kind, "term": 3, "lt": 4, "li": 5, "commit": 6, "size": len(body), **fields}) + body
    )


def response(source: int = 1, destination: int = 2, term: int = 3, next_index: int = 4, ok: int = 1) -> bytes:
    return RESPONSE.pack(4, source, destination, term, next_index, ok)


def value(value_type: int, data: bytes, kind: int = 3) -> bytes:
    """A request of type ``kind`` carrying one entry of ``value_type`` holding ``data``."""
    return request(kind, entry(value_type, data))


def config(log_index: int = 1, last: int = 0, servers: bytes = b"") -> bytes:
    return struct.pack(">QQ", log_index, last) + servers


def snapshot(
    last_index: int = 1,
    last_term: int = 1,
    conf: bytes | None = None,
    conf_len: int | None = None,
    offset: int = 0,
    data: bytes = b"",
    data_len: int | None = None,
    done: bytes = b"\x01",
) -> bytes:
    conf = config() if conf is None else conf
    head = struct.pack(">QQI", last_index, last_term, len(conf) if conf_len is None else conf_len)
    mid = struct.pack(">QI", offset, len(data) if data_len is None else data_len)
    return head + conf + mid + data + done


def pack_body(
    index: list[int], log: bytes, index_len: int | None = None, log_len: int | None = None
) -> bytes:
    raw_index = b"".join(struct.pack(">Q", o) for o in index)
    lengths = struct.pack(
        ">II",
        len(raw_index) if index_len is None else index_len,
        len(log) if log_len is None else log_len,
    )
    return lengths + raw_index + log


def logpack(body: bytes) -> bytes:
    return value(4, gzip.compress(body, mtime=0), kind=10)


def record(term: int, value_type: int, data: bytes) -> bytes:
    return struct.pack(">QB", term, value_type) + data


SERVER_RECORD = server(7, b"host:1")
SNAPSHOT_AT = VALUE  # the snapshot value starts where the entry's value does
SNAP_CONF = SNAPSHOT_AT + 20  # its configuration
SNAP_MID = SNAP_CONF + 16  # offset and data length, after an empty configuration

CASES: list[tuple[str, bytes, str, str, int | None]] = [
    # (id, the hostile frame, error class, words, stream offset)
    ("unknown type", b"\x00" * 45, "UnknownMessageType", "unknown message type 0", AT),
    ("header cut", request()[:30], "TruncatedMessage", "message type 3 needs 45 bytes, only 30 remain", AT),
    (
        "entries cut",
        request(body=b"x" * 10)[:50],
        "TruncatedMessage",
        "message type 3 needs 55 bytes, only 50 remain",
        AT,
    ),
    ("accepted byte", response(ok=2), "InvalidField", "accepted byte is 2, must be 0 or 1", AT + 25),
    (
        "response source",
        response(source=BIG_ID),
        "InvalidField",
        f"source is {BIG_ID}, not a server id (1..2^31-1), 0 or -1",
        AT + 1,
    ),
    (
        "response destination",
        response(destination=BIG_ID),
        "InvalidField",
        f"destination is {BIG_ID}, not a server id (1..2^31-1), 0 or -1",
        AT + 5,
    ),
    ("response term", response(term=BIG), "InvalidField", f"term is {BIG}, {LONG}", AT + 9),
    ("response nextIndex", response(next_index=BIG), "InvalidField", f"nextIndex is {BIG}, {LONG}", AT + 17),
    (
        "request source",
        request(source=BIG_ID),
        "InvalidField",
        f"source is {BIG_ID}, not a server id (1..2^31-1), 0 or -1",
        AT + 1,
    ),
    (
        "request destination",
        request(destination=BIG_ID),
        "InvalidField",
        f"destination is {BIG_ID}, not a server id (1..2^31-1), 0 or -1",
        AT + 5,
    ),
    ("request term", request(term=BIG), "InvalidField", f"term is {BIG}, {LONG}", AT + 9),
    ("lastLogTerm", request(lt=BIG), "InvalidField", f"lastLogTerm is {BIG}, {LONG}", AT + 17),
    ("lastLogIndex", request(li=BIG), "InvalidField", f"lastLogIndex is {BIG}, {LONG}", AT + 25),
    ("commitIndex", request(commit=BIG), "InvalidField", f"commitIndex is {BIG}, {LONG}", AT + 33),
    (
        "entry header cut",
        request(body=b"12345"),
        "SizeOverrun",
        "log entry header needs 13 bytes, only 5 remain",
        BODY,
    ),
    (
        "entry term",
        request(body=entry(1, b"", term=BIG)),
        "InvalidField",
        f"log entry term is {BIG}, {LONG}",
        BODY,
    ),
    (
        "entry value overrun",
        request(body=entry(1, b"1234567", size=10)),
        "SizeOverrun",
        "log entry value size 10 overruns the entries by 3 bytes",
        BODY + 9,
    ),
    ("value type", request(body=entry(9, b"")), "UnknownValueType", "unknown log value type 9", BODY + 8),
    (
        "entries on a vote",
        value(1, b"{}", kind=1),
        "InvalidPayload",
        "RequestVoteRequest carries 1 entries, wants no entries",
        AT,
    ),
    (
        "add-server without its server",
        request(6),
        "InvalidPayload",
        "AddServerRequest carries 0 entries, wants 1..1 entries",
        AT,
    ),
    (
        "configuration on a client request",
        value(2, config(), kind=5),
        "InvalidPayload",
        "ClientRequest may not carry a CONFIGURATION entry",
        AT,
    ),
    (
        "add-server without an endpoint",
        value(3, struct.pack(">I", 7), kind=6),
        "InvalidPayload",
        "AddServerRequest's ClusterServer has no endpoint",
        AT,
    ),
    (
        "server id 0",
        value(3, struct.pack(">I", 0), kind=8),
        "InvalidField",
        "server id is 0, not a server id (1..2^31-1)",
        VALUE,
    ),
    (
        "bytes after an endpoint",
        value(3, SERVER_RECORD + b"zz", kind=6),
        "TrailingBytes",
        "2 bytes after the ClusterServer endpoint",
        VALUE + len(SERVER_RECORD),
    ),
    (
        "server record cut",
        value(3, b"123456", kind=6),
        "SizeOverrun",
        "server record needs 8 bytes, only 6 remain",
        VALUE,
    ),
    (
        "endpoint overrun",
        value(3, struct.pack(">II", 7, 10) + b"1234567", kind=6),
        "SizeOverrun",
        "endpoint length 10 overruns the payload by 3 bytes",
        VALUE + 4,
    ),
    (
        "endpoint not UTF-8",
        value(3, server(7, b"ab\xff"), kind=6),
        "InvalidField",
        "endpoint is not valid UTF-8 (invalid start byte)",
        VALUE + 8 + 2,
    ),
    (
        "configuration cut",
        value(2, b"x" * 15),
        "SizeOverrun",
        "configuration needs 16 bytes, only 15 remain",
        VALUE,
    ),
    (
        "configuration logIndex",
        value(2, config(log_index=BIG)),
        "InvalidField",
        f"configuration logIndex is {BIG}, {LONG}",
        VALUE,
    ),
    (
        "configuration lastLogIndex",
        value(2, config(last=BIG)),
        "InvalidField",
        f"lastLogIndex is {BIG}, {LONG}",
        VALUE + 8,
    ),
    (
        "snapshot head cut",
        value(5, b"x" * 19, kind=16),
        "SizeOverrun",
        "snapshot sync request header truncated",
        SNAPSHOT_AT,
    ),
    (
        "snapshot lastLogIndex",
        value(5, snapshot(last_index=BIG), kind=16),
        "InvalidField",
        f"snapshot lastLogIndex is {BIG}, {LONG}",
        SNAPSHOT_AT,
    ),
    (
        "snapshot lastLogTerm",
        value(5, snapshot(last_term=BIG), kind=16),
        "InvalidField",
        f"snapshot lastLogTerm is {BIG}, {LONG}",
        SNAPSHOT_AT + 8,
    ),
    (
        "snapshot configuration overrun",
        value(5, snapshot(conf_len=100), kind=16),
        "SizeOverrun",
        "configuration length 100 overruns the payload",
        SNAP_CONF - 4,
    ),
    (
        "snapshot offset cut",
        value(5, snapshot()[:-2], kind=16),
        "SizeOverrun",
        "snapshot offset and data length truncated",
        SNAP_MID,
    ),
    (
        "snapshot offset",
        value(5, snapshot(offset=BIG), kind=16),
        "InvalidField",
        f"snapshot offset is {BIG}, {LONG}",
        SNAP_MID,
    ),
    (
        "snapshot data overrun",
        value(5, snapshot(data=b"abc", data_len=4), kind=16),
        "SizeOverrun",
        "snapshot data length 4 overruns the payload",
        SNAP_MID + 8,
    ),
    (
        "snapshot done byte",
        value(5, snapshot(data=b"abc", done=b"\x02"), kind=16),
        "InvalidField",
        "done byte is 2, must be 0 or 1",
        SNAP_MID + 12 + 3,
    ),
    (
        "bytes after the done byte",
        value(5, snapshot(done=b"\x01zz"), kind=16),
        "TrailingBytes",
        "2 bytes after the snapshot's done flag",
        SNAP_MID + 12 + 1,
    ),
    (
        "logpack not gzip",
        value(4, b"not gzip", kind=10),
        "InvalidPayload",
        "LogPack is not valid gzip",
        VALUE,
    ),
    (
        "logpack gzip cut",
        value(4, gzip.compress(b"x" * 100, mtime=0)[:-4], kind=10),
        "InvalidPayload",
        "LogPack gzip stream is truncated",
        VALUE,
    ),
    (
        "bytes after the gzip stream",
        value(4, gzip.compress(pack_body([], b""), mtime=0) + b"zzz", kind=10),
        "TrailingBytes",
        "3 bytes after the LogPack's gzip stream",
        VALUE + len(gzip.compress(pack_body([], b""), mtime=0)),
    ),
    (
        "logpack short",
        logpack(b"1234567"),
        "InvalidPayload",
        "inflated LogPack is 7 bytes, needs at least 8",
        VALUE,
    ),
    (
        "index not in eights",
        logpack(pack_body([], b"", index_len=4) + b"1234"),
        "InvalidPayload",
        "LogPack index length 4 is not a multiple of 8",
        VALUE,
    ),
    (
        "lengths disagree",
        logpack(pack_body([0], b"123456789", log_len=5)),
        "InvalidPayload",
        "LogPack declares 8+5 bytes of index and log, inflated body has 17",
        VALUE,
    ),
    (
        "log without index",
        logpack(pack_body([], b"123456789")),
        "InvalidPayload",
        "LogPack has no index but 9 bytes of log data",
        VALUE,
    ),
    (
        "offset past the data",
        logpack(pack_body([100, 100 + 9, 100 + 30], record(1, 1, b"") * 2)),
        "InvalidPayload",
        "LogPack entry 1 spans log bytes 9..30, outside the 18 bytes of log data",
        VALUE,
    ),
    (
        "record too short",
        logpack(pack_body([0, 8], record(1, 1, b"") + b"12345678")),
        "InvalidPayload",
        "LogPack entry 0 spans 8 bytes, needs at least 9",
        VALUE,
    ),
    (
        "second record too short",
        logpack(pack_body([0, 9, 17], record(1, 1, b"") + b"12345678" + record(1, 1, b""))),
        "InvalidPayload",
        "LogPack entry 1 spans 8 bytes, needs at least 9",
        VALUE,
    ),
    (
        "logpack in zlib's format, not gzip's",
        value(4, zlib.compress(pack_body([], b"")), kind=10),
        "InvalidPayload",
        "LogPack is not valid gzip",
        VALUE,
    ),
    (
        "record term",
        logpack(pack_body([0, 9], record(1, 1, b"") + record(BIG, 1, b""))),
        "InvalidField",
        f"LogPack entry 1 has term {BIG}, not from 0 to 2^63-1",
        VALUE,
    ),
    (
        "record value type",
        logpack(pack_body([0], record(1, 3, b""))),
        "InvalidPayload",
        "LogPack entry 0 has value type 3",
        VALUE,
    ),
    (
        "record's configuration",
        logpack(pack_body([0], record(1, 2, b"short"))),
        "SizeOverrun",
        "in LogPack entry 0: configuration needs 16 bytes, only 5 remain",
        VALUE,
    ),
]


@pytest.mark.parametrize(
    ("frame", "kind", "words", "offset"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_rejection_names_its_field_and_its_byte(
    frame: bytes, kind: str, words: str, offset: int
) -> None:
    with pytest.raises(ProtocolError) as info:
        decode_all(PREFIX + frame)
    assert type(info.value).__name__ == kind
    assert info.value.what.startswith(words), info.value.what
    assert info.value.offset == offset
    assert str(info.value) == f"{info.value.what} at byte {offset}"


def test_a_frame_decoded_alone_reports_offsets_from_its_base() -> None:
    """decode_frame is handed frames the stream decoder has measured; its base shifts every offset."""
    cases = [
        (b"\x00" * 45, "UnknownMessageType", "unknown message type 0", 7),
        (response()[:25], "TruncatedMessage", "a response is 26 bytes, got 25", 7),
        (request()[:44], "TruncatedMessage", "a request header is 45 bytes, got 44", 7),
        (
            request(size=3) + b"ab",
            "SizeOverrun",
            "log entries size 3 does not match the 2 bytes that follow the header",
            7 + 41,
        ),
    ]
    for frame, kind, words, offset in cases:
        with pytest.raises(ProtocolError) as info:
            decode_frame(frame, base=7)
        assert (type(info.value).__name__, info.value.what, info.value.offset) == (kind, words, offset)


@pytest.mark.parametrize("count", [0, 2])
def test_decode_wants_exactly_one_message(count: int) -> None:
    with pytest.raises(ProtocolError) as info:
        decode(PREFIX * count)
    assert (type(info.value).__name__, info.value.what, info.value.offset) == (
        "TrailingBytes",
        f"expected one message, found {count}",
        0,
    )


def test_messages_of_different_lengths_decode_in_turn() -> None:
    """Each message starts where the one before it ended (not at the previous one's length)."""
    stream = [response(ok=0), request(body=entry(1, b"{}")), response(source=9), request(kind=1)]
    messages = decode_all(b"".join(stream))
    assert [m.TYPE for m in messages] == [4, 3, 4, 1]
    assert [m.source for m in messages] == [1, 1, 9, 1]


def test_the_largest_values_in_range_decode() -> None:
    """2^31-1 and 2^63-1 are in range everywhere: the bound itself is not refused."""
    top_id, top = BIG_ID - 1, BIG - 1
    wire = request(source=top_id, destination=top_id, term=top, lt=top, li=top, commit=top)
    assert decode(wire) == AppendEntriesRequest(top_id, top_id, top, top, top, top)
    answer = response(source=top_id, destination=top_id, term=top, next_index=top)
    assert decode(answer) == AppendEntriesResponse(top_id, top_id, top, top, True)
    entry_at_top = LogEntry(top, Application(b""))
    assert decode(request(body=entry(1, b"", term=top))) == AppendEntriesRequest(
        1, 2, 3, 4, 5, 6, (entry_at_top,)
    )
    pack = LogPack((entry_at_top,))
    assert decode(logpack(pack_body([0], record(top, 1, b"")))) == SyncLogRequest(
        1, 2, 3, 4, 5, 6, (LogEntry(1, pack),)
    )


def test_inflating_errors_point_at_the_stream() -> None:
    for data, words in [
        (b"not gzip", "LogPack is not valid gzip"),
        (gzip.compress(b"x" * 10, mtime=0), "LogPack inflates past the limit of 5 bytes"),
        (gzip.compress(b"x", mtime=0)[:-3], "LogPack gzip stream is truncated"),
    ]:
        with pytest.raises(ProtocolError) as info:
            inflate_bounded(data, 5, base=11)
        assert info.value.what.startswith(words) and info.value.offset == 11


def test_a_logpack_of_more_entries_than_the_limit_names_both() -> None:
    with pytest.raises(ProtocolError) as info:
        decode_all(PREFIX + logpack(pack_body([0, 9], record(1, 1, b"") * 2)), Limits(max_entries=1))
    assert (info.value.what, info.value.offset) == ("LogPack holds 2 entries, limit 1", VALUE)


def test_a_logpack_is_the_same_bytes_each_time() -> None:
    """gzip's header holds a time unless told otherwise: two leaders encoding one pack must agree."""
    entries = [LogEntry(1, Application(b"x" * 50))]
    wire = encode_log_pack(entries, base_offset=1000)
    assert wire[4:8] == b"\x00\x00\x00\x00"  # MTIME
    assert gzip.decompress(wire)[:8] == struct.pack(">II", 8, 9 + 50)


def test_a_model_that_cannot_be_encoded_is_named_with_its_field() -> None:
    from garlicfarm.wire import EncodeError, RequestVoteRequest, RequestVoteResponse

    with pytest.raises(EncodeError) as info:
        encode(RequestVoteRequest(1, 2, BIG, 0, 0, 0))
    assert str(info.value) == f"RequestVoteRequest: term is {BIG}, {LONG}"
    with pytest.raises(EncodeError) as info:
        encode(RequestVoteResponse(1, 2, 3, BIG, False))
    assert str(info.value) == f"RequestVoteResponse: nextIndex is {BIG}, {LONG}"


def test_a_value_struct_cannot_pack_is_named() -> None:
    from garlicfarm.wire import ClusterServer, EncodeError, LogEntry, RequestVoteRequest
    from garlicfarm.wire.codec import encode_log_pack

    with pytest.raises(EncodeError) as info:
        encode(RequestVoteRequest(1, 2, -1, 0, 0, 0))
    assert str(info.value).startswith("RequestVoteRequest: a field is out of range (")
    with pytest.raises(EncodeError) as info:
        encode_log_pack([LogEntry(1, ClusterServer(1, "a"))])
    assert str(info.value) == "a LogPack may not hold a CLUSTER_SERVER entry"


def test_an_error_without_a_place_says_none() -> None:
    assert str(ProtocolError("no place")) == "no place"
    assert str(ProtocolError("a place", 0)) == "a place at byte 0"
