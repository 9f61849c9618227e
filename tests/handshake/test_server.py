"""The inbound handshake, fed hand-written requests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from garlicfarm.handshake import (
    Algorithm,
    Authenticated,
    Challenge,
    Close,
    ConfigError,
    HandshakeStateError,
    NonceRegistry,
    Reject,
    Rejected,
    SendBytes,
    ServerHandshake,
)
from garlicfarm.handshake.authheader import parse_challenges
from tests.handshake.helpers import (
    BINARY,
    HOUR,
    T0,
    credentials,
    head_lines,
    header_list,
    request,
    request_1,
    request_2,
    rng,
    sent,
    serve,
    server_config,
)

NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def challenges_in(response: bytes) -> list[Challenge]:
    found = [Challenge.from_item(parse_challenges(v)[0]) for v in header_list(response, "WWW-Authenticate")]
    assert all(c is not None for c in found)
    return [c for c in found if c is not None]


def assert_refused(events: Sequence[object], status_line: str, reason: Reject) -> bytes:
    assert len(events) == 3
    assert isinstance(events[0], SendBytes)
    assert isinstance(events[1], Rejected)
    assert events[1].reason is reason, events[1]
    assert events[2] == Close()
    response = events[0].data
    assert head_lines(response)[0] == status_line
    assert header_list(response, "Connection") == ["close"]
    assert header_list(response, "Content-Length") == ["0"]
    assert response.endswith(b"\r\n\r\n")  # no body
    assert b"garlic" not in response.lower()
    assert not header_list(response, "Server")
    return response


def assert_401(
    events: Sequence[object], reason: Reject, *, stale: bool = False, realm: str = "farm"
) -> list[Challenge]:
    response = assert_refused(events, "HTTP/1.1 401 Unauthorized", reason)
    challenges = challenges_in(response)
    assert [c.algorithm for c in challenges] == [Algorithm.SHA256, Algorithm.MD5]  # SHA-256 first
    assert {c.nonce for c in challenges} == {challenges[0].nonce}
    assert all(c.realm == realm and c.opaque and c.stale is stale for c in challenges)
    return challenges


def test_request_1_gets_two_digest_challenges(nonces: NonceRegistry) -> None:
    events = serve(server_config(), nonces, request_1())
    challenges = assert_401(events, Reject.NO_CREDENTIALS)
    assert nonces.issued_at(challenges[0].nonce) == T0
    assert header_list(sent(events), "WWW-Authenticate") == [
        f'Digest realm="farm", qop="auth", algorithm={alg}, nonce="{challenges[0].nonce}", '
        f'opaque="{nonces.opaque}"'
        for alg in ("SHA-256", "MD5")
    ]


def test_realm_is_configurable(nonces: NonceRegistry) -> None:
    events = serve(server_config(realm="my farm"), nonces, request_1())
    assert challenges_in(sent(events))[0].realm == "my farm"


@pytest.mark.parametrize(
    "target",
    [
        "/",
        "/index.html",
        "/GarlicFarm/farm/2/websocket",  # wrong version
        "/GarlicFarm/other/1/websocket",  # wrong cluster
        "/GarlicFarm/FARM/1/websocket",
        "/garlicfarm/farm/1/websocket",  # wrong prefix (case matters)
        "/Garlic/farm/1/websocket",
        "/GarlicFarm/farm/1/websocket/",
        "/GarlicFarm/farm/1/websocket?x=1",
        "/GarlicFarm/farm/1",
        "/GarlicFarm/farm/1/websocke",
        "/GarlicFarm/%66arm/1/websocket",
        "http://127.0.0.1:9001/GarlicFarm/farm/1/websocket",
        "*",
    ],
)
def test_wrong_path_is_a_plain_404(nonces: NonceRegistry, target: str) -> None:
    events = serve(server_config(), nonces, request_1(target=target))
    assert assert_refused(events, "HTTP/1.1 404 Not Found", Reject.WRONG_PATH) == NOT_FOUND
    # Even with valid credentials: a wrong path never gets further.
    authorization = credentials(nonces, nonces.issue(T0), uri=target).to_header()
    events = serve(server_config(), nonces, request_2(authorization, target=target))
    assert sent(events) == NOT_FOUND


def test_cluster_and_version_select_the_path(nonces: NonceRegistry) -> None:
    config = server_config(cluster="alpha", version="7")
    assert_401(
        serve(config, nonces, request_1(target="/GarlicFarm/alpha/7/websocket")),
        Reject.NO_CREDENTIALS,
        realm="alpha",
    )
    assert sent(serve(config, nonces, request_1())) == NOT_FOUND


@pytest.mark.parametrize("method", ["POST", "PUT", "HEAD", "OPTIONS", "DELETE", "CONNECT", "get"])
def test_wrong_method_is_a_plain_404(nonces: NonceRegistry, method: str) -> None:
    events = serve(server_config(), nonces, request_1(method=method))
    assert assert_refused(events, "HTTP/1.1 404 Not Found", Reject.WRONG_METHOD) == NOT_FOUND


def test_http_1_0_is_refused(nonces: NonceRegistry) -> None:
    events = serve(server_config(), nonces, request_1(version="HTTP/1.0"))
    assert_refused(events, "HTTP/1.1 400 Bad Request", Reject.WRONG_HTTP_VERSION)


@pytest.mark.parametrize("with_upgrade", [True, False])
def test_basic_auth_is_refused_with_digest_challenges(nonces: NonceRegistry, with_upgrade: bool) -> None:
    headers = ["Authorization: Basic YWxpY2U6Y29ycmVjdCBob3JzZSBiYXR0ZXJ5IHN0YXBsZQ=="]
    if with_upgrade:
        headers += ["Connection: Upgrade", "Upgrade: websocket"]
    assert_401(serve(server_config(), nonces, request(headers)), Reject.BASIC_REFUSED)
    assert_401(serve(server_config(), nonces, request(["Authorization: basic !!!"])), Reject.BASIC_REFUSED)


def test_other_schemes_are_refused(nonces: NonceRegistry) -> None:
    events = serve(server_config(), nonces, request_2("Bearer abc.def"))
    assert_401(events, Reject.UNSUPPORTED_SCHEME)


def test_valid_credentials_get_a_101(nonces: NonceRegistry) -> None:
    authorization = credentials(nonces, nonces.issue(T0)).to_header()
    events = serve(server_config(), nonces, request_2(authorization), T0 + 1, [("GarlicFarm-Leader", "3")])
    assert events == [
        SendBytes(
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            b"GarlicFarm-Leader: 3\r\n\r\n"
        ),
        Authenticated("alice", Algorithm.SHA256, b""),
    ]


@pytest.mark.parametrize("algorithm", [Algorithm.SHA256, Algorithm.MD5])
def test_both_algorithms_are_accepted(nonces: NonceRegistry, algorithm: Algorithm) -> None:
    authorization = credentials(nonces, nonces.issue(T0), algorithm=algorithm).to_header()
    events = serve(server_config(), nonces, request_2(authorization))
    assert events[-1] == Authenticated("alice", algorithm, b"")


def test_opaque_is_not_checked(nonces: NonceRegistry) -> None:
    authorization = credentials(nonces, nonces.issue(T0), opaque="from-before-a-restart").to_header()
    assert isinstance(serve(server_config(), nonces, request_2(authorization))[-1], Authenticated)


def test_rfc2617_client_without_algorithm_or_opaque_is_accepted(nonces: NonceRegistry) -> None:
    c = credentials(nonces, nonces.issue(T0), algorithm=Algorithm.MD5, opaque=None)
    authorization = c.to_header().replace(" algorithm=MD5,", "")
    assert "algorithm" not in authorization
    assert "opaque" not in authorization
    assert serve(server_config(), nonces, request_2(authorization))[-1] == Authenticated(
        "alice", Algorithm.MD5, b""
    )


def test_callable_credentials(nonces: NonceRegistry) -> None:
    config = server_config(credentials=lambda user: "pw" if user == "carol" else None)
    authorization = credentials(nonces, nonces.issue(T0), username="carol", password="pw").to_header()
    assert isinstance(serve(config, nonces, request_2(authorization))[-1], Authenticated)


def test_binary_data_in_the_same_read_is_handed_on(nonces: NonceRegistry) -> None:
    data = request_2(credentials(nonces, nonces.issue(T0)).to_header()) + BINARY
    assert serve(server_config(), nonces, data)[-1] == Authenticated("alice", Algorithm.SHA256, BINARY)


def test_any_split_of_the_request(nonces: NonceRegistry) -> None:
    head = request_2(credentials(nonces, nonces.issue(T0)).to_header())
    data = head + BINARY
    for nc, cut in enumerate(range(1, len(data)), start=1):
        head = request_2(credentials(nonces, nonces.issue(T0), nc=nc).to_header())
        data = head + BINARY
        handshake = ServerHandshake(server_config(), nonces)
        first = handshake.receive_data(data[:cut], T0)
        if cut < len(head):
            assert first == []
            events = handshake.receive_data(data[cut:], T0)
            assert events[-1] == Authenticated("alice", Algorithm.SHA256, BINARY)
        else:
            assert first[-1] == Authenticated("alice", Algorithm.SHA256, data[len(head) : cut])
        assert handshake.finished


def test_byte_by_byte(nonces: NonceRegistry) -> None:
    data = request_2(credentials(nonces, nonces.issue(T0)).to_header())
    handshake = ServerHandshake(server_config(), nonces)
    events = [e for i in range(len(data)) for e in handshake.receive_data(data[i : i + 1], T0)]
    assert events[-1] == Authenticated("alice", Algorithm.SHA256, b"")


def test_unknown_user(nonces: NonceRegistry) -> None:
    authorization = credentials(nonces, nonces.issue(T0), username="mallory").to_header()
    assert_401(serve(server_config(), nonces, request_2(authorization)), Reject.UNKNOWN_USER)


def test_wrong_password(nonces: NonceRegistry) -> None:
    authorization = credentials(nonces, nonces.issue(T0), password="wrong").to_header()
    assert_401(serve(server_config(), nonces, request_2(authorization)), Reject.WRONG_PASSWORD)
    # Another user's password is wrong too.
    authorization = credentials(nonces, nonces.issue(T0), username="bob").to_header()
    assert_401(serve(server_config(), nonces, request_2(authorization)), Reject.WRONG_PASSWORD)


def test_a_wrong_digest_does_not_use_up_the_nc(nonces: NonceRegistry) -> None:
    nonce = nonces.issue(T0)
    forged = credentials(nonces, nonce, password="guess", nc=0xFFFFFFFF).to_header()
    assert_401(serve(server_config(), nonces, request_2(forged)), Reject.WRONG_PASSWORD)
    authorization = credentials(nonces, nonce, nc=1).to_header()
    assert isinstance(serve(server_config(), nonces, request_2(authorization))[-1], Authenticated)


def test_expired_nonce_is_stale(nonces: NonceRegistry) -> None:
    authorization = credentials(nonces, nonces.issue(T0)).to_header()
    events = serve(server_config(), nonces, request_2(authorization), T0 + HOUR + 1)
    challenges = assert_401(events, Reject.STALE_NONCE, stale=True)
    assert nonces.issued_at(challenges[0].nonce) == T0 + HOUR + 1  # a fresh one


def test_nonce_good_for_an_hour(nonces: NonceRegistry) -> None:
    authorization = credentials(nonces, nonces.issue(T0)).to_header()
    assert isinstance(serve(server_config(), nonces, request_2(authorization), T0 + HOUR)[-1], Authenticated)


def test_unknown_nonce_with_right_digest_is_stale(nonces: NonceRegistry) -> None:
    # E.g. a nonce from before the server restarted: the client knows the password, so stale=true.
    authorization = credentials(nonces, NonceRegistry(rng(9)).issue(T0)).to_header()
    assert_401(serve(server_config(), nonces, request_2(authorization)), Reject.STALE_NONCE, stale=True)
    # With a wrong digest it is just a wrong password, not stale.
    authorization = credentials(nonces, "made-up", password="x").to_header()
    assert_401(serve(server_config(), nonces, request_2(authorization)), Reject.WRONG_PASSWORD)


def test_replayed_request_is_refused(nonces: NonceRegistry) -> None:
    data = request_2(credentials(nonces, nonces.issue(T0), nc=5).to_header())
    assert isinstance(serve(server_config(), nonces, data)[-1], Authenticated)
    # refused; stale=true, as a fresh nonce is of no use without the password
    assert_401(serve(server_config(), nonces, data, T0 + 1), Reject.REPLAYED_NC, stale=True)


def test_nc_out_of_order_is_accepted_once(nonces: NonceRegistry) -> None:
    """A client's concurrent connections take nc 4 and 5 in order and may reach us in another."""
    nonce = nonces.issue(T0)
    assert isinstance(
        serve(server_config(), nonces, request_2(credentials(nonces, nonce, nc=5).to_header()))[-1],
        Authenticated,
    )
    lower = credentials(nonces, nonce, nc=4, cnonce="fresh").to_header()
    assert isinstance(serve(server_config(), nonces, request_2(lower))[-1], Authenticated)
    again = credentials(nonces, nonce, nc=4, cnonce="fresher").to_header()
    assert_401(serve(server_config(), nonces, request_2(again)), Reject.REPLAYED_NC, stale=True)
    higher = credentials(nonces, nonce, nc=6, cnonce="fresh").to_header()
    assert isinstance(serve(server_config(), nonces, request_2(higher))[-1], Authenticated)


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        ({"realm": "other"}, "realm"),
        ({"uri": "/GarlicFarm/farm/1/websocket?"}, "uri"),
    ],
)
def test_mismatched_fields(nonces: NonceRegistry, change: dict[str, Any], detail: str) -> None:
    authorization = credentials(nonces, nonces.issue(T0), **change).to_header()
    events = serve(server_config(), nonces, request_2(authorization))
    assert_401(events, Reject.BAD_CREDENTIALS)
    assert detail in str(events[1])


