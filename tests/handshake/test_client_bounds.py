"""The outbound handshake and its settings at each bound and one past it: the response head's size
counted over every read and without the binary bytes that follow it, header lists without spaces,
each setting's smallest allowed value, and the words a failure is reported with."""

from __future__ import annotations

import pytest

from garlicfarm.handshake import ChallengeCache, ConfigError, Failed, Failure, Reject, Rejected, Upgraded
from tests.handshake.helpers import BINARY, T0, client_config
from tests.handshake.test_client import KEY, SHA, UPGRADED, start

LIMIT = 256  # the smallest head limit a configuration may set


def primed() -> ChallengeCache:
    """A cache holding the server's challenge: the request carries credentials and asks to upgrade."""
    cache = ChallengeCache()
    cache.put(KEY, SHA, T0)
    return cache


def upgraded_head(size: int) -> bytes:
    """A 101 response whose head is exactly ``size`` bytes."""
    pad = size - len(UPGRADED) - len("X-Pad: \r\n")
    head = UPGRADED[:-2] + b"X-Pad: " + b"a" * pad + b"\r\n\r\n"
    assert len(head) == size
    return head


def test_a_head_of_exactly_the_limit_upgrades_and_the_binary_bytes_after_it_are_not_counted() -> None:
    handshake, _ = start(primed(), max_head_size=LIMIT)
    events = handshake.receive_data(upgraded_head(LIMIT) + BINARY * 20, T0)
    assert len(events) == 1 and isinstance(events[0], Upgraded)
    assert events[0].leftover == BINARY * 20


def test_a_head_one_byte_over_the_limit_is_refused_with_its_size() -> None:
    handshake, _ = start(primed(), max_head_size=LIMIT)
    assert handshake.receive_data(upgraded_head(LIMIT + 1), T0) == [
        Failed(Failure.OVERSIZED_HEAD, f"{LIMIT + 1} bytes")
    ]


def test_a_head_over_several_reads_is_counted_whole() -> None:
    """Each read adds to the count: a head of 300 bytes in three reads is 300 bytes, not the last 100."""
    head = upgraded_head(LIMIT + 44)
    handshake, _ = start(primed(), max_head_size=LIMIT)
    assert handshake.receive_data(head[:100], T0) == []
    assert handshake.receive_data(head[100:200], T0) == []
    assert handshake.receive_data(head[200:], T0) == [Failed(Failure.OVERSIZED_HEAD, f"{LIMIT + 44} bytes")]


def test_an_upgrade_listed_without_spaces_is_seen() -> None:
    handshake, _ = start(primed())
    response = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c,websocket\r\n\r\n"
    (event,) = handshake.receive_data(response, T0)
    assert isinstance(event, Upgraded)


def test_an_unexpected_status_is_named() -> None:
    handshake, _ = start(ChallengeCache())
    (event,) = handshake.receive_data(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n", T0)
    assert event == Failed(Failure.UNEXPECTED_RESPONSE, "HTTP 500")
    assert str(event) == f"{Failure.UNEXPECTED_RESPONSE.value}: HTTP 500"


def test_a_failure_without_detail_reads_as_its_reason_alone() -> None:
    handshake, _ = start(ChallengeCache())
    (event,) = handshake.receive_data(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", T0)
    assert event == Failed(Failure.NOT_FOUND)
    assert str(event) == Failure.NOT_FOUND.value


def test_a_malformed_response_says_what_h11_found() -> None:
    handshake, _ = start(ChallengeCache())
    (event,) = handshake.receive_data(b"HTTP/1.1 abc\r\n\r\n", T0)
    assert isinstance(event, Failed) and event.reason is Failure.MALFORMED_RESPONSE
    assert event.detail  # h11's own words, for the log


@pytest.mark.parametrize(("size", "ok"), [(LIMIT - 1, False), (LIMIT, True)])
def test_the_head_limit_is_at_least_256(size: int, ok: bool) -> None:
    if ok:
        assert client_config(max_head_size=size).max_head_size == size
    else:
        with pytest.raises(ConfigError, match=f"max_head_size must be at least 256 bytes, not {size}"):
            client_config(max_head_size=size)


@pytest.mark.parametrize("host", ["a\x01b", "a\x7fb", "a\tb"])
def test_a_host_with_a_control_character_is_refused(host: str) -> None:
    with pytest.raises(ConfigError, match="host must be a Host header value like '127.0.0.1:9001'"):
        client_config(host=host)


def test_a_cache_may_keep_a_challenge_for_half_a_second_and_hold_one() -> None:
    cache = ChallengeCache(lifetime=0.5, max_entries=1)
    assert len(cache) == 0
    for lifetime in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ConfigError, match="cache lifetime must be a positive number of seconds"):
            ChallengeCache(lifetime=lifetime)
    with pytest.raises(ConfigError, match="max_entries must be at least 1, not 0"):
        ChallengeCache(max_entries=0)


def test_a_server_side_refusal_reads_as_its_reason_and_its_detail() -> None:
    assert str(Rejected(Reject.CONNECTION_CLOSED)) == Reject.CONNECTION_CLOSED.value
    assert str(Rejected(Reject.OVERSIZED_HEAD, "300 bytes")) == f"{Reject.OVERSIZED_HEAD.value}: 300 bytes"
