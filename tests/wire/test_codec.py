"""Codec behaviour, one bad-input class per test."""

from __future__ import annotations

import contextlib
import gzip
import struct

import pytest

from garlicfarm.wire import (
    NO_LEADER,
    AddServerRequest,
    AppendEntriesRequest,
    AppendEntriesResponse,
    Application,
    ClientRequest,
    ClusterServer,
    Configuration,
    EncodeError,
    InstallSnapshotRequest,
    InvalidField,
    InvalidPayload,
    LimitExceeded,
    Limits,
    LogEntry,
    LogPack,
    ProtocolError,
    RemoveServerRequest,
    RequestVoteRequest,
    SizeOverrun,
    SnapshotSyncRequest,
    SyncLogRequest,
    TrailingBytes,
    TruncatedMessage,
    UnknownMessageType,
    UnknownValueType,
    decode,
    decode_all,
    encode,
)

HEADER = struct.Struct(">BIIQQQQI")


def request(kind: int, body: bytes, size: int | None = None) -> bytes:
    return HEADER.pack(kind, 1, 2, 3, 4, 5, 6, len(body) if size is None else size) + body


def entry(value_type: int, value: bytes, term: int = 1, size: int | None = None) -> bytes:
    return struct.pack(">QBI", term, value_type, len(value) if size is None else size) + value


def server(sid: int, endpoint: bytes) -> bytes:
    return struct.pack(">II", sid, len(endpoint)) + endpoint


def test_sizes() -> None:
    assert len(encode(RequestVoteRequest())) == 45
    assert len(encode(AppendEntriesResponse())) == 26


def test_no_leader_destination() -> None:
    wire = encode(AppendEntriesResponse(3, NO_LEADER, 5, 0, False))
    assert wire[5:9] == b"\xff\xff\xff\xff"
    assert decode(wire) == AppendEntriesResponse(3, NO_LEADER, 5, 0, False)


def test_unknown_message_type() -> None:
    with pytest.raises(UnknownMessageType, match="unknown message type 0 at byte 0"):
        decode(b"\x00" * 26)
    with pytest.raises(UnknownMessageType, match="at byte 26"):
        decode_all(encode(AppendEntriesResponse()) + b"\x63")


def test_truncated() -> None:
    wire = encode(AppendEntriesRequest(entries=(LogEntry(1, Application(b"abc")),)))
    for cut in (1, 20, 44, 45, len(wire) - 1):
        with pytest.raises(TruncatedMessage, match="at byte 0"):
            decode(wire[:cut])
    with pytest.raises(TruncatedMessage):
        decode(encode(AppendEntriesResponse())[:25])


def test_entries_size_limit_checked_from_header_alone() -> None:
    # A 4 GiB size field is refused from the 45-byte header, before any body arrives.
    with pytest.raises(LimitExceeded, match="4294967295 exceeds .* at byte 41"):
        decode(request(3, b"", size=0xFFFFFFFF))
    small = Limits(max_entries_size=10)
    with pytest.raises(LimitExceeded):
        decode(request(3, entry(1, b"x" * 20)), small)


def test_entry_count_limit() -> None:
    body = entry(1, b"{}") * 3
    decode(request(3, body), Limits(max_entries=3))
    with pytest.raises(LimitExceeded, match="more than 2 log entries at byte 75"):
        decode(request(3, body), Limits(max_entries=2))


def test_entry_size_overruns_entries() -> None:
    body = entry(1, b"abc", size=10)
    with pytest.raises(SizeOverrun, match="overruns the entries by 7 bytes at byte 54"):
        decode(request(3, body))


def test_short_entry_header() -> None:
    with pytest.raises(SizeOverrun, match="needs 13 bytes, only 5 remain at byte 45"):
        decode(request(3, b"\x00" * 5))


def test_unknown_value_type() -> None:
    with pytest.raises(UnknownValueType, match="unknown log value type 9 at byte 53"):
        decode(request(3, entry(9, b"")))


