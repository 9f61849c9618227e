"""Which I2PControl server certificates to accept, and which URLs to talk to at all.

Routers serve I2PControl with a self-signed certificate they made themselves (i2pd writes
``i2pcontrol.crt.pem`` into its data directory), so there is no CA to check it against. We accept:

- any certificate on a loopback address (``127.0.0.0/8``, ``::1``, ``localhost``): the router runs on
  the same machine, and anyone able to answer on its loopback port could read its files anyway;
- elsewhere, only the certificate whose SHA-256 the operator pinned (``garlicfarm.tls.pins``); a pin is
  honoured on loopback too, when given.

A non-loopback URL without a pin is refused before any connection, as is plain ``http://`` off
loopback (the password would travel in clear; Java I2P's webapp serves I2PControl over plain HTTP on
``127.0.0.1:7657``).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import attrs
from OpenSSL import SSL, crypto
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
from twisted.internet.ssl import CertificateOptions
from twisted.logger import Logger
from twisted.protocols.tls import TLSMemoryBIOProtocol
from twisted.python.failure import Failure
from twisted.web.iweb import IPolicyForHTTPS
from zope.interface import implementer

from garlicfarm.config import ConfigError
from garlicfarm.tls.errors import UnpinnedPeer
from garlicfarm.tls.pins import digest, format_pin, is_pinned, parse_pin

_log = Logger()


class I2PControlConfigError(ConfigError):
    """An I2PControl URL or pin we will not use; the message says why and what to change."""


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@attrs.frozen
class RouterURL:
    """A checked I2PControl URL."""

    url: str
    scheme: str
    host: str
    pin: bytes | None


def check_url(url: str, pin: str | None) -> RouterURL:
    """``url`` if we may talk to it with ``pin`` (a fingerprint as ``garlicfarm.tls.pins`` reads them)."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise I2PControlConfigError(f"I2PControl URL {url!r}: expected https://host:port/path")
    try:
        parts.port  # noqa: B018 -- raises on a malformed port
    except ValueError as e:
        raise I2PControlConfigError(f"I2PControl URL {url!r}: {e}") from None
    digest_value = parse_pin(pin) if pin else None
    local = is_loopback(parts.hostname)
    if parts.scheme == "http" and not local:
        raise I2PControlConfigError(
            f"I2PControl URL {url!r}: plain http is allowed on loopback only (the password would cross "
            "the network in clear); use https with the router's certificate pinned"
        )
    if parts.scheme == "https" and not local and digest_value is None:
        raise I2PControlConfigError(
            f"I2PControl URL {url!r} is not on loopback: pin the router's self-signed certificate "
            '([router] pin = "sha256:...", as `openssl x509 -noout -fingerprint -sha256` prints it)'
        )
    return RouterURL(url, parts.scheme, parts.hostname, digest_value)


@implementer(IOpenSSLClientConnectionCreator)
class _RouterCertificate:
    """Accept the server's certificate if it is pinned, or any certificate when ``pin`` is None."""

    def __init__(self, pin: bytes | None) -> None:
        # No trust root: there is no chain to verify, only (maybe) a pin.
        self._options = CertificateOptions()
        self._pin = pin

    def clientConnectionForTLS(self, tls_protocol: TLSMemoryBIOProtocol) -> SSL.Connection:
        connection = self._options.clientConnectionForTLS(tls_protocol)
        connection.set_app_data(tls_protocol)
        if self._pin is not None:
            connection.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT, self._verify)
        return connection

    def _verify(self, connection: SSL.Connection, cert: crypto.X509, errno: int, depth: int, ok: int) -> bool:
        if depth > 0 or self._pin is None:
            return True  # self-signed: the issuer is the leaf itself, and only the leaf's pin counts
        value = digest(cert)
        if is_pinned(value, (self._pin,)):
            return True
        _log.warn(
            "refused the I2PControl certificate {fingerprint}: not the pinned one",
            fingerprint=format_pin(value),
        )
        protocol = connection.get_app_data()
        if isinstance(protocol, TLSMemoryBIOProtocol):
            reason = Failure(
                UnpinnedPeer(f"the router's certificate {format_pin(value)} is not the pinned one")
            )
            protocol.failVerification(reason)  # type: ignore[no-untyped-call]
        return False


@implementer(IPolicyForHTTPS)
class RouterTLSPolicy:
    """The Agent's TLS policy for one checked :class:`RouterURL`."""

    def __init__(self, endpoint: RouterURL) -> None:
        self._endpoint = endpoint

    def creatorForNetloc(self, hostname: bytes, port: int) -> IOpenSSLClientConnectionCreator:
        host = hostname.decode("ascii", "replace")
        # The Agent only ever dials the configured URL (no redirects); anything else is a bug, refuse it.
        if self._endpoint.pin is None and not is_loopback(host):
            raise I2PControlConfigError(f"refusing an unpinned TLS connection to {host}:{port}")
        return _RouterCertificate(self._endpoint.pin)
