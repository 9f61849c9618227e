"""Property tests: whatever bytes arrive, in whatever pieces, the handshakes only ever return events.

Each run ends in one of two ways: a final event list (the handshake is over), or still waiting for more
bytes with no more than the head limit buffered. Never another exception, never unbounded buffering.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hypothesis import event, given, settings
from hypothesis import strategies as st

from garlicfarm.handshake import (
    Algorithm,
    Authenticated,
    Challenge,
    ChallengeCache,
    ClientHandshake,
    Close,
    Failed,
    NonceRegistry,
    Reconnect,
    Rejected,
    SendBytes,
    ServerHandshake,
    Upgraded,
)
from garlicfarm.handshake.cache import CacheKey
from tests.handshake.helpers import (
    BINARY,
    HOST,
    T0,
    client_config,
    credentials,
    request_1,
    request_2,
    rng,
    server_config,
)

SERVER_LIMIT = 640
CLIENT_LIMIT = 512
KEY: CacheKey = (HOST, "farm")
fuzz = settings(max_examples=300, deadline=None)


def split(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    """``data`` in non-empty pieces at the given cut points (b"" would mean EOF)."""
    points = sorted({c % len(data) for c in cuts if c % len(data)}) if data else []
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True) if a < b]


Mutation = tuple[int, int, int, bytes]
mutations = st.lists(
    st.tuples(
        st.integers(0, 4), st.integers(0, 10_000), st.integers(0, 64), st.binary(min_size=1, max_size=8)
    ),
    max_size=4,
)
_INTERESTING = [b"\r\n", b"\r\n\r\n", b":", b",", b'"', b"\\", b"=", b" ", b"\x00", b"\xff", b"\n"]


def mutate(data: bytes, changes: Sequence[Mutation]) -> bytes:
    """Byte flips, insertions (often of HTTP's own punctuation), deletions, duplications, truncation,
    long runs."""
    out = bytearray(data)
    for kind, where, length, blob in changes:
        at = where % (len(out) + 1)
        if kind == 0 and at < len(out):
            out[at] ^= blob[0] or 1
        elif kind == 1:
            out[at:at] = _INTERESTING[blob[0] % len(_INTERESTING)] if blob[0] < 128 else blob
        elif kind == 2:
            del out[at : at + length]
        elif kind == 3:
            out[at:at] = out[at : at + length]
        elif kind == 4:
            del out[at:]
        else:  # a long run, to reach the head limit
            out[at:at] = blob[:1] * (length * 16)
    return bytes(out)


def drive_server(nonces: NonceRegistry, chunks: list[bytes], eof: bool) -> None:
    handshake = ServerHandshake(
        server_config(max_head_size=SERVER_LIMIT), nonces, [("GarlicFarm-Leader", "3")]
    )
    fed = 0
    for chunk in [*chunks, *([b""] if eof else [])]:
        fed += len(chunk)
        events = handshake.receive_data(chunk, T0 + 1)
        if not events:
            assert not handshake.finished
            continue
        assert handshake.finished
        check_server_events(events)
        last = events[-2] if isinstance(events[-1], Close) else events[-1]
        event(f"server: {last.reason.name if isinstance(last, Rejected) else type(last).__name__}")
        return
    event("server: waiting")
    assert not eof, "EOF always ends the handshake"
    assert fed <= SERVER_LIMIT, "waiting for more while holding more than the head limit"


def check_server_events(events: Sequence[object]) -> None:
    kinds = [type(e) for e in events]
    assert kinds in ([SendBytes, Authenticated], [SendBytes, Rejected, Close], [Rejected, Close])
    if isinstance(events[0], SendBytes):
        status = events[0].data.split(b"\r\n", 1)[0]
        assert status in {
            b"HTTP/1.1 101 Switching Protocols",
            b"HTTP/1.1 400 Bad Request",
            b"HTTP/1.1 401 Unauthorized",
            b"HTTP/1.1 404 Not Found",
            b"HTTP/1.1 431 Request Header Fields Too Large",
        }
        if kinds[1] is Rejected:
            assert b"garlic" not in events[0].data.lower()


def valid_requests(nonces: NonceRegistry) -> list[bytes]:
    good = request_2(credentials(nonces, nonces.issue(T0)).to_header())
    return [request_1(), good, good + BINARY]


@fuzz
@given(data=st.binary(max_size=2000), cuts=st.lists(st.integers(0, 2000), max_size=8), eof=st.booleans())
def test_server_random_bytes(data: bytes, cuts: list[int], eof: bool) -> None:
    drive_server(NonceRegistry(rng()), split(data, cuts), eof)


@fuzz
@given(
    which=st.integers(0, 2),
    changes=mutations,
    cuts=st.lists(st.integers(0, 2000), max_size=8),
    eof=st.booleans(),
)
def test_server_mutated_requests(which: int, changes: list[Mutation], cuts: list[int], eof: bool) -> None:
    nonces = NonceRegistry(rng())
    data = mutate(valid_requests(nonces)[which], changes)
    drive_server(nonces, split(data, cuts), eof)


@fuzz
@given(tail=st.binary(max_size=64), cuts=st.lists(st.integers(0, 2000), max_size=8))
def test_server_valid_request_in_any_split(tail: bytes, cuts: list[int]) -> None:
    nonces = NonceRegistry(rng())
    head = valid_requests(nonces)[1]
    handshake = ServerHandshake(server_config(), nonces)
    received = b""
    for chunk in split(head + tail, cuts):
        received += chunk
        events = handshake.receive_data(chunk, T0)
        if events:
            assert events[-1] == Authenticated(
                "alice", credentials(nonces, "x").algorithm, received[len(head) :]
            )
            return
    raise AssertionError("a complete valid request must be answered")


def drive_client(cached: bool, chunks: list[bytes], eof: bool) -> None:
    cache = ChallengeCache()
    if cached:
        nonces = NonceRegistry(rng())
        cache.put(KEY, Challenge("farm", nonces.issue(T0), Algorithm.SHA256, nonces.opaque), T0)
    handshake = ClientHandshake(client_config(max_head_size=CLIENT_LIMIT), cache, T0, rng(4))
    handshake.initiate()
    fed = 0
    for chunk in [*chunks, *([b""] if eof else [])]:
        fed += len(chunk)
        events = handshake.receive_data(chunk, T0 + 1)
        if not events:
            assert not handshake.finished
            continue
        assert handshake.finished
        assert len(events) == 1
        assert isinstance(events[0], Reconnect | Upgraded | Failed)
        if isinstance(events[0], Reconnect):
            # Whatever challenge got cached, the next attempt can build its request.
            ClientHandshake(client_config(), cache, T0 + 2, rng(5)).initiate()
        event(
            f"client: {events[0].reason.name if isinstance(events[0], Failed) else type(events[0]).__name__}"
        )
        return
    event("client: waiting")
    assert not eof, "EOF always ends the handshake"
    assert fed <= CLIENT_LIMIT, "waiting for more while holding more than the head limit"


def valid_responses() -> list[Callable[[], bytes]]:
    def challenge() -> bytes:
        nonces = NonceRegistry(rng())
        events = ServerHandshake(server_config(), nonces).receive_data(request_1(), T0)
        assert isinstance(events[0], SendBytes)
        return events[0].data

    return [
        challenge,
        lambda: (
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n" + BINARY
        ),
        lambda: b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    ]


@fuzz
@given(
    cached=st.booleans(),
    data=st.binary(max_size=2000),
    cuts=st.lists(st.integers(0, 2000), max_size=8),
    eof=st.booleans(),
)
def test_client_random_bytes(cached: bool, data: bytes, cuts: list[int], eof: bool) -> None:
    drive_client(cached, split(data, cuts), eof)


@fuzz
@given(
    cached=st.booleans(),
    which=st.integers(0, 2),
    changes=mutations,
    cuts=st.lists(st.integers(0, 2000), max_size=8),
    eof=st.booleans(),
)
def test_client_mutated_responses(
    cached: bool, which: int, changes: list[Mutation], cuts: list[int], eof: bool
) -> None:
    drive_client(cached, split(mutate(valid_responses()[which](), changes), cuts), eof)
