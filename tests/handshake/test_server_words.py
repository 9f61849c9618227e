"""What the inbound handshake tells the operator when it refuses a peer: the reason and its detail,
word for word (the log line a refusal leaves is built from them), and the head limit counted over
every read."""

from __future__ import annotations

from collections.abc import Sequence

from garlicfarm.handshake import NonceRegistry, Reject, Rejected, ServerHandshake
from tests.handshake.helpers import T0, credentials, request, request_1, request_2, rng, serve, server_config


def refusal(events: Sequence[object]) -> Rejected:
    found = [e for e in events if isinstance(e, Rejected)]
    assert len(found) == 1, events
    return found[0]


def test_path_method_and_version_are_named(nonces: NonceRegistry) -> None:
    config = server_config()
    assert refusal(serve(config, nonces, request_1(target="/x"))) == Rejected(Reject.WRONG_PATH, "'/x'")
    assert refusal(serve(config, nonces, request_1(method="POST"))) == Rejected(Reject.WRONG_METHOD, "POST")
    assert refusal(serve(config, nonces, request_1(version="HTTP/1.0"))) == Rejected(
        Reject.WRONG_HTTP_VERSION, "1.0"
    )


def test_credential_refusals_are_named(nonces: NonceRegistry) -> None:
    config = server_config()
    unknown = credentials(nonces, nonces.issue(T0), username="mallory").to_header()
    assert refusal(serve(config, nonces, request_2(unknown))) == Rejected(Reject.UNKNOWN_USER, "'mallory'")
    wrong = credentials(nonces, nonces.issue(T0), password="wrong").to_header()
    assert refusal(serve(config, nonces, request_2(wrong))) == Rejected(Reject.WRONG_PASSWORD, "user 'alice'")
    assert refusal(serve(config, nonces, request_2("Bearer abc"))) == Rejected(
        Reject.UNSUPPORTED_SCHEME, "'bearer'"
    )
    good = credentials(nonces, nonces.issue(T0)).to_header()
    twice = request_2(good, extra=[f"Authorization: {good}"])
    assert refusal(serve(config, nonces, twice)) == Rejected(
        Reject.BAD_CREDENTIALS, "several Authorization headers"
    )
    not_utf8 = request_2("Digest username=x").replace(b"username=x", b'username="\xff"')
    assert refusal(serve(config, nonces, not_utf8)) == Rejected(
        Reject.BAD_CREDENTIALS, "Authorization is not UTF-8"
    )
    unterminated = refusal(serve(config, nonces, request_2(good[:-1])))
    assert unterminated == Rejected(Reject.BAD_CREDENTIALS, "unterminated quoted-string")


def test_replays_and_stale_nonces_are_named(nonces: NonceRegistry) -> None:
    config = server_config()
    data = request_2(credentials(nonces, nonces.issue(T0), nc=5).to_header())
    serve(config, nonces, data)
    assert refusal(serve(config, nonces, data, T0 + 1)) == Rejected(
        Reject.REPLAYED_NC, "user 'alice', nc 00000005"
    )
    stale = request_2(credentials(nonces, NonceRegistry(rng(9)).issue(T0)).to_header())
    detail = refusal(serve(config, nonces, stale)).detail
    assert detail.endswith(" nonce") and detail != " nonce"


def test_requests_that_are_not_an_upgrade_are_named(nonces: NonceRegistry) -> None:
    config = server_config()
    good = credentials(nonces, nonces.issue(T0)).to_header()
    assert refusal(serve(config, nonces, request([f"Authorization: {good}"]))) == Rejected(
        Reject.NOT_UPGRADE, "no Upgrade: websocket"
    )
    assert refusal(serve(config, nonces, request(["Content-Length: 5"]) + b"hello")) == Rejected(
        Reject.MALFORMED_REQUEST, "request has a body"
    )
    malformed = refusal(serve(config, nonces, b"garbage\r\n\r\n"))
    assert malformed.reason is Reject.MALFORMED_REQUEST and malformed.detail


def test_an_oversized_head_is_named_with_its_size(nonces: NonceRegistry) -> None:
    config = server_config(max_head_size=1024)
    head = request_1()[:-2] + b"X-Pad: " + b"a" * 1024 + b"\r\n\r\n"
    assert refusal(serve(config, nonces, head)) == Rejected(Reject.OVERSIZED_HEAD, f"{len(head)} bytes")


def test_a_head_over_several_reads_is_counted_whole(nonces: NonceRegistry) -> None:
    """Three reads under the limit each, a complete head over it: refused with the whole size."""
    head = request_1()[:-2] + b"X-Pad: " + b"a" * (1025 - len(request_1()) - 9) + b"\r\n\r\n"
    assert len(head) == 1025
    handshake = ServerHandshake(server_config(max_head_size=1024), nonces)
    third = len(head) // 3
    assert handshake.receive_data(head[:third], T0) == []
    assert handshake.receive_data(head[third : 2 * third], T0) == []
    assert refusal(handshake.receive_data(head[2 * third :], T0)) == Rejected(
        Reject.OVERSIZED_HEAD, "1025 bytes"
    )