def test_accepted_and_done_bytes_are_strict() -> None:
    wire = bytearray(encode(AppendEntriesResponse(accepted=True)))
    wire[25] = 2
    with pytest.raises(InvalidField, match="accepted byte is 2, must be 0 or 1 at byte 25"):
        decode(bytes(wire))
    snap = SnapshotSyncRequest(1, 1, Configuration(0, 0), 0, b"", True)
    good = bytearray(encode(InstallSnapshotRequest(entries=(LogEntry(1, snap),))))
    good[-1] = 7
    with pytest.raises(InvalidField, match="done byte is 7"):
        decode(bytes(good))


def test_invalid_utf8_endpoint() -> None:
    body = entry(3, server(4, b"tcp://\xff:1"))
    with pytest.raises(InvalidField, match="not valid UTF-8 .* at byte 72"):
        decode(request(6, body))


def test_configuration_server_record_overruns() -> None:
    value = struct.pack(">QQ", 1, 0) + struct.pack(">II", 1, 50) + b"tcp://x"
    with pytest.raises(SizeOverrun, match="endpoint length 50 overruns"):
        decode(request(3, entry(2, value)))
    with pytest.raises(SizeOverrun, match="server record needs 8 bytes, only 3 remain"):
        decode(request(3, entry(2, struct.pack(">QQ", 1, 0) + b"abc")))


def test_trailing_bytes_inside_payloads() -> None:
    with pytest.raises(TrailingBytes, match="2 bytes after the ClusterServer endpoint"):
        decode(request(6, entry(3, server(4, b"tcp://a:1") + b"zz")))
    snap = SnapshotSyncRequest(1, 1, Configuration(0, 0), 0, b"ab", False)
    wire = encode(InstallSnapshotRequest(entries=(LogEntry(1, snap),)))
    tampered = bytearray(wire)
    # lengthen both the entries size and the value size by one, leaving a byte after "done"
    struct.pack_into(">I", tampered, 41, struct.unpack_from(">I", wire, 41)[0] + 1)
    struct.pack_into(">I", tampered, 54, struct.unpack_from(">I", wire, 54)[0] + 1)
    with pytest.raises(TrailingBytes, match="1 bytes after the snapshot's done flag"):
        decode(bytes(tampered) + b"\x00")


def test_entry_rules() -> None:
    with pytest.raises(InvalidPayload, match="RequestVoteRequest carries 1 entries, wants no entries"):
        decode(request(1, entry(1, b"{}")))
    with pytest.raises(InvalidPayload, match="ClientRequest may not carry a CONFIGURATION entry"):
        decode(request(5, entry(2, struct.pack(">QQ", 0, 0))))
    with pytest.raises(InvalidPayload, match="AddServerRequest carries 0 entries"):
        decode(request(6, b""))
    with pytest.raises(InvalidPayload, match="has no endpoint"):
        decode(request(6, entry(3, struct.pack(">I", 4))))
    with pytest.raises(EncodeError, match="SyncLogRequest carries 0 entries"):
        encode(SyncLogRequest())


def test_remove_server_both_forms() -> None:
    id_only = RemoveServerRequest(entries=(LogEntry(0, ClusterServer(3)),))
    assert decode(encode(id_only)) == id_only
    assert len(encode(id_only)) == 45 + 13 + 4
    full = RemoveServerRequest(entries=(LogEntry(0, ClusterServer(3, "tcp://a:1")),))
    assert decode(encode(full)) == full


def test_encode_range_errors() -> None:
    with pytest.raises(EncodeError, match="not a server id"):
        encode(RequestVoteRequest(source=2**32))
    with pytest.raises(EncodeError, match="needs an endpoint"):
        encode(AppendEntriesRequest(entries=(LogEntry(1, Configuration(0, 0, (ClusterServer(1),))),)))


# ---------------------------------------------------------------------------------------------- LogPack


def jraft_pack(records: list[bytes], first_offset: int) -> bytes:
    """A LogPack as JRaft builds it: absolute data-file offsets starting wherever the run started."""
    offsets, pos = [], first_offset
    for r in records:
        offsets.append(struct.pack(">Q", pos))
        pos += len(r)
    index = b"".join(offsets)
    log = b"".join(records)
    return gzip.compress(struct.pack(">II", len(index), len(log)) + index + log)


