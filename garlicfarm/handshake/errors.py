"""The one exception family the handshake raises.

Bytes from the peer never raise: whatever arrives ends in events (``Rejected``/``Failed`` with a reason).
A :class:`HandshakeError` means the *caller* did something wrong — a bad configuration, or feeding a
handshake that has already finished.
"""

from __future__ import annotations


class HandshakeError(Exception):
    """Base of every exception raised by :mod:`garlicfarm.handshake`."""


class ConfigError(HandshakeError, ValueError):
    """A configuration value the handshake cannot use (bad cluster name, header, limit...)."""


class HandshakeStateError(HandshakeError):
    """A method called in the wrong state (data after the handshake finished, ``initiate`` twice...)."""


class AuthHeaderSyntaxError(HandshakeError):
    """An ``Authorization``/``WWW-Authenticate`` value that is not valid RFC 7235 syntax.

    Raised by the parsing helpers in :mod:`garlicfarm.handshake.authheader`; the handshakes catch it and
    turn it into a 401 (server) or a ``Failed`` event (client).
    """


class CredentialsError(HandshakeError):
    """Digest credentials that parse but cannot be used (missing field, bad ``nc``, unknown algorithm)."""
