"""The inbound handshake to the letter: the header names as they go on the wire, the qop a client
sent being the one hashed, the detail of each refusal (h11's own words included), the state before
and after, and the words of a misuse."""

from __future__ import annotations

import attrs
import pytest

from garlicfarm.handshake import (
    Algorithm,
    Authenticated,
    ConfigError,
    HandshakeStateError,
    NonceRegistry,
    Reject,
    Rejected,
    ServerHandshake,
)
from garlicfarm.handshake.digest import compute_response
from tests.handshake.helpers import (
    PASSWORD,
    T0,
    TARGET,
    USER,
    credentials,
    head_lines,
    request_1,
    request_2,
    sent,
    serve,
    server_config,
)
from tests.handshake.test_server_words import refusal


def test_header_names_go_out_in_their_usual_case(nonces: NonceRegistry) -> None:
    """Written as browsers and servers write them: nothing odd for a prober to fingerprint."""
    lines = head_lines(sent(serve(server_config(), nonces, request_1())))
    assert [line.split(":")[0] for line in lines[1:]] == [
        "WWW-Authenticate",
        "WWW-Authenticate",
        "Content-Length",
        "Connection",
    ]
    authorization = credentials(nonces, nonces.issue(T0)).to_header()
    data = request_2(authorization, extra=["Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="])
    lines = head_lines(sent(serve(server_config(), nonces, data)))
    assert lines[1:] == [
        "Connection: Upgrade",
        "Upgrade: websocket",
        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
    ]


@pytest.mark.parametrize("qop", ["AUTH", "Auth"])
def test_the_qop_hashed_is_the_one_sent(nonces: NonceRegistry, qop: str) -> None:
    """qop is matched without case, but the response covers its text as sent (RFC 7616 §3.4.1)."""
    nonce = nonces.issue(T0)

    def response(hashed_qop: str) -> str:
        return compute_response(
            Algorithm.SHA256,
            username=USER,
            realm="farm",
            password=PASSWORD,
            method="GET",
            uri=TARGET,
            nonce=nonce,
            nc="00000001",
            cnonce="0a4f113b",
            qop=hashed_qop,
        )

    wrong = attrs.evolve(credentials(nonces, nonce), qop=qop, response=response("auth"))
    assert refusal(serve(server_config(), nonces, request_2(wrong.to_header()))).reason is (
        Reject.WRONG_PASSWORD
    )
    right = attrs.evolve(wrong, response=response(qop))
    events = serve(server_config(), nonces, request_2(right.to_header()))
    assert events[-1] == Authenticated(USER, Algorithm.SHA256, b"")


def test_a_challenge_without_detail_has_an_empty_one(nonces: NonceRegistry) -> None:
    assert refusal(serve(server_config(), nonces, request_1())) == Rejected(Reject.NO_CREDENTIALS, "")
    basic = serve(server_config(), nonces, request_2("Basic YWxpY2U6eA=="))
    assert refusal(basic) == Rejected(Reject.BASIC_REFUSED, "")


def test_malformed_http_is_named_in_h11s_words(nonces: NonceRegistry) -> None:
    events = serve(server_config(), nonces, b"garbage\r\n\r\n")
    assert refusal(events) == Rejected(
        Reject.MALFORMED_REQUEST, "illegal request line: bytearray(b'garbage')"
    )


def test_a_head_growing_past_the_limit_is_named_with_the_limit(nonces: NonceRegistry) -> None:
    """h11 stops reading an unfinished head at the limit: the detail is the limit, not a size."""
    handshake = ServerHandshake(server_config(max_head_size=1024), nonces)
    events = handshake.receive_data(request_1()[:-2] + b"X-Pad: " + b"a" * 2000, T0)
    assert refusal(events) == Rejected(Reject.OVERSIZED_HEAD, "over 1024 bytes")


def test_a_peer_closing_mid_head_is_named_in_h11s_words(nonces: NonceRegistry) -> None:
    handshake = ServerHandshake(server_config(), nonces)
    assert handshake.receive_data(request_1()[:20], T0) == []
    assert refusal(handshake.receive_data(b"", T0)) == Rejected(
        Reject.CONNECTION_CLOSED, "peer unexpectedly closed connection"
    )


def test_finished_is_false_then_true(nonces: NonceRegistry) -> None:
    handshake = ServerHandshake(server_config(), nonces)
    assert handshake.finished is False
    assert handshake.receive_data(request_1()[:10], T0) == []
    assert handshake.finished is False
    handshake.receive_data(request_1()[10:], T0)
    assert handshake.finished is True


def test_bytes_after_the_end_are_refused_in_words(nonces: NonceRegistry) -> None:
    handshake = ServerHandshake(server_config(), nonces)
    handshake.receive_data(request_1(), T0)
    with pytest.raises(HandshakeStateError) as info:
        handshake.receive_data(b"more", T0)
    assert str(info.value) == "the handshake is over; later bytes belong to the binary protocol"


def test_bad_extra_headers_are_named(nonces: NonceRegistry) -> None:
    with pytest.raises(ConfigError) as info:
        ServerHandshake(server_config(), nonces, [("Upgrade", "h2c")])
    assert str(info.value) == "extra header 'Upgrade' is set by the handshake itself"
    with pytest.raises(ConfigError) as info:
        ServerHandshake(server_config(), nonces, [("Bad Name", "x")])
    assert str(info.value).startswith("invalid extra header: ")
    assert str(info.value) != "invalid extra header: "
