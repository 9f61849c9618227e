"""The LogPack offset bug the logpack fuzzer found (docs/fuzzing.md, finding 1).

An index offset pointing past the end of the log data made the record head unpack out of range and a
``struct.error`` escape the decoder; it must be an ``InvalidPayload`` like every other bad LogPack.
"""

from __future__ import annotations

import gzip
import struct

import pytest

from garlicfarm.wire import InvalidPayload, LogPack, ValueType
from garlicfarm.wire.codec import decode_value


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