@pytest.mark.parametrize(
    "mangle",
    [
        lambda a: a.replace("algorithm=SHA-256", "algorithm=SHA-256-sess"),
        lambda a: a.replace("algorithm=SHA-256", "algorithm=SHA-512"),
        lambda a: a.replace("qop=auth", "qop=auth-int"),
        lambda a: a.replace("nc=00000001", "nc=1"),
        lambda a: a.replace("nc=00000001, ", ""),
        lambda a: a.replace('cnonce="0a4f113b", ', ""),
        lambda a: a.replace('username="alice"', "username*=UTF-8''alice"),
        lambda a: a + ", userhash=true",
        lambda a: a + ', realm="farm"',  # duplicate parameter
        lambda a: a[:-1],  # unterminated quoted-string
        lambda a: "Digest",
        lambda a: "Digest \x7fgarbage",
    ],
)
def test_malformed_credentials_get_a_401(nonces: NonceRegistry, mangle: object) -> None:
    assert callable(mangle)
    authorization = mangle(credentials(nonces, nonces.issue(T0)).to_header())
    assert_401(serve(server_config(), nonces, request_2(authorization)), Reject.BAD_CREDENTIALS)


def test_several_authorization_headers(nonces: NonceRegistry) -> None:
    authorization = credentials(nonces, nonces.issue(T0)).to_header()
    data = request_2(authorization, extra=[f"Authorization: {authorization}"])
    assert_401(serve(server_config(), nonces, data), Reject.BAD_CREDENTIALS)


