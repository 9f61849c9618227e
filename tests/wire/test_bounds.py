"""Every size the decoder checks, at its bound and one past it: a limit holds at exactly the limit and
refuses one more (not only far past it); a length may fill its container and not run one byte into
whatever follows; a gzip stream is inflated no further than its limit plus one byte."""

from __future__ import annotations

import gzip
import struct
import types
import zlib
from typing import Any

import pytest

from garlicfarm.wire import (
    AddServerRequest,
    AppendEntriesRequest,
    Application,
    ClusterServer,
    Configuration,
    InstallSnapshotRequest,
    InvalidPayload,
    LimitExceeded,
    Limits,
    LogEntry,
    LogPack,
    SizeOverrun,
    SnapshotSyncRequest,
    SyncLogRequest,
    codec,
    decode,
    decode_all,
    encode,
)
from garlicfarm.wire.codec import frame_length, inflate_bounded
from tests.wire.test_codec import entry, jraft_pack, request, server, sync_log

# -- inflating, and no further ---------------------------------------------------------------------


class _Recording:
    """zlib's decompressobj, counting the bytes it hands out."""

    produced = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._inner = zlib.decompressobj(*args, **kwargs)

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        out = self._inner.decompress(data, max_length)
        _Recording.produced += len(out)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> type[_Recording]:
    _Recording.produced = 0
    fake = types.SimpleNamespace(decompressobj=_Recording, MAX_WBITS=zlib.MAX_WBITS, error=zlib.error)
    monkeypatch.setattr(codec, "zlib", fake)
    return _Recording


@pytest.mark.parametrize("limit", [0, 1, 1000, 65536])
def test_inflating_stops_one_byte_past_the_limit(recording: type[_Recording], limit: int) -> None:
    bomb = gzip.compress(b"\x00" * (8 * 1024 * 1024))
    with pytest.raises(LimitExceeded, match=f"inflates past the limit of {limit} bytes"):
        inflate_bounded(bomb, limit)
    assert recording.produced == limit + 1


