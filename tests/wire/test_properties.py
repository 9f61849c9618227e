"""Property tests: the codec is a bijection on valid messages and total on arbitrary bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from garlicfarm.wire import Decoder, LogPack, Message, ProtocolError, decode, encode
from garlicfarm.wire.jsonform import from_json, to_json
from tests.wire.strategies import messages


def _has_log_pack(message: Message) -> bool:
    return any(isinstance(e.value, LogPack) for e in getattr(message, "entries", ()))


@given(messages)
def test_decode_encode_identity(message: Message) -> None:
    wire = encode(message)
    assert decode(wire) == message
    if not _has_log_pack(message):
        assert encode(decode(wire)) == wire


@given(messages)
def test_json_form_roundtrip(message: Message) -> None:
    assert from_json(to_json(message)) == message


def _splits(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for p in [*points, len(data)]:
        out.append(data[last:p])
        last = p
    return out


@given(st.lists(messages, max_size=5), st.lists(st.integers(0, 10_000), max_size=20))
def test_any_split_yields_the_same_messages(batch: list[Message], cuts: list[int]) -> None:
    stream = b"".join(encode(m) for m in batch)
    decoder = Decoder()
    out: list[Message] = []
    for chunk in _splits(stream, cuts):
        out += decoder.receive(chunk)
    assert out == batch
    assert decoder.buffered == 0


def _feed_all(data: bytes, cuts: list[int]) -> None:
    decoder = Decoder()
    try:
        for chunk in _splits(data, cuts):
            decoder.receive(chunk)
    except ProtocolError as e:
        assert e.offset is None or 0 <= e.offset <= len(data)


@settings(max_examples=300)
@given(st.binary(max_size=400), st.lists(st.integers(0, 1000), max_size=10))
def test_random_bytes_only_give_messages_or_protocol_errors(data: bytes, cuts: list[int]) -> None:
    _feed_all(data, cuts)


@settings(max_examples=300)
@given(
    st.lists(messages, min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
    st.lists(st.integers(0, 10_000), max_size=10),
)
def test_mutated_messages_only_give_messages_or_protocol_errors(
    batch: list[Message], mutations: list[tuple[int, int]], cuts: list[int]
) -> None:
    data = bytearray(b"".join(encode(m) for m in batch))
    for position, value in mutations:
        data[position % len(data)] = value
    _feed_all(bytes(data), cuts)


@given(st.lists(messages, min_size=1, max_size=3), st.integers(0, 10_000))
def test_truncated_streams_wait_rather_than_fail(batch: list[Message], cut: int) -> None:
    stream = b"".join(encode(m) for m in batch)
    prefix = stream[: cut % len(stream)]
    decoder = Decoder()
    decoder.receive(prefix)  # never raises: a prefix of valid messages is just incomplete
    assert decoder.buffered <= len(prefix)
