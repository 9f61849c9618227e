"""The outbound handshake, fed hand-written responses."""

from __future__ import annotations

import pytest

from garlicfarm.handshake import (
    Algorithm,
    Challenge,
    ChallengeCache,
    ClientHandshake,
    ConfigError,
    DigestCredentials,
    Failed,
    Failure,
    HandshakeStateError,
    Reconnect,
    Upgraded,
)
from garlicfarm.handshake.authheader import parse_credentials
from tests.handshake.helpers import BINARY, HOST, HOUR, T0, TARGET, client_config, header_list, rng

KEY = (HOST, "farm")
SHA = Challenge("farm", "nonce-1", Algorithm.SHA256, "op")
MD5 = Challenge("farm", "nonce-1", Algorithm.MD5, "op")
UPGRADED = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"


def unauthorized(*challenges: str) -> bytes:
    lines = ["HTTP/1.1 401 Unauthorized", *(f"WWW-Authenticate: {c}" for c in challenges)]
    return ("\r\n".join([*lines, "Content-Length: 0", "Connection: close"]) + "\r\n\r\n").encode()


def start(cache: ChallengeCache, now: float = T0, **changes: object) -> tuple[ClientHandshake, bytes]:
    handshake = ClientHandshake(client_config(**changes), cache, now, rng(3))
    return handshake, handshake.initiate()


def sent_credentials(request: bytes) -> DigestCredentials:
    (value,) = header_list(request, "Authorization")
    return DigestCredentials.from_params(parse_credentials(value).params)


def test_request_1_bytes() -> None:
    handshake, request = start(ChallengeCache())
    assert not handshake.sends_credentials
    assert request == (
        b"GET /GarlicFarm/farm/1/websocket HTTP/1.1\r\nHost: 127.0.0.1:9001\r\n"
        b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )


def test_cluster_and_version_in_the_path() -> None:
    _, request = start(ChallengeCache(), cluster="alpha", version="2")
    assert request.startswith(b"GET /GarlicFarm/alpha/2/websocket HTTP/1.1\r\n")


def test_challenge_is_cached_and_sha256_preferred() -> None:
    cache = ChallengeCache()
    handshake, _ = start(cache)
    # MD5 listed first: the client still picks SHA-256.
    events = handshake.receive_data(unauthorized(MD5.to_header(), SHA.to_header()), T0)
    assert events == [Reconnect("challenge received")]
    entry = cache.get(KEY, T0)
    assert entry is not None
    assert entry.challenge == SHA
    assert handshake.finished


def test_forced_md5() -> None:
    cache = ChallengeCache()
    handshake, _ = start(cache, algorithms=(Algorithm.MD5,))
    handshake.receive_data(unauthorized(SHA.to_header(), MD5.to_header()), T0)
    entry = cache.get(KEY, T0)
    assert entry is not None
    assert entry.challenge == MD5


def test_md5_only_server_is_fine_and_sha256_only_client_is_not() -> None:
    cache = ChallengeCache()
    handshake, _ = start(cache)
    assert handshake.receive_data(unauthorized(MD5.to_header()), T0) == [Reconnect("challenge received")]
    handshake, _ = start(ChallengeCache(), algorithms=(Algorithm.SHA256,))
    assert handshake.receive_data(unauthorized(MD5.to_header()), T0) == [Failed(Failure.NO_USABLE_CHALLENGE)]


def test_challenges_in_one_header_and_junk_headers() -> None:
    cache = ChallengeCache()
    handshake, _ = start(cache)
    data = unauthorized('Digest realm="broken', f'Basic realm="farm", {MD5.to_header()}, {SHA.to_header()}')
    assert handshake.receive_data(data, T0) == [Reconnect("challenge received")]
    assert cache.get(KEY, T0).challenge == SHA  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "challenges",
    [
        (),
        ('Basic realm="farm"',),
        ('Digest realm="farm", nonce="n", qop="auth", algorithm=MD5-sess',),
        ('Digest realm="farm", nonce="n"',),
        ('Digest realm="farm", nonce="n", qop="auth", algorithm=SHA-512-256',),
    ],
)
def test_no_usable_challenge(challenges: tuple[str, ...]) -> None:
    cache = ChallengeCache()
    handshake, _ = start(cache)
    assert handshake.receive_data(unauthorized(*challenges), T0) == [Failed(Failure.NO_USABLE_CHALLENGE)]
    assert len(cache) == 0