def sync_log(pack: bytes) -> bytes:
    return request(10, entry(4, pack))


def test_logpack_jraft_absolute_offsets() -> None:
    records = [struct.pack(">QB", 2, 1) + b'{"a":1}', struct.pack(">QB", 3, 1) + b"[]"]
    message = decode(sync_log(jraft_pack(records, first_offset=123456)))
    assert isinstance(message, SyncLogRequest)
    pack = message.entries[0].value
    assert pack == LogPack((LogEntry(2, Application(b'{"a":1}')), LogEntry(3, Application(b"[]"))))


def test_logpack_roundtrip_and_empty() -> None:
    entries = (LogEntry(1, Application(b"x")), LogEntry(2, Configuration(3, 1, (ClusterServer(1, "e"),))))
    for pack in (LogPack(entries), LogPack(())):
        msg = SyncLogRequest(entries=(LogEntry(0, pack),))
        assert decode(encode(msg)) == msg


def test_logpack_gzip_bomb() -> None:
    bomb = gzip.compress(b"\x00" * (80 * 1024 * 1024))
    assert len(bomb) < 100_000
    with pytest.raises(LimitExceeded, match="inflates past the limit of 67108864 bytes"):
        decode(sync_log(bomb))
    with pytest.raises(LimitExceeded, match="limit of 1000 bytes"):
        decode(sync_log(gzip.compress(b"\x00" * 2000)), Limits(max_logpack_decompressed=1000))


def test_logpack_not_gzip_truncated_or_trailing() -> None:
    with pytest.raises(InvalidPayload, match="not valid gzip"):
        decode(sync_log(b"not gzip at all"))
    good = jraft_pack([struct.pack(">QB", 1, 1) + b"{}"], 0)
    with pytest.raises(InvalidPayload, match="truncated"):
        decode(sync_log(good[:-10]))
    with pytest.raises(TrailingBytes, match="3 bytes after the LogPack's gzip stream"):
        decode(sync_log(good + b"abc"))


def test_logpack_inconsistent_bodies() -> None:
    def pack(body: bytes) -> bytes:
        return sync_log(gzip.compress(body))

    with pytest.raises(InvalidPayload, match="needs at least 8"):
        decode(pack(b"\x00\x00"))
    with pytest.raises(InvalidPayload, match="not a multiple of 8"):
        decode(pack(struct.pack(">II", 3, 0) + b"abc"))
    with pytest.raises(InvalidPayload, match="declares"):
        decode(pack(struct.pack(">II", 8, 100) + b"\x00" * 8))
    # offsets that go backwards or leave an entry shorter than its term and type
    index = struct.pack(">QQ", 10, 5)
    with pytest.raises(InvalidPayload, match="entry 0 spans"):
        decode(pack(struct.pack(">II", 16, 20) + index + b"\x00" * 20))
    record = struct.pack(">QB", 1, 3) + struct.pack(">I", 1)
    with pytest.raises(InvalidPayload, match="entry 0 has value type 3"):
        decode(pack(struct.pack(">II", 8, len(record)) + b"\x00" * 8 + record))
    bad_config = struct.pack(">QB", 1, 2) + b"\x00" * 3
    with pytest.raises(SizeOverrun, match="in LogPack entry 0: configuration needs 16 bytes"):
        decode(pack(struct.pack(">II", 8, len(bad_config)) + b"\x00" * 8 + bad_config))


def test_only_protocol_errors_escape_for_all_single_byte_mutations() -> None:
    msg = AddServerRequest(entries=(LogEntry(0, ClusterServer(4, "tcp://127.0.0.1:9004")),))
    wire = encode(msg)
    for i in range(len(wire)):
        for value in (0, 1, 0x7F, 0xFF):
            mutated = wire[:i] + bytes([value]) + wire[i + 1 :]
            with contextlib.suppress(ProtocolError):
                decode(mutated)


def test_client_request_application_entries() -> None:
    msg = ClientRequest(entries=(LogEntry(0, Application(b'{"id":1}')),))
    assert decode(encode(msg)) == msg
