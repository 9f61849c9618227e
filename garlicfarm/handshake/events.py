"""What the handshakes hand back to the edge: events, never I/O.

The reasons are for the edge's logs. What goes to the peer is always a bare standard 401/404/400/431.
"""

from __future__ import annotations

import enum

import attrs

from garlicfarm.handshake.digest import Algorithm

# ---------------------------------------------------------------------------------------------- server


@attrs.frozen
class SendBytes:
    """Write ``data`` to the connection."""

    data: bytes


@attrs.frozen
class Close:
    """Close the connection once the bytes sent before it are written. Always the last event."""


@attrs.frozen
class Authenticated:
    """The peer proved its credentials and the 101 has been queued (in the ``SendBytes`` just before).

    ``leftover`` is binary-protocol data that arrived in the same read as the request head; feed it to
    the wire decoder before anything read later. Always the last event: the handshake is over.
    """

    username: str
    algorithm: Algorithm
    leftover: bytes


class Reject(enum.Enum):
    """Why the server refused a connection (for logs; the peer only sees the status code)."""

    NO_CREDENTIALS = "no credentials, challenge sent"  # request 1: the normal first step, 401
    WRONG_PATH = "wrong path"  # 404
    WRONG_METHOD = "wrong method"  # 404
    WRONG_HTTP_VERSION = "not HTTP/1.1"  # 400
    BASIC_REFUSED = "Basic auth refused"  # 401
    UNSUPPORTED_SCHEME = "unsupported auth scheme"  # 401
    BAD_CREDENTIALS = "malformed or unusable Digest credentials"  # 401
    UNKNOWN_USER = "unknown user"  # 401
    WRONG_PASSWORD = "wrong password"  # noqa: S105 - a reason, not a password; 401
    STALE_NONCE = "stale nonce"  # 401 stale=true
    REPLAYED_NC = "replayed nc"  # 401
    NOT_UPGRADE = "not an upgrade request"  # 400
    OVERSIZED_HEAD = "oversized head"  # 431
    MALFORMED_REQUEST = "malformed request"  # 400
    CONNECTION_CLOSED = "peer closed before a complete request"  # nothing sent


@attrs.frozen
class Rejected:
    """The handshake failed (or, for ``NO_CREDENTIALS``, ended with the challenge as it should).

    Comes after the ``SendBytes`` carrying the error response (if any) and before ``Close``.
    """

    reason: Reject
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.reason.value}: {self.detail}" if self.detail else self.reason.value


ServerEvent = SendBytes | Close | Authenticated | Rejected

# ---------------------------------------------------------------------------------------------- client


@attrs.frozen
class Reconnect:
    """A challenge was received and cached; close this connection and open a new one, whose handshake
    will go straight to request 2."""

    reason: str


@attrs.frozen
class Upgraded:
    """101 received: the connection now carries the binary protocol.

    ``headers`` are the 101's headers (names lower-cased, values decoded as Latin-1), e.g.
    ``garlicfarm-leader``. ``leftover`` is binary-protocol data that arrived with the 101 head.
    """

    headers: tuple[tuple[str, str], ...]
    leftover: bytes

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or ``None``."""
        name = name.lower()
        return next((v for k, v in self.headers if k == name), None)


class Failure(enum.Enum):
    """Why an outbound handshake failed."""

    NOT_FOUND = "404: wrong cluster/version or not a Garlic Farm server"
    AUTH_FAILED = "authentication failed"
    NO_USABLE_CHALLENGE = "401 without a usable Digest challenge"
    UNEXPECTED_RESPONSE = "unexpected response"
    OVERSIZED_HEAD = "oversized response head"
    MALFORMED_RESPONSE = "malformed response"
    CONNECTION_CLOSED = "server closed before a complete response"


@attrs.frozen
class Failed:
    """The handshake failed; close the connection. ``reason`` says whether retrying could help."""

    reason: Failure
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.reason.value}: {self.detail}" if self.detail else self.reason.value


ClientEvent = Reconnect | Upgraded | Failed