def test_cached_challenge_goes_straight_to_request_2() -> None:
    cache = ChallengeCache()
    cache.put(KEY, SHA, T0)
    first, request = start(cache, T0 + 10)
    assert first.sends_credentials
    assert request.startswith(
        b"GET /GarlicFarm/farm/1/websocket HTTP/1.1\r\nHost: 127.0.0.1:9001\r\nCache-Control: no-cache\r\n"
        b"Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\nAuthorization: Digest "
    )
    one = sent_credentials(request)
    assert (one.username, one.realm, one.nonce, one.uri, one.algorithm, one.nc, one.qop, one.opaque) == (
        "alice",
        "farm",
        "nonce-1",
        TARGET,
        Algorithm.SHA256,
        "00000001",
        "auth",
        "op",
    )
    _, again = start(cache, T0 + 20)
    two = sent_credentials(again)
    assert two.nc == "00000002"
    assert two.cnonce != one.cnonce or two.response != one.response


def test_cache_entry_expires_after_its_lifetime() -> None:
    cache = ChallengeCache()
    cache.put(KEY, SHA, T0)
    assert start(cache, T0 + HOUR)[0].sends_credentials
    assert not start(cache, T0 + HOUR + 1)[0].sends_credentials


def test_cached_challenge_of_a_refused_algorithm_is_not_used() -> None:
    cache = ChallengeCache()
    cache.put(KEY, SHA, T0)
    assert not start(cache, algorithms=(Algorithm.MD5,))[0].sends_credentials


def test_cache_is_per_host_and_cluster() -> None:
    cache = ChallengeCache()
    cache.put(KEY, SHA, T0)
    assert not start(cache, host="127.0.0.1:9002")[0].sends_credentials
    assert not start(cache, cluster="other")[0].sends_credentials
    assert start(cache)[0].sends_credentials


def test_upgraded_with_headers_and_leftover() -> None:
    cache = ChallengeCache()
    cache.put(KEY, SHA, T0)
    handshake, _ = start(cache)
    response = UPGRADED[:-2] + b"GarlicFarm-Leader: 3\r\nGarlicFarm-Members: 1=tcp://a:9001\r\n\r\n"
    (event,) = handshake.receive_data(response + BINARY, T0)
    assert isinstance(event, Upgraded)
    assert event.leftover == BINARY
    assert event.header("GarlicFarm-Leader") == "3"
    assert event.header("garlicfarm-members") == "1=tcp://a:9001"
    assert event.header("Missing") is None
    assert cache.get(KEY, T0) is not None  # kept for the next connection


def test_upgrade_response_in_pieces() -> None:
    data = UPGRADED + BINARY
    for cut in range(1, len(data)):
        cache = ChallengeCache()
        cache.put(KEY, SHA, T0)
        handshake, _ = start(cache)
        first = handshake.receive_data(data[:cut], T0)
        if cut < len(UPGRADED):
            assert first == []
            assert handshake.receive_data(data[cut:], T0) == [Upgraded(first_headers(), BINARY)]
        else:
            assert first == [Upgraded(first_headers(), data[len(UPGRADED) : cut])]


def first_headers() -> tuple[tuple[str, str], ...]:
    return (("connection", "Upgrade"), ("upgrade", "websocket"))


def test_401_to_request_2_is_an_authentication_failure() -> None:
    cache = ChallengeCache()
    cache.put(KEY, SHA, T0)
    handshake, _ = start(cache)
    fresh = Challenge("farm", "nonce-2", Algorithm.SHA256, "op")
    events = handshake.receive_data(unauthorized(fresh.to_header()), T0)
    assert events == [Failed(Failure.AUTH_FAILED, "credentials refused")]
    assert len(cache) == 0  # the next attempt starts over


def test_stale_is_retried_once() -> None:
    cache = ChallengeCache()
    cache.put(KEY, SHA, T0)
    handshake, _ = start(cache)
    fresh = Challenge("farm", "nonce-2", Algorithm.SHA256, "op", stale=True)
    assert handshake.receive_data(unauthorized(fresh.to_header()), T0) == [
        Reconnect("stale nonce, retrying once with the fresh challenge")
    ]
    retry, request = start(cache)
    assert sent_credentials(request).nonce == "nonce-2"
    assert sent_credentials(request).nc == "00000001"
    fresher = Challenge("farm", "nonce-3", Algorithm.SHA256, "op", stale=True)
    assert retry.receive_data(unauthorized(fresher.to_header()), T0) == [
        Failed(Failure.AUTH_FAILED, "stale nonce again")
    ]
    assert len(cache) == 0


def test_success_after_a_stale_retry_allows_another_retry_later() -> None:
    cache = ChallengeCache()
    cache.put(KEY, SHA, T0, retried_stale=True)
    handshake, _ = start(cache)
    assert isinstance(handshake.receive_data(UPGRADED, T0)[0], Upgraded)
    assert not cache.get(KEY, T0).retried_stale  # type: ignore[union-attr]