def test_non_utf8_authorization(nonces: NonceRegistry) -> None:
    data = request_2("Digest username=x").replace(b"username=x", b'username="\xff"')
    assert_401(serve(server_config(), nonces, data), Reject.BAD_CREDENTIALS)


def test_credentials_without_upgrade_are_refused_without_using_the_nc(nonces: NonceRegistry) -> None:
    authorization = credentials(nonces, nonces.issue(T0)).to_header()
    events = serve(server_config(), nonces, request([f"Authorization: {authorization}"]))
    assert assert_refused(events, "HTTP/1.1 400 Bad Request", Reject.NOT_UPGRADE) == BAD_REQUEST
    assert isinstance(serve(server_config(), nonces, request_2(authorization))[-1], Authenticated)


def test_other_headers_are_ignored(nonces: NonceRegistry) -> None:
    authorization = credentials(nonces, nonces.issue(T0)).to_header()
    extra = ["User-Agent: x", "X-Whatever: y", "Sec-WebSocket-Version: 13", "Content-Length: 0"]
    assert isinstance(
        serve(server_config(), nonces, request_2(authorization, extra=extra))[-1], Authenticated
    )


def test_sec_websocket_key_is_answered(nonces: NonceRegistry) -> None:
    # The RFC 6455 §1.3 example, for a WebSocket-aware proxy on the way.
    authorization = credentials(nonces, nonces.issue(T0)).to_header()
    data = request_2(authorization, extra=["Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="])
    events = serve(server_config(), nonces, data)
    assert header_list(sent(events), "Sec-WebSocket-Accept") == ["s3pPLMBiTxaQ9kYGzzhZRbK+xOo="]


