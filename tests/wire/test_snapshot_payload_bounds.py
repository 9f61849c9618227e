"""A SnapshotSyncRequest value cut or stretched at each of its length fields: the exact error, the
exact offset of the field at fault (what `garlicfarm inspect` points at), and the value at the bound
taken (garlicfarm.wire.codec)."""

from __future__ import annotations

import struct

import pytest

from garlicfarm.wire import ClusterServer, Configuration, LogEntry, LogPack, ValueType
from garlicfarm.wire.codec import decode_value, encode_log_pack, encode_value
from garlicfarm.wire.errors import InvalidField, ProtocolError, SizeOverrun, TrailingBytes
from garlicfarm.wire.payloads import Application, SnapshotSyncRequest

CONFIG = Configuration(3, 2, (ClusterServer(1, "tcp://127.0.0.1:1"),))
VALUE = SnapshotSyncRequest(7, 2, CONFIG, 4096, b"chunk", True)
BASE = 1000  # where the value sits in its stream: every offset is counted from there
HEAD = 20  # lastLogIndex, lastLogTerm (8 + 8), configLen (4)


def decode(data: bytes) -> object:
    return decode_value(data, ValueType.SNAPSHOT_SYNC_REQUEST, 0, len(data), base=BASE)


def layout() -> tuple[bytes, int, int]:
    """The encoded value, the configuration's length and where the offset/data-length field starts."""
    data = encode_value(VALUE)
    config_len = struct.unpack_from(">I", data, 16)[0]
    return data, config_len, HEAD + config_len


def failure(data: bytes) -> ProtocolError:
    with pytest.raises(ProtocolError) as raised:
        decode(data)
    return raised.value


def test_the_value_round_trips() -> None:
    assert decode(layout()[0]) == VALUE


@pytest.mark.parametrize("cut", [1, HEAD - 1])
def test_a_header_cut_short(cut: int) -> None:
    error = failure(layout()[0][:cut])
    assert isinstance(error, SizeOverrun) and error.what == "snapshot sync request header truncated"
    assert error.offset == BASE


def test_a_header_and_nothing_else_is_not_a_header_error() -> None:
    data, _, _ = layout()
    error = failure(data[:HEAD])  # exactly the header: the configuration is what is missing
    assert isinstance(error, SizeOverrun) and error.what.startswith("configuration length")


def test_a_configuration_length_one_past_the_payload() -> None:
    data, config_len, _ = layout()
    rest = len(data) - HEAD
    stretched = data[:16] + struct.pack(">I", rest + 1) + data[HEAD:]
    error = failure(stretched)
    assert isinstance(error, SizeOverrun)
    assert error.what == f"configuration length {rest + 1} overruns the payload"
    assert error.offset == BASE + 16
    exact = data[:16] + struct.pack(">I", rest) + data[HEAD:]  # to the end: read, then the rest is missing
    assert isinstance(failure(exact), ProtocolError)
    assert config_len < rest


@pytest.mark.parametrize("keep", [0, 11])
def test_offset_and_data_length_cut_short(keep: int) -> None:
    data, _, mid = layout()
    error = failure(data[: mid + keep])
    assert isinstance(error, SizeOverrun) and error.what == "snapshot offset and data length truncated"
    assert error.offset == BASE + mid


def test_a_data_length_one_past_the_payload() -> None:
    data, _, mid = layout()
    length_at = mid + 8
    fits = len(data) - (length_at + 4) - 1  # the data, then the done byte
    assert struct.unpack_from(">I", data, length_at)[0] == fits == len(b"chunk")
    stretched = data[:length_at] + struct.pack(">I", fits + 1) + data[length_at + 4 :]
    error = failure(stretched)
    assert isinstance(error, SizeOverrun)
    assert error.what == f"snapshot data length {fits + 1} overruns the payload"
    assert error.offset == BASE + length_at


@pytest.mark.parametrize(("done", "ok"), [(0, True), (1, True), (2, False)])
def test_the_done_byte_is_0_or_1(done: int, ok: bool) -> None:
    data = layout()[0]
    changed = data[:-1] + bytes([done])
    if ok:
        value = decode(changed)
        assert isinstance(value, SnapshotSyncRequest) and value.done is (done == 1)
    else:
        error = failure(changed)
        assert isinstance(error, InvalidField) and error.what == "done byte is 2, must be 0 or 1"
        assert error.offset == BASE + len(data) - 1


def test_a_byte_after_the_done_flag() -> None:
    data = layout()[0]
    error = failure(data + b"\x00")
    assert isinstance(error, TrailingBytes) and error.what == "1 bytes after the snapshot's done flag"
    assert error.offset == BASE + len(data)


def test_a_term_past_the_signed_range_is_named_with_its_offset() -> None:
    data = layout()[0]
    error = failure(data[:8] + struct.pack(">Q", 2**63) + data[16:])
    assert "snapshot lastLogTerm" in error.what and error.offset == BASE + 8


def test_a_log_pack_with_a_base_offset_round_trips() -> None:
    entries = [LogEntry(1, Application(b"[1]")), LogEntry(2, Application(b"[22]"))]
    packed = encode_log_pack(entries, base_offset=40)
    value = decode_value(packed, ValueType.LOG_PACK, 0, len(packed))
    assert isinstance(value, LogPack) and list(value.entries) == entries and value.base_offset == 40
    assert packed[4:8] == b"\x00\x00\x00\x00"  # gzip's MTIME: none, so the same entries pack the same
