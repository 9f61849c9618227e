"""The outbound side: one :class:`ClientHandshake` per connection attempt.

Without a cached challenge it sends request 1, caches the 401's challenge and asks for a new
connection (the 401 closes this one). With one it sends request 2 straight away, with the next ``nc``
and a fresh ``cnonce``.
"""

from __future__ import annotations

from collections.abc import Callable

import h11

from garlicfarm.handshake import authheader
from garlicfarm.handshake.cache import CacheKey, ChallengeCache
from garlicfarm.handshake.config import ClientConfig
from garlicfarm.handshake.digest import Challenge, DigestCredentials
from garlicfarm.handshake.errors import AuthHeaderSyntaxError, HandshakeStateError
from garlicfarm.handshake.events import ClientEvent, Failed, Failure, Reconnect, Upgraded
from garlicfarm.handshake.features import FEATURES_HEADER, format_features
from garlicfarm.handshake.httphead import comma_tokens, decode_headers, head_size, header_values

_CNONCE_BYTES = 16


class ClientHandshake:
    """Send :meth:`initiate`'s bytes, then drive with :meth:`receive_data` (``b""`` means the server
    closed) until it returns ``Reconnect``, ``Upgraded`` or ``Failed``; then the handshake is over.

    ``now`` (seconds, any consistent clock) dates cache entries; ``random_bytes`` makes the cnonce.
    """

    def __init__(
        self,
        config: ClientConfig,
        cache: ChallengeCache,
        now: float,
        random_bytes: Callable[[int], bytes],
    ) -> None:
        self._config = config
        self._cache = cache
        self._key: CacheKey = (config.host, config.cluster)
        self._conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=config.max_head_size)
        self._received = 0
        self._initiated = False
        self._finished = False
        # All bytes: realm, nonce and opaque come from the server and need not be ASCII (h11 refuses a
        # non-ASCII str); they go out as UTF-8, which is what the server hashes.
        headers = [(b"Host", config.host.encode("ascii")), (b"Cache-Control", b"no-cache")]
        cached = self._usable_cached(now)
        if cached is None:
            self._credentials: DigestCredentials | None = None
            self._retried_stale = False
            headers.append((b"Connection", b"close"))
        else:
            challenge, nc, self._retried_stale = cached
            self._credentials = DigestCredentials.answer(
                challenge,
                username=config.username,
                password=config.password,
                method="GET",
                uri=config.target,
                nc=nc,
                cnonce=random_bytes(_CNONCE_BYTES).hex(),
            )
            headers += [
                (b"Connection", b"keep-alive, Upgrade"),
                (b"Upgrade", b"websocket"),
                (b"Authorization", self._credentials.to_header().encode("utf-8")),
            ]
        if config.features:
            offered = format_features(config.features).encode("ascii")
            headers.append((FEATURES_HEADER.encode("ascii"), offered))
        self._request = h11.Request(method="GET", target=config.target, headers=headers)

    @property
    def sends_credentials(self) -> bool:
        """Whether this attempt is a request 2 (from a cached challenge) rather than a request 1."""
        return self._credentials is not None

    @property
    def finished(self) -> bool:
        return self._finished

    def initiate(self) -> bytes:
        """The request to write once the connection (TLS or I2P stream) is up."""
        if self._initiated:
            raise HandshakeStateError("initiate() was already called")
        self._initiated = True
        return self._conn.send(self._request) + self._conn.send(h11.EndOfMessage())

    def receive_data(self, data: bytes, now: float) -> list[ClientEvent]:
        if not self._initiated:
            raise HandshakeStateError("call initiate() and send its bytes first")
        if self._finished:
            raise HandshakeStateError("the handshake is over; later bytes belong to the binary protocol")
        self._received += len(data)
        self._conn.receive_data(data)  # cannot raise here: after an EOF we are always finished
        while True:
            try:
                event = self._conn.next_event()
            except h11.RemoteProtocolError as e:
                if e.error_status_hint == 431:
                    return self._fail(Failure.OVERSIZED_HEAD, f"over {self._config.max_head_size} bytes")
                if self._conn.trailing_data[1]:
                    return self._fail(Failure.CONNECTION_CLOSED, str(e))
                return self._fail(Failure.MALFORMED_RESPONSE, str(e))
            if event is h11.NEED_DATA:
                return []
            if isinstance(event, h11.ConnectionClosed):
                return self._fail(Failure.CONNECTION_CLOSED)
            if isinstance(event, h11.InformationalResponse | h11.Response):
                size = head_size(self._conn, self._received)
                if size > self._config.max_head_size:
                    return self._fail(Failure.OVERSIZED_HEAD, f"{size} bytes")
                return self._on_response(event, now)
            # Not reached: h11 yields a response head (or an error) before anything else.
            return self._fail(Failure.MALFORMED_RESPONSE, f"unexpected {event!r}")

    def _on_response(
        self, response: h11.InformationalResponse | h11.Response, now: float
    ) -> list[ClientEvent]:
        status = response.status_code
        if status == 101:  # h11 has already refused a 101 to a request that did not ask to upgrade
            if "websocket" not in comma_tokens(response.headers, b"upgrade"):
                return self._fail(Failure.MALFORMED_RESPONSE, "101 without Upgrade: websocket")
            self._cache.confirm(self._key)
            self._finished = True
            return [Upgraded(decode_headers(response.headers), self._conn.trailing_data[0])]
        if status == 401:
            return self._on_unauthorized(response, now)
        if status == 404:
            self._cache.discard(self._key)
            return self._fail(Failure.NOT_FOUND)
        return self._fail(Failure.UNEXPECTED_RESPONSE, f"HTTP {status}")

    def _on_unauthorized(
        self, response: h11.Response | h11.InformationalResponse, now: float
    ) -> list[ClientEvent]:
        challenge = self._pick_challenge(response)
        if self._credentials is None:
            if challenge is None:
                return self._fail(Failure.NO_USABLE_CHALLENGE)
            self._cache.put(self._key, challenge, now)
            return self._reconnect("challenge received")
        # Our credentials were refused: whatever we had cached is no good.
        self._cache.discard(self._key)
        if challenge is not None and challenge.stale and not self._retried_stale:
            self._cache.put(self._key, challenge, now, retried_stale=True)
            return self._reconnect("stale nonce, retrying once with the fresh challenge")
        detail = "stale nonce again" if challenge is not None and challenge.stale else "credentials refused"
        return self._fail(Failure.AUTH_FAILED, detail)

    def _pick_challenge(self, response: h11.Response | h11.InformationalResponse) -> Challenge | None:
        """The server's challenge for our most preferred algorithm; unparseable headers are skipped."""
        offered: list[Challenge] = []
        for value in header_values(response.headers, b"www-authenticate"):
            try:
                items = authheader.parse_challenges(value.decode("utf-8"))
            except (UnicodeDecodeError, AuthHeaderSyntaxError):
                continue
            offered += [c for c in map(Challenge.from_item, items) if c is not None]
        for algorithm in self._config.algorithms:
            for challenge in offered:
                if challenge.algorithm is algorithm:
                    return challenge
        return None

    def _usable_cached(self, now: float) -> tuple[Challenge, int, bool] | None:
        entry = self._cache.get(self._key, now)
        if entry is None or entry.challenge.algorithm not in self._config.algorithms:
            return None
        taken = self._cache.take_nc(self._key, now)
        if taken is None:
            return None
        entry, nc = taken
        return entry.challenge, nc, entry.retried_stale

    def _reconnect(self, reason: str) -> list[ClientEvent]:
        self._finished = True
        return [Reconnect(reason)]

    def _fail(self, reason: Failure, detail: str = "") -> list[ClientEvent]:
        self._finished = True
        return [Failed(reason, detail)]
