"""The fuzz targets' checking functions: bytes in, ``None`` out, an exception on a contract violation.

Kept free of atheris so that the regression tests (``tests/fuzz``) replay the corpus and every past crash
through exactly the code the fuzzer ran, without atheris installed. Each function is deterministic: the
splits and modes it uses are derived from the input bytes, never from hidden randomness.

Contracts checked (docs/fuzzing.md):

* codec — any bytes decode to messages or raise a :class:`~garlicfarm.wire.ProtocolError` subclass; the
  incremental :class:`~garlicfarm.wire.Decoder`, fed the same bytes in any split, agrees with whole-buffer
  decoding (same messages, same error type and offset); every decoded message re-encodes to the bytes it
  came from (to bytes that decode to an equal message if it holds a LogPack) and survives the inspector's
  JSON form.
* logpack — a LogPack value decodes to a :class:`~garlicfarm.wire.LogPack` or a ``ProtocolError``; a
  decoded pack never inflated past the limit; it re-encodes to an equal pack; a LogPack in a SyncLogRequest
  decodes the same.
* handshake — whatever bytes arrive, in whatever pieces, :class:`~garlicfarm.handshake.ServerHandshake` and
  :class:`~garlicfarm.handshake.ClientHandshake` only return events, end at EOF, and never hold more than
  the head limit while waiting; the ``Authorization``/``WWW-Authenticate`` parsers raise only their
  documented errors, and what they accept re-formats to a header that parses back the same.
"""

from __future__ import annotations

import json
import random
import struct
import zlib
from collections.abc import Callable, Sequence

from garlicfarm.handshake import (
    Algorithm,
    Authenticated,
    Challenge,
    ChallengeCache,
    ClientConfig,
    ClientHandshake,
    Close,
    DigestCredentials,
    Failed,
    HandshakeStateError,
    NonceRegistry,
    Reconnect,
    Rejected,
    SendBytes,
    ServerConfig,
    ServerHandshake,
    Upgraded,
)
from garlicfarm.handshake.authheader import parse_challenges, parse_credentials
from garlicfarm.handshake.errors import AuthHeaderSyntaxError, CredentialsError
from garlicfarm.wire import (
    DEFAULT_LIMITS,
    Decoder,
    LimitExceeded,
    Limits,
    LogPack,
    Message,
    MessageType,
    ProtocolError,
    Request,
    SyncLogRequest,
    TruncatedMessage,
    ValueType,
    decode,
    decode_all,
    encode,
    encode_log_pack,
)
from garlicfarm.wire.codec import decode_value
from garlicfarm.wire.jsonform import from_json, to_json

__all__ = [
    "CODEC_LIMITS",
    "HANDSHAKE_MODES",
    "LOGPACK_LIMITS",
    "TARGETS",
    "check_codec",
    "check_handshake",
    "check_logpack",
]

KiB = 1024
_HEADER = struct.Struct(">BIIQQQQI")  # the request header (docs/protocol.md)
_ENTRY = struct.Struct(">QBI")  # term, value type, value size
# Smaller than the defaults so that 64 KiB inputs reach every limit; the code paths are the same.
CODEC_LIMITS = Limits(max_entries_size=256 * KiB, max_entries=1000, max_logpack_decompressed=128 * KiB)
LOGPACK_LIMITS = Limits(max_entries_size=256 * KiB, max_entries=1000, max_logpack_decompressed=32 * KiB)


def _splits(data: bytes, salt: int = 0) -> list[bytes]:
    """``data`` in up to 9 non-empty pieces, the cut points derived from the bytes themselves."""
    if len(data) < 2:
        return [data] if data else []
    rng = random.Random(zlib.crc32(data) ^ salt)  # noqa: S311 - determinism, not secrecy
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 8))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


# ----------------------------------------------------------------------------------------------- codec


def _has_logpack(message: Message) -> bool:
    return isinstance(message, Request) and any(isinstance(e.value, LogPack) for e in message.entries)


def _check_round_trip(message: Message, frame: bytes) -> None:
    wire = encode(message)
    if _has_logpack(message):
        # gzip output may differ from the sender's; the entries may not.
        assert decode(wire, DEFAULT_LIMITS) == message, "LogPack message does not survive re-encoding"
    else:
        assert wire == frame, "re-encoding a decoded message changed its bytes"
    text = json.dumps(to_json(message))
    assert from_json(json.loads(text)) == message, "message does not survive the JSON form"


