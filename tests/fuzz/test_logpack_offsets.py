"""LogPack offsets: the bug the logpack fuzzer found (docs/fuzzing.md, finding 1), and JRaft's rule.

An index offset pointing past the end of the log data made the record head unpack out of range and a
``struct.error`` escape the decoder; it must be an ``InvalidPayload`` like every other bad LogPack.
"""

from __future__ import annotations

import gzip
import itertools
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from garlicfarm.wire import Application, InvalidPayload, LogEntry, LogPack, ValueType
from garlicfarm.wire.codec import decode_value, encode_log_pack


def pack(offsets: list[int], log: bytes) -> bytes:
    index = b"".join(struct.pack(">Q", o) for o in offsets)
    return gzip.compress(struct.pack(">II", len(index), len(log)) + index + log, mtime=0)


def decode_pack(data: bytes) -> object:
    return decode_value(data, ValueType.LOG_PACK, 0, len(data))


RECORD = struct.pack(">QB", 2, ValueType.APPLICATION) + b"{}"  # 11 bytes


@pytest.mark.parametrize(
    "offsets",
    [
        [0, 0xFFFFFFFFFFFFFF02],  # the second offset far past the data
        [0, 12],  # one byte past the 11 bytes of log data
        [100, 112],  # JRaft-style absolute offsets, same overrun
    ],
)
def test_offset_past_the_log_data_is_invalid_payload(offsets: list[int]) -> None:
    with pytest.raises(InvalidPayload, match="outside the 11 bytes of log data"):
        decode_pack(pack(offsets, RECORD))


def test_fuzzer_crash_input_in_full() -> None:
    # The crash file less its mode byte (0x21: gzip the rest): index 16 bytes, log 8 bytes,
    # offsets 0 and 0xffffffffffffff.
    body = bytes.fromhex("00000010 00000008 0000000000000000 00ffffffffffffff 027b2278223a317d")
    with pytest.raises(InvalidPayload, match="outside the 8 bytes of log data"):
        decode_pack(gzip.compress(body, mtime=0))


def test_offsets_that_fit_still_decode() -> None:
    decoded = decode_pack(pack([100, 111], RECORD + RECORD))
    assert isinstance(decoded, LogPack) and len(decoded.entries) == 2


# --- JRaft's offset rule (issue 15, docs/protocol.md "The offset rule") ---------------------------------


def _inflated_offsets(packed: bytes) -> list[int]:
    raw = gzip.decompress(packed)
    (index_len,) = struct.unpack_from(">I", raw, 0)
    return [o for (o,) in struct.iter_unpack(">Q", raw[8 : 8 + index_len])]


def test_encoded_offsets_are_positions_from_base() -> None:
    entries = [LogEntry(1, Application(b'{"c":3}')), LogEntry(5, Application(b"[]"))]
    packed = encode_log_pack(entries, base_offset=32)
    assert _inflated_offsets(packed) == [32, 32 + 16]  # record 1: term 8 + type 1 + 7 bytes
    decoded = decode_pack(packed)
    assert isinstance(decoded, LogPack) and decoded.base_offset == 32 and list(decoded.entries) == entries


@given(
    st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=20),
    st.integers(min_value=0, max_value=2**48),
)
def test_any_base_round_trips(values: list[bytes], base: int) -> None:
    entries = [LogEntry(i + 1, Application(v)) for i, v in enumerate(values)]
    packed = encode_log_pack(entries, base_offset=base)
    offsets = _inflated_offsets(packed)
    assert offsets[0] == base
    assert [b - a for a, b in itertools.pairwise(offsets)] == [9 + len(v) for v in values[:-1]]
    decoded = decode_pack(packed)
    assert isinstance(decoded, LogPack)
    assert list(decoded.entries) == entries and decoded.base_offset == base
