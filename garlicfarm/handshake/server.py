"""The inbound side: one :class:`ServerHandshake` per accepted connection.

Request 1 (no credentials) gets a 401 with two Digest challenges (SHA-256 first, then MD5) and a close;
request 2 with valid credentials gets a 101, after which the connection carries the binary protocol.
Whatever is wrong, the peer sees only a bare standard 400/401/404/431 with an empty body and no
``Server`` header: nothing says "Garlic Farm" before the peer has proved its credentials.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence

import h11

from garlicfarm.handshake import authheader
from garlicfarm.handshake.config import ServerConfig
from garlicfarm.handshake.digest import Algorithm, Challenge, DigestCredentials, compute_response
from garlicfarm.handshake.errors import (
    AuthHeaderSyntaxError,
    ConfigError,
    CredentialsError,
    HandshakeStateError,
)
from garlicfarm.handshake.events import (
    Authenticated,
    Close,
    Reject,
    Rejected,
    SendBytes,
    ServerEvent,
)
from garlicfarm.handshake.httphead import comma_tokens, head_size, header_values
from garlicfarm.handshake.nonces import NonceRegistry, NonceVerdict

_REASONS = {
    400: b"Bad Request",
    401: b"Unauthorized",
    404: b"Not Found",
    431: b"Request Header Fields Too Large",
}
_WEBSOCKET_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
# Headers the 101 sets itself; a caller's extra header may not override them.
_RESERVED = frozenset(
    {"connection", "upgrade", "content-length", "transfer-encoding", "sec-websocket-accept"}
)
# Hashed for an unknown user, so that "unknown user" costs the same as "wrong password".
_DUMMY_PASSWORD = "\x00garlicfarm-no-such-user"  # noqa: S105 - never matches: the user does not exist


class ServerHandshake:
    """Drive with :meth:`receive_data` (``b""`` means the peer closed) until an event list ends in
    ``Close`` or ``Authenticated``; then the handshake is over.

    ``extra_headers`` go into the 101 only (e.g. ``("GarlicFarm-Leader", "3")``), never into the
    responses an unauthenticated peer can see.
    """

    def __init__(
        self,
        config: ServerConfig,
        nonces: NonceRegistry,
        extra_headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        self._config = config
        self._nonces = nonces
        self._extra = _check_extra_headers(extra_headers)
        self._conn = h11.Connection(h11.SERVER, max_incomplete_event_size=config.max_head_size)
        self._received = 0
        self._request: h11.Request | None = None
        self._finished = False

    @property
    def finished(self) -> bool:
        return self._finished

    def receive_data(self, data: bytes, now: float) -> list[ServerEvent]:
        if self._finished:
            raise HandshakeStateError("the handshake is over; later bytes belong to the binary protocol")
        self._received += len(data)
        self._conn.receive_data(data)  # cannot raise here: after an EOF we are always finished
        while True:
            try:
                event = self._conn.next_event()
            except h11.RemoteProtocolError as e:
                if self._conn.trailing_data[1]:
                    return self._finish(Reject.CONNECTION_CLOSED, str(e))
                if e.error_status_hint == 431:
                    return self._refuse(
                        431, Reject.OVERSIZED_HEAD, f"over {self._config.max_head_size} bytes"
                    )
                return self._refuse(400, Reject.MALFORMED_REQUEST, str(e))
            if event is h11.NEED_DATA:
                return []
            if isinstance(event, h11.Request):
                size = head_size(self._conn, self._received)
                if size > self._config.max_head_size:
                    return self._refuse(431, Reject.OVERSIZED_HEAD, f"{size} bytes")
                if header_values(event.headers, b"transfer-encoding") or any(
                    v.strip() != b"0" for v in header_values(event.headers, b"content-length")
                ):
                    # A body would be ambiguous with the binary data that follows a 101.
                    return self._refuse(400, Reject.MALFORMED_REQUEST, "request has a body")
                self._request = event
            elif isinstance(event, h11.EndOfMessage) and self._request is not None:
                return self._answer(self._request, now)
            elif isinstance(event, h11.ConnectionClosed):
                return self._finish(Reject.CONNECTION_CLOSED)
            else:  # pragma: no cover - h11 gives nothing else before EndOfMessage of a body-less request
                return self._refuse(400, Reject.MALFORMED_REQUEST, f"unexpected {event!r}")

    def _answer(self, request: h11.Request, now: float) -> list[ServerEvent]:
        target = request.target.decode("latin-1")
        if target != self._config.target:
            return self._refuse(404, Reject.WRONG_PATH, repr(target))
        # 404 rather than 405: a 405 must name the allowed methods, i.e. admit the resource exists.
        if request.method != b"GET":
            return self._refuse(404, Reject.WRONG_METHOD, request.method.decode("latin-1"))
        if request.http_version != b"1.1":
            return self._refuse(400, Reject.WRONG_HTTP_VERSION, request.http_version.decode("latin-1"))
        authorizations = header_values(request.headers, b"authorization")
        if not authorizations:
            return self._challenge(now, Reject.NO_CREDENTIALS)
        if len(authorizations) > 1:
            return self._challenge(now, Reject.BAD_CREDENTIALS, "several Authorization headers")
        value = authorizations[0].decode("latin-1")
        scheme = authheader.credentials_scheme(value)
        if scheme == "basic":
            return self._challenge(now, Reject.BASIC_REFUSED)
        if scheme != "digest":
            return self._challenge(now, Reject.UNSUPPORTED_SCHEME, repr(scheme))
        # Checked before the credentials so that a request we cannot upgrade does not use up an nc.
        if "websocket" not in comma_tokens(request.headers, b"upgrade"):
            return self._refuse(400, Reject.NOT_UPGRADE, "no Upgrade: websocket")
        try:
            item = authheader.parse_credentials(authorizations[0].decode("utf-8"))
            credentials = DigestCredentials.from_params(item.params)
        except UnicodeDecodeError:
            return self._challenge(now, Reject.BAD_CREDENTIALS, "Authorization is not UTF-8")
        except (AuthHeaderSyntaxError, CredentialsError) as e:
            return self._challenge(now, Reject.BAD_CREDENTIALS, str(e))
        return self._verify(request, credentials, now)

    def _verify(self, request: h11.Request, c: DigestCredentials, now: float) -> list[ServerEvent]:
        config = self._config
        if c.realm != config.realm:
            return self._challenge(now, Reject.BAD_CREDENTIALS, f"realm {c.realm!r}")
        if c.uri != config.target:
            return self._challenge(now, Reject.BAD_CREDENTIALS, f"uri {c.uri!r} is not the request target")
        # `opaque` is not checked: the digest does not cover it, so checking would prove nothing, and a
        # restarted server (new registry, new opaque) must answer an old one with stale=true, not refuse.
        password = config.password_for(c.username)
        expected = compute_response(
            c.algorithm,
            username=c.username,
            realm=c.realm,
            password=_DUMMY_PASSWORD if password is None else password,
            method=request.method.decode("ascii"),
            uri=c.uri,
            nonce=c.nonce,
            nc=c.nc,
            cnonce=c.cnonce,
            qop=c.qop,
        )
        digest_ok = hmac.compare_digest(expected.encode("ascii"), c.response.lower().encode("utf-8"))
        if password is None:
            return self._challenge(now, Reject.UNKNOWN_USER, repr(c.username))
        if not digest_ok:
            return self._challenge(now, Reject.WRONG_PASSWORD, f"user {c.username!r}")
        # Only now, with the digest proven, may the nonce's nc state change.
        verdict = self._nonces.admit(c.nonce, c.nc_value, now)
        if verdict is NonceVerdict.REPLAYED:
            # Refused, and stale=true: a replay gains nothing from a fresh nonce without the password,
            # and a client whose connection came too late (an nc far below its later ones) retries.
            return self._challenge(now, Reject.REPLAYED_NC, f"user {c.username!r}, nc {c.nc}", stale=True)
        if verdict is not NonceVerdict.ACCEPTED:
            # The client knows the password; it just needs a nonce we still honour.
            return self._challenge(now, Reject.STALE_NONCE, f"{verdict.value} nonce", stale=True)
        return self._upgrade(request, c.username, c.algorithm)

    def _upgrade(self, request: h11.Request, username: str, algorithm: Algorithm) -> list[ServerEvent]:
        headers: list[tuple[str, str]] = [("Connection", "Upgrade"), ("Upgrade", "websocket")]
        keys = header_values(request.headers, b"sec-websocket-key")
        if len(keys) == 1:
            # For a WebSocket-aware proxy on the way (the proposal's "Sec-WebSocket-* if proxied").
            digest = hashlib.sha1(keys[0].strip() + _WEBSOCKET_GUID, usedforsecurity=False).digest()
            headers.append(("Sec-WebSocket-Accept", base64.b64encode(digest).decode("ascii")))
        headers.extend(self._extra)
        data = self._conn.send(
            h11.InformationalResponse(status_code=101, headers=headers, reason=b"Switching Protocols")
        )
        self._finished = True
        return [SendBytes(data), Authenticated(username, algorithm, self._conn.trailing_data[0])]

    def _challenge(
        self, now: float, reason: Reject, detail: str = "", *, stale: bool = False
    ) -> list[ServerEvent]:
        nonce = self._nonces.issue(now)
        opaque = self._nonces.opaque
        challenges = [
            ("WWW-Authenticate", Challenge(self._config.realm, nonce, algorithm, opaque, stale).to_header())
            for algorithm in (Algorithm.SHA256, Algorithm.MD5)
        ]
        return self._refuse(401, reason, detail, challenges)

    def _refuse(
        self, status: int, reason: Reject, detail: str = "", headers: Sequence[tuple[str, str]] = ()
    ) -> list[ServerEvent]:
        response = h11.Response(
            status_code=status,
            headers=[*headers, ("Content-Length", "0"), ("Connection", "close")],
            reason=_REASONS[status],
        )
        # h11 lets a server answer from IDLE or SEND_RESPONSE, which is where any error leaves us.
        data = self._conn.send(response) + self._conn.send(h11.EndOfMessage())
        return [SendBytes(data), *self._finish(reason, detail)]

    def _finish(self, reason: Reject, detail: str = "") -> list[ServerEvent]:
        self._finished = True
        return [Rejected(reason, detail), Close()]


def _check_extra_headers(headers: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    checked = tuple((str(name), str(value)) for name, value in headers)
    for name, _ in checked:
        if name.lower() in _RESERVED:
            raise ConfigError(f"extra header {name!r} is set by the handshake itself")
    try:  # let h11 judge header syntax now, not when the 101 is sent
        h11.InformationalResponse(status_code=101, headers=list(checked))
    except h11.LocalProtocolError as e:
        raise ConfigError(f"invalid extra header: {e}") from None
    return checked