def check_codec(data: bytes) -> None:
    """Whole-buffer decoding, incremental decoding in pieces, and the round trips."""
    whole: list[Message] | None
    try:
        whole = decode_all(data, CODEC_LIMITS)
        whole_error: ProtocolError | None = None
    except ProtocolError as e:
        whole, whole_error = None, e

    decoder = Decoder(CODEC_LIMITS)
    got: list[tuple[Message, bytes]] = []
    error: ProtocolError | None = None
    for piece in _splits(data):
        try:
            decoder.feed(piece)
            while True:
                start = decoder.stream_offset
                message = decoder.next_message()
                if message is None:
                    break
                got.append((message, data[start : decoder.stream_offset]))
        except ProtocolError as e:
            error = e
            break
    if error is not None:
        # A failed decoder stays failed, with the same error.
        for again in (lambda: decoder.feed(b"\x00"), decoder.next_message):
            try:
                again()
            except ProtocolError as e:
                assert e is error, "a failed Decoder raised a different error"
            else:
                raise AssertionError("a failed Decoder accepted more input")

    if whole is not None:
        assert error is None, f"Decoder failed ({error!r}) where decode_all succeeded"
        assert [m for m, _ in got] == whole, "Decoder and decode_all disagree"
        assert decoder.buffered == 0
        if len(whole) == 1:
            assert decode(data, CODEC_LIMITS) == whole[0]
    elif isinstance(whole_error, TruncatedMessage):
        # The stream just ends early: the decoder waits for more instead of failing.
        assert error is None, f"Decoder failed ({error!r}) on a stream decode_all found truncated"
        assert decoder.stream_offset == whole_error.offset, "Decoder stopped at another message"
    else:
        assert whole_error is not None
        assert error is not None, f"Decoder accepted what decode_all refused ({whole_error!r})"
        assert (type(error), error.offset) == (type(whole_error), whole_error.offset), (
            f"Decoder raised {error!r}, decode_all {whole_error!r}"
        )

    for message, frame in got:
        _check_round_trip(message, frame)


# --------------------------------------------------------------------------------------------- logpack


def _inflated_size(packed: bytes, limit: int) -> int:
    """How many bytes ``packed`` inflates to, counting no further than ``limit + 1``."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    return len(inflater.decompress(packed, limit + 1))


def check_logpack(data: bytes) -> None:
    """The first byte picks the mode: bit 0 set — the rest is a LogPack's *inflated* body, gzipped here
    (so the fuzzer works on the layout, not on deflate); clear — the rest is the gzip stream itself
    (headers, truncation, trailing bytes, bombs). Bit 1 also wraps the pack in a SyncLogRequest."""
    if not data:
        return
    mode, body = data[0], data[1:]
    packed = zlib.compress(body, 1, wbits=16 + zlib.MAX_WBITS) if mode & 1 else body
    limits = LOGPACK_LIMITS
    try:
        value = decode_value(packed, ValueType.LOG_PACK, 0, len(packed), limits)
        error: ProtocolError | None = None
    except LimitExceeded as e:
        value, error = None, e
        if mode & 1 and len(body) <= limits.max_logpack_decompressed:
            # Not the size limit, so it must be the entry count.
            assert len(body) >= 8 * (limits.max_entries + 1), f"LimitExceeded on a small pack: {e}"
    except ProtocolError as e:
        value, error = None, e

    if mode & 2:
        frame = _sync_log_request(packed)
        try:
            message = decode(frame, limits)
        except ProtocolError as e:
            assert error is not None and type(e) is type(error), f"in a message: {e!r}, alone: {error!r}"
        else:
            assert value is not None, f"a message accepts the LogPack that alone raised {error!r}"
            assert isinstance(message, SyncLogRequest)
            assert message.entries[0].value == value, "a LogPack decodes differently inside a message"

    if value is None:
        return
    assert isinstance(value, LogPack)
    assert len(value.entries) <= limits.max_entries
    assert _inflated_size(packed, limits.max_logpack_decompressed) <= limits.max_logpack_decompressed
    repacked = encode_log_pack(value.entries)
    again = decode_value(repacked, ValueType.LOG_PACK, 0, len(repacked), DEFAULT_LIMITS)
    assert again == value, "a decoded LogPack does not survive re-encoding"


def _sync_log_request(packed: bytes) -> bytes:
    """A whole SyncLogRequest carrying ``packed`` as its one LogPack entry."""
    entry = _ENTRY.pack(7, ValueType.LOG_PACK, len(packed)) + packed
    return _HEADER.pack(MessageType.SYNC_LOG_REQUEST, 1, 2, 3, 4, 5, 6, len(entry)) + entry


# ------------------------------------------------------------------------------------------- handshake

T0 = 1_700_000_000.0
USER = "alice"
PASSWORD = "correct horse battery staple"  # noqa: S105 - a fixture, like the seeds that use it
HOST = "127.0.0.1:9001"
SERVER_HEAD_LIMIT = 1024  # small, so that 64 KiB inputs reach the 431 paths
CLIENT_HEAD_LIMIT = 1024
HANDSHAKE_MODES = ("server", "client-request-1", "client-request-2", "authorization", "www-authenticate")
_STATUS_LINES = {
    b"HTTP/1.1 101 Switching Protocols",
    b"HTTP/1.1 400 Bad Request",
    b"HTTP/1.1 401 Unauthorized",
    b"HTTP/1.1 404 Not Found",
    b"HTTP/1.1 431 Request Header Fields Too Large",
}


def fixed_random(n: int) -> bytes:
    """The fuzz targets' "randomness": fixed, so a seed holding valid credentials stays valid."""
    return b"\x5a" * n


