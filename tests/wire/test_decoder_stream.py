"""The incremental decoder's offsets are stream offsets however the stream was cut and however often
the decoder dropped what it had consumed (each clear and each compaction adds to the count), it
applies its limits to a frame's declared size before buffering it, and a failed stream stays failed."""

from __future__ import annotations

import itertools

import pytest

from garlicfarm.wire import AppendEntriesResponse, Decoder, Limits, ProtocolError, encode

RESPONSE = encode(AppendEntriesResponse(1, 2, 3, 4, True))
BAD_TERM = RESPONSE[:9] + b"\x80" + RESPONSE[10:]  # term 2^63: the field at byte 9 of the frame


def error_of(decoder: Decoder, data: bytes) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        decoder.receive(data)
    return info.value


def test_offsets_count_every_cleared_buffer() -> None:
    decoder = Decoder()
    for _ in range(3):  # each feed after a whole message starts a fresh buffer
        assert len(decoder.receive(RESPONSE)) == 1
    assert error_of(decoder, BAD_TERM).offset == 3 * len(RESPONSE) + 9


def test_offsets_count_every_compaction() -> None:
    """Messages fed with a partial one always pending: the consumed prefix is dropped now and then."""
    decoder = Decoder()
    count = 3 * 65536 // len(RESPONSE)  # enough for more than one compaction
    data = RESPONSE * count
    # reads of 38 messages each, starting half a message in: a read never ends on a message's end,
    # so the buffer is never emptied and only compaction drops what was consumed
    cuts = [0, *range(len(RESPONSE) // 2, len(data), 38 * len(RESPONSE)), len(data)]
    taken = largest = 0
    for lo, hi in itertools.pairwise(cuts):
        taken += len(decoder.receive(data[lo:hi]))
        largest = max(largest, len(decoder._buf))
    assert taken == count
    assert largest <= 2 * 65536 + 38 * len(RESPONSE)  # the consumed prefix is dropped: memory is bounded
    assert decoder.stream_offset == len(data)
    assert error_of(decoder, BAD_TERM).offset == len(data) + 9


def test_an_unknown_type_is_placed_in_the_stream() -> None:
    decoder = Decoder()
    decoder.receive(RESPONSE + RESPONSE[:10])
    decoder.receive(RESPONSE[10:])
    error = error_of(decoder, b"\x63")
    assert (error.what, error.offset) == ("unknown message type 99", 2 * len(RESPONSE))


def test_the_limits_apply_to_a_frames_declared_size() -> None:
    decoder = Decoder(Limits(max_entries_size=10))
    header = bytes([3]) + bytes(40) + (11).to_bytes(4, "big")  # declares 11 bytes of entries
    error = error_of(decoder, header)
    assert error.what == "log entries size 11 exceeds the limit of 10 bytes"
    assert error.offset == 41


def test_a_failed_stream_stays_failed() -> None:
    decoder = Decoder()
    first = error_of(decoder, BAD_TERM)
    with pytest.raises(ProtocolError) as again:
        decoder.next_message()
    assert again.value is first
    with pytest.raises(ProtocolError) as fed:
        decoder.feed(RESPONSE)
    assert fed.value is first