@pytest.mark.parametrize(
    "data",
    [
        b"garbage\r\n\r\n",
        b"GET /GarlicFarm/farm/1/websocket HTTP/1.1\r\nCache-Control: no-cache\r\n\r\n",  # no Host
        b"GET /GarlicFarm/farm/1/websocket HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
        b"GET /GarlicFarm/farm/1/websocket HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(200) + b"\r\n\r\n",  # a TLS hello
    ],
)
def test_malformed_http_is_a_400(nonces: NonceRegistry, data: bytes) -> None:
    events = serve(server_config(), nonces, data)
    assert assert_refused(events, "HTTP/1.1 400 Bad Request", Reject.MALFORMED_REQUEST) == BAD_REQUEST


@pytest.mark.parametrize("body", ["Content-Length: 5", "Transfer-Encoding: chunked"])
def test_request_with_body_is_a_400(nonces: NonceRegistry, body: str) -> None:
    events = serve(server_config(), nonces, request([body]) + b"hello")
    assert_refused(events, "HTTP/1.1 400 Bad Request", Reject.MALFORMED_REQUEST)


def test_oversized_head_in_one_read(nonces: NonceRegistry) -> None:
    config = server_config(max_head_size=1024)
    big = request_1()[:-2] + b"X-Pad: " + b"a" * 1024 + b"\r\n\r\n"
    events = serve(config, nonces, big)
    assert (
        assert_refused(events, "HTTP/1.1 431 Request Header Fields Too Large", Reject.OVERSIZED_HEAD)
        == TOO_LARGE
    )