def server_config() -> ServerConfig:
    return ServerConfig(credentials={USER: PASSWORD}, max_head_size=SERVER_HEAD_LIMIT)


def client_config() -> ClientConfig:
    return ClientConfig(host=HOST, username=USER, password=PASSWORD, max_head_size=CLIENT_HEAD_LIMIT)


def nonce_registry() -> NonceRegistry:
    """A fresh registry per input (replay state must not leak between inputs); its first nonce at
    ``T0`` is always the same."""
    return NonceRegistry(fixed_random)


def cached_challenge(registry: NonceRegistry) -> Challenge:
    return Challenge("farm", registry.issue(T0), Algorithm.SHA256, registry.opaque)


def _drive(
    receive: Callable[[bytes, float], Sequence[object]],
    finished: Callable[[], bool],
    buffered: Callable[[], int],
    limit: int,
    pieces: list[bytes],
) -> Sequence[object]:
    """Feed the pieces, then EOF; the one non-empty event list, which must come with the end."""
    for piece in [*pieces, b""]:
        events = receive(piece, T0 + 1)
        if events:
            assert finished(), f"events {events!r} before the handshake ended"
            try:
                receive(b"x", T0 + 1)
            except HandshakeStateError:
                pass
            else:
                raise AssertionError("a finished handshake accepted more bytes")
            return events
        assert not finished(), "the handshake ended without an event"
        assert buffered() <= limit, f"waiting with {buffered()} bytes buffered, limit {limit}"
    raise AssertionError("EOF did not end the handshake")


def _check_server(payload: bytes) -> None:
    handshake = ServerHandshake(server_config(), nonce_registry(), [("GarlicFarm-Leader", "3")])
    events = _drive(
        handshake.receive_data,
        lambda: handshake.finished,
        lambda: len(handshake._conn.trailing_data[0]),
        SERVER_HEAD_LIMIT,
        _splits(payload, 1),
    )
    kinds = [type(e) for e in events]
    assert kinds in ([SendBytes, Authenticated], [SendBytes, Rejected, Close], [Rejected, Close]), kinds
    if isinstance(events[0], SendBytes):
        data = events[0].data
        assert data.split(b"\r\n", 1)[0] in _STATUS_LINES, data
        if kinds[1] is Rejected:
            assert b"garlic" not in data.lower(), "an unauthenticated peer learnt what we are"
    if isinstance(events[-1], Authenticated):
        assert events[-1].username == USER


def _check_client(payload: bytes, *, cached: bool) -> None:
    cache = ChallengeCache()
    if cached:
        cache.put((HOST, "farm"), cached_challenge(nonce_registry()), T0)
    handshake = ClientHandshake(client_config(), cache, T0, fixed_random)
    assert handshake.sends_credentials == cached
    handshake.initiate()
    events = _drive(
        handshake.receive_data,
        lambda: handshake.finished,
        lambda: len(handshake._conn.trailing_data[0]),
        CLIENT_HEAD_LIMIT,
        _splits(payload, 2),
    )
    assert len(events) == 1 and isinstance(events[0], Reconnect | Upgraded | Failed), events


def _check_authorization(text: str) -> None:
    try:
        item = parse_credentials(text)
    except AuthHeaderSyntaxError:
        return
    try:
        credentials = DigestCredentials.from_params(item.params)
    except CredentialsError:
        return
    again = DigestCredentials.from_params(parse_credentials(credentials.to_header()).params)
    assert again == credentials, "credentials do not survive formatting"


def _check_www_authenticate(text: str) -> None:
    try:
        items = parse_challenges(text)
    except AuthHeaderSyntaxError:
        return
    for item in items:
        challenge = Challenge.from_item(item)
        if challenge is None:
            continue
        (reparsed,) = parse_challenges(challenge.to_header())
        assert Challenge.from_item(reparsed) == challenge, "a challenge does not survive formatting"


def check_handshake(data: bytes) -> None:
    """The first byte picks one of :data:`HANDSHAKE_MODES`; the rest is what the peer sends."""
    if not data:
        return
    mode, payload = HANDSHAKE_MODES[data[0] % len(HANDSHAKE_MODES)], data[1:]
    if mode == "server":
        _check_server(payload)
    elif mode == "client-request-1":
        _check_client(payload, cached=False)
    elif mode == "client-request-2":
        _check_client(payload, cached=True)
    elif mode == "authorization":
        # The server hands the parser UTF-8 text; Latin-1 reaches every code point below 256 as well.
        _check_authorization(payload.decode("latin-1"))
    else:
        _check_www_authenticate(payload.decode("latin-1"))


TARGETS: dict[str, Callable[[bytes], None]] = {
    "codec": check_codec,
    "logpack": check_logpack,
    "handshake": check_handshake,
}
