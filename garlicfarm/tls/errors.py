"""Exceptions of :mod:`garlicfarm.tls`."""

from __future__ import annotations

from twisted.internet.error import VerifyError

from garlicfarm.config import ConfigError


class TLSError(ConfigError):
    """Unusable TLS material: a missing, unreadable or mismatched file, or a malformed pin.

    A :class:`~garlicfarm.config.ConfigError` because it is always fixed by editing files, and the
    message names the file so the operator knows which one.
    """


class UnpinnedPeer(VerifyError):
    """The peer's certificate is not in ``[tls] pins``: the connection was refused during the handshake.

    Reported to the application protocol's ``connectionLost``; the message carries the fingerprint, to
    paste into ``pins`` if the peer is in fact welcome.
    """