def test_oversized_head_arriving_slowly(nonces: NonceRegistry) -> None:
    handshake = ServerHandshake(server_config(max_head_size=1024), nonces)
    start = request_1()[:-2]
    assert handshake.receive_data(start, T0) == []
    for _ in range((1024 - len(start)) // 109):
        assert handshake.receive_data(b"X-Pad: " + b"a" * 100 + b"\r\n", T0) == []
    events = handshake.receive_data(b"X-Pad: " + b"a" * 100 + b"\r\n", T0)
    assert_refused(events, "HTTP/1.1 431 Request Header Fields Too Large", Reject.OVERSIZED_HEAD)


def test_head_at_the_limit_is_fine(nonces: NonceRegistry) -> None:
    head = request_1()
    padded = head[:-2] + b"X-Pad: " + b"a" * (1024 - len(head) - 9) + b"\r\n\r\n"
    assert len(padded) == 1024
    assert_401(serve(server_config(max_head_size=1024), nonces, padded), Reject.NO_CREDENTIALS)
    over = padded[:-4] + b"a\r\n\r\n"
    assert_refused(
        serve(server_config(max_head_size=1024), nonces, over),
        "HTTP/1.1 431 Request Header Fields Too Large",
        Reject.OVERSIZED_HEAD,
    )


@pytest.mark.parametrize("received", [b"", b"GET /GarlicFarm/farm/1/websocket HTTP/1.1\r\nHost:"])
def test_peer_closing_early(nonces: NonceRegistry, received: bytes) -> None:
    handshake = ServerHandshake(server_config(), nonces)
    assert handshake.receive_data(received, T0) == (
        [] if received else [Rejected(Reject.CONNECTION_CLOSED), Close()]
    )
    if received:
        events = handshake.receive_data(b"", T0)
        assert [type(e) for e in events] == [Rejected, Close]
        assert events[0].reason is Reject.CONNECTION_CLOSED  # type: ignore[union-attr]


def test_no_data_after_the_end(nonces: NonceRegistry) -> None:
    handshake = ServerHandshake(server_config(), nonces)
    handshake.receive_data(request_1(), T0)
    with pytest.raises(HandshakeStateError):
        handshake.receive_data(b"more", T0)


@pytest.mark.parametrize(
    "headers",
    [
        [("Connection", "keep-alive")],
        [("upgrade", "h2c")],
        [("Bad Name", "x")],
        [("X-Ok", "line\r\nbreak")],
    ],
)
def test_bad_extra_headers(nonces: NonceRegistry, headers: list[tuple[str, str]]) -> None:
    with pytest.raises(ConfigError):
        ServerHandshake(server_config(), nonces, headers)


@pytest.mark.parametrize(
    "changes",
    [
        {"cluster": "a/b"},
        {"cluster": ""},
        {"cluster": ".."},
        {"version": "1 "},
        {"realm": "x\n"},
        {"max_head_size": 10},
    ],
)
def test_bad_server_config(changes: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        server_config(**changes)
