"""What the outbound handshake says when it fails or is misused: the detail of each failure in h11's
own words, and the words of each misuse."""

from __future__ import annotations

import pytest

from garlicfarm.handshake import ChallengeCache, ClientHandshake, Failed, Failure, HandshakeStateError
from tests.handshake.helpers import T0, client_config, rng
from tests.handshake.test_client import start


def test_a_server_closing_mid_head_is_named_in_h11s_words() -> None:
    handshake, _ = start(ChallengeCache())
    assert handshake.receive_data(b"HTTP/1.1 401 Unauth", T0) == []
    assert handshake.receive_data(b"", T0) == [
        Failed(Failure.CONNECTION_CLOSED, "peer unexpectedly closed connection")
    ]


def test_a_server_closing_before_any_byte_is_a_closed_connection() -> None:
    """h11 reports it as an error (a close while a response is owed), named in its words."""
    handshake, _ = start(ChallengeCache())
    (event,) = handshake.receive_data(b"", T0)
    assert isinstance(event, Failed) and event.reason is Failure.CONNECTION_CLOSED
    assert "ConnectionClosed" in event.detail


def test_a_malformed_response_is_named_in_h11s_words() -> None:
    handshake, _ = start(ChallengeCache())
    assert handshake.receive_data(b"HTTP/1.1 abc\r\n\r\n", T0) == [
        Failed(Failure.MALFORMED_RESPONSE, "illegal status line: bytearray(b'HTTP/1.1 abc')")
    ]


def test_misuse_is_named() -> None:
    handshake = ClientHandshake(client_config(), ChallengeCache(), T0, rng())
    with pytest.raises(HandshakeStateError) as info:
        handshake.receive_data(b"HTTP/1.1 404 Not Found\r\n\r\n", T0)
    assert str(info.value) == "call initiate() and send its bytes first"
    handshake.initiate()
    with pytest.raises(HandshakeStateError) as info:
        handshake.initiate()
    assert str(info.value) == "initiate() was already called"
    handshake.receive_data(b"HTTP/1.1 404 Not Found\r\n\r\n", T0)
    with pytest.raises(HandshakeStateError) as info:
        handshake.receive_data(b"more", T0)
    assert str(info.value) == "the handshake is over; later bytes belong to the binary protocol"