@pytest.mark.parametrize("cached", [False, True])
def test_404(cached: bool) -> None:
    cache = ChallengeCache()
    if cached:
        cache.put(KEY, SHA, T0)
    handshake, _ = start(cache)
    events = handshake.receive_data(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nNot Found", T0)
    assert events == [Failed(Failure.NOT_FOUND)]
    assert str(events[0]) == "404: wrong cluster/version or not a Garlic Farm server"
    assert len(cache) == 0


@pytest.mark.parametrize(
    "response",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 400 Bad Request\r\n\r\n",
        b"HTTP/1.1 500 Internal Server Error\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.0 302 Found\r\nLocation: /\r\n\r\n",
    ],
)
def test_unexpected_status(response: bytes) -> None:
    handshake, _ = start(ChallengeCache())
    (event,) = handshake.receive_data(response, T0)
    assert isinstance(event, Failed)
    assert event.reason is Failure.UNEXPECTED_RESPONSE


def test_101_to_request_1_is_malformed() -> None:
    handshake, _ = start(ChallengeCache())
    (event,) = handshake.receive_data(UPGRADED, T0)
    assert isinstance(event, Failed)
    assert event.reason is Failure.MALFORMED_RESPONSE


def test_101_without_websocket_is_malformed() -> None:
    cache = ChallengeCache()
    cache.put(KEY, SHA, T0)
    handshake, _ = start(cache)
    events = handshake.receive_data(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", T0)
    assert events == [Failed(Failure.MALFORMED_RESPONSE, "101 without Upgrade: websocket")]


@pytest.mark.parametrize(
    "response", [b"SSH-2.0-OpenSSH_9.6\r\n\r\n", b"HTTP/1.1 abc\r\n\r\n", b"\x00" * 64 + b"\r\n\r\n"]
)
def test_malformed_response(response: bytes) -> None:
    handshake, _ = start(ChallengeCache())
    (event,) = handshake.receive_data(response, T0)
    assert isinstance(event, Failed)
    assert event.reason is Failure.MALFORMED_RESPONSE


def test_oversized_response_head() -> None:
    big = unauthorized(SHA.to_header(), *["x" * 100] * 10)
    handshake, _ = start(ChallengeCache(), max_head_size=1024)
    assert handshake.receive_data(big, T0) == [Failed(Failure.OVERSIZED_HEAD, f"{len(big)} bytes")]
    handshake, _ = start(ChallengeCache(), max_head_size=1024)
    assert handshake.receive_data(big[:1000], T0) == []
    assert handshake.receive_data(big[1000:1100], T0) == [Failed(Failure.OVERSIZED_HEAD, "over 1024 bytes")]


@pytest.mark.parametrize("received", [b"", b"HTTP/1.1 401 Unauth"])
def test_server_closing_early(received: bytes) -> None:
    handshake, _ = start(ChallengeCache())
    if received:
        assert handshake.receive_data(received, T0) == []
    (event,) = handshake.receive_data(b"", T0)
    assert isinstance(event, Failed)
    assert event.reason is Failure.CONNECTION_CLOSED


def test_misuse_raises_handshake_state_error() -> None:
    handshake = ClientHandshake(client_config(), ChallengeCache(), T0, rng())
    with pytest.raises(HandshakeStateError):
        handshake.receive_data(b"HTTP/1.1 404 Not Found\r\n\r\n", T0)
    handshake.initiate()
    with pytest.raises(HandshakeStateError):
        handshake.initiate()
    handshake.receive_data(b"HTTP/1.1 404 Not Found\r\n\r\n", T0)
    with pytest.raises(HandshakeStateError):
        handshake.receive_data(b"more", T0)


@pytest.mark.parametrize(
    "changes",
    [
        {"host": ""},
        {"host": "a b"},
        {"host": "a\r\nX: y"},
        {"username": "ali\nce"},
        {"username": "élise"},
        {"cluster": "a b"},
        {"algorithms": ()},
        {"algorithms": (Algorithm.MD5, Algorithm.MD5)},
        {"algorithms": ("MD5",)},
        {"max_head_size": 0},
    ],
)
def test_bad_client_config(changes: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        client_config(**changes)


def test_password_is_not_in_repr() -> None:
    assert "correct horse" not in repr(client_config())


def test_non_ascii_challenge_from_a_foreign_server() -> None:
    cache = ChallengeCache()
    handshake, _ = start(cache)
    strange = 'Digest realm="f\u00e5rm\tx", nonce="n\u00f6nce", qop="auth", algorithm=SHA-256'
    assert handshake.receive_data(unauthorized(strange), T0) == [Reconnect("challenge received")]
    _, request = start(cache)
    assert 'realm="f\u00e5rm\tx"'.encode() in request
    assert sent_credentials_utf8(request).nonce == "n\u00f6nce"


def sent_credentials_utf8(request: bytes) -> DigestCredentials:
    (line,) = [x for x in request.split(b"\r\n") if x.startswith(b"Authorization: ")]
    value = line.removeprefix(b"Authorization: ").decode("utf-8")
    return DigestCredentials.from_params(parse_credentials(value).params)