@pytest.mark.parametrize("limit", [1, 1000, 65536])
def test_a_stream_of_exactly_the_limit_inflates_and_one_more_byte_is_refused(
    recording: type[_Recording], limit: int
) -> None:
    data = bytes(range(256)) * (limit // 256) + b"x" * (limit % 256)
    assert inflate_bounded(gzip.compress(data), limit) == data
    assert recording.produced == limit
    with pytest.raises(LimitExceeded):
        inflate_bounded(gzip.compress(data + b"y"), limit)


def test_a_logpack_of_exactly_the_limit_decodes_and_one_more_byte_is_refused() -> None:
    record = struct.pack(">QB", 1, 1) + b"{}"
    body = struct.pack(">II", 8, len(record)) + struct.pack(">Q", 0) + record
    at = Limits(max_logpack_decompressed=len(body))
    decoded = decode(sync_log(gzip.compress(body)), at)
    assert decoded == SyncLogRequest(
        1, 2, 3, 4, 5, 6, (LogEntry(1, LogPack((LogEntry(1, Application(b"{}")),))),)
    )
    with pytest.raises(LimitExceeded, match=f"limit of {len(body) - 1} bytes"):
        decode(sync_log(gzip.compress(body)), Limits(max_logpack_decompressed=len(body) - 1))


# -- a frame's length and counts ---------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 13, 1000])
def test_a_frame_of_exactly_the_entries_limit_is_accepted_and_one_byte_more_refused(size: int) -> None:
    limits = Limits(max_entries_size=size)
    header = request(3, b"", size=size)
    assert frame_length(header, 0, limits) == 45 + size
    with pytest.raises(LimitExceeded, match=f"size {size + 1} exceeds the limit of {size} bytes at byte 41"):
        frame_length(request(3, b"", size=size + 1), 0, limits)


def test_a_request_whose_entries_fill_the_limit_decodes() -> None:
    body = entry(1, b"x" * 87)  # 13 + 87 = 100 bytes
    limits = Limits(max_entries_size=100)
    assert decode(request(3, body), limits) == AppendEntriesRequest(
        1, 2, 3, 4, 5, 6, (LogEntry(1, Application(b"x" * 87)),)
    )
    with pytest.raises(LimitExceeded):
        decode(request(3, entry(1, b"x" * 88)), limits)
    # and in a stream: the second frame, one byte too big, is refused at its own size field
    with pytest.raises(LimitExceeded, match="at byte 186"):
        decode_all(request(3, body) + request(3, entry(1, b"x" * 88)), limits)


def test_a_logpack_of_exactly_the_entry_limit_decodes_and_one_more_entry_is_refused() -> None:
    records = [struct.pack(">QB", 1, 1) + b"{}"] * 3
    pack = sync_log(jraft_pack(records, 0))
    message = decode(pack, Limits(max_entries=3))
    assert isinstance(message, SyncLogRequest)
    value = message.entries[0].value
    assert isinstance(value, LogPack) and len(value.entries) == 3
    with pytest.raises(LimitExceeded, match="LogPack holds 3 entries, limit 2"):
        decode(pack, Limits(max_entries=2))


# -- lengths inside their container ---------------------------------------------------------------

TAIL = entry(1, b"NEXTNEXT")  # what a length must not run into


def _configuration(endpoint: bytes, length_delta: int) -> bytes:
    return struct.pack(">QQ", 1, 0) + struct.pack(">II", 7, len(endpoint) + length_delta) + endpoint


def test_an_endpoint_that_fills_its_configuration_decodes() -> None:
    message = decode(request(3, entry(2, _configuration(b"tcp://a:1", 0)) + TAIL))
    assert message == AppendEntriesRequest(
        1,
        2,
        3,
        4,
        5,
        6,
        (
            LogEntry(1, Configuration(1, 0, (ClusterServer(7, "tcp://a:1"),))),
            LogEntry(1, Application(b"NEXTNEXT")),
        ),
    )


def test_an_endpoint_length_one_byte_past_its_configuration_is_refused() -> None:
    with pytest.raises(SizeOverrun, match="endpoint length 10 overruns the payload by 1 bytes"):
        decode(request(3, entry(2, _configuration(b"tcp://a:1", 1)) + TAIL))


def test_an_endpoint_length_one_byte_past_its_cluster_server_is_refused() -> None:
    record = server(4, b"tcp://a:1")
    assert decode(request(6, entry(3, record))) == AddServerRequest(
        1, 2, 3, 4, 5, 6, (LogEntry(1, ClusterServer(4, "tcp://a:1")),)
    )
    longer = struct.pack(">II", 4, 10) + b"tcp://a:1"
    with pytest.raises(SizeOverrun, match="endpoint length 10 overruns the payload by 1 bytes"):
        decode(request(6, entry(3, longer)))


def test_an_entry_value_one_byte_past_the_entries_is_refused() -> None:
    body = entry(1, b"abc")
    expected = AppendEntriesRequest(1, 2, 3, 4, 5, 6, (LogEntry(1, Application(b"abc")),))
    assert decode(request(3, body)) == expected
    with pytest.raises(SizeOverrun, match="overruns the entries by 1 bytes at byte 54"):
        decode(request(3, entry(1, b"abc", size=4)))


def test_an_entry_value_may_not_run_into_the_next_entry() -> None:
    """The first entry's value claims one byte of the second's header: the second is then short."""
    body = entry(1, b"abc", size=4) + entry(1, b"de")
    with pytest.raises(SizeOverrun):  # the second header, read one byte late, is nonsense
        decode(request(3, body))


def _snapshot(data: bytes = b"ab") -> bytes:
    snap = SnapshotSyncRequest(1, 1, Configuration(0, 0, (ClusterServer(1, "tcp://a:1"),)), 0, data, True)
    wire = encode(InstallSnapshotRequest(entries=(LogEntry(1, snap),)))
    return wire


def test_a_snapshot_configuration_one_byte_past_its_payload_is_refused() -> None:
    wire = bytearray(_snapshot())
    assert isinstance(decode(bytes(wire)), InstallSnapshotRequest)
    config_len_at = 45 + 13 + 16
    rest = len(wire) - config_len_at - 4
    struct.pack_into(">I", wire, config_len_at, rest + 1)
    with pytest.raises(SizeOverrun, match=f"configuration length {rest + 1} overruns the payload"):
        decode(bytes(wire))


def test_snapshot_data_may_not_take_the_done_byte() -> None:
    wire = bytearray(_snapshot(b"ab"))
    assert isinstance(decode(bytes(wire)), InstallSnapshotRequest)
    data_len_at = len(wire) - 1 - 2 - 4
    assert struct.unpack_from(">I", wire, data_len_at) == (2,)
    struct.pack_into(">I", wire, data_len_at, 3)  # the data would end where the done byte is
    with pytest.raises(SizeOverrun, match="snapshot data length 3 overruns the payload"):
        decode(bytes(wire))


def test_a_logpack_offset_one_byte_past_the_log_data_is_refused() -> None:
    first = struct.pack(">QB", 1, 1) + b"{}"
    second = struct.pack(">QB", 2, 1) + b"[]"
    log = first + second

    def pack(second_offset: int) -> bytes:
        index = struct.pack(">QQ", 100, 100 + second_offset)
        return sync_log(gzip.compress(struct.pack(">II", 16, len(log)) + index + log))

    good = decode(pack(len(first)))
    assert isinstance(good, SyncLogRequest)
    assert good.entries[0].value == LogPack(
        (LogEntry(1, Application(b"{}")), LogEntry(2, Application(b"[]"))), 100
    )
    with pytest.raises(
        InvalidPayload, match=f"entry 0 spans log bytes 0..{len(log) + 1}, outside the {len(log)}"
    ):
        decode(pack(len(log) + 1))


def test_a_configuration_in_a_logpack_may_not_run_into_the_next_record() -> None:
    config = struct.pack(">QB", 1, 2) + _configuration(b"tcp://a:1", 1)
    after = struct.pack(">QB", 2, 1) + b"NEXTNEXT"
    log = config + after
    index = struct.pack(">QQ", 0, len(config))
    body = struct.pack(">II", 16, len(log)) + index + log
    with pytest.raises(SizeOverrun, match="in LogPack entry 0: endpoint length 10 overruns the payload by 1"):
        decode(sync_log(gzip.compress(body)))
