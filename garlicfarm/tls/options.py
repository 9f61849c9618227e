"""Twisted TLS options for a node: mutual TLS, both sides presenting a certificate and checking the other's.

Two ways to decide whom to trust, from ``[tls]``:

- CA mode (``ca`` set, ``pins`` empty): the peer's certificate must chain to ``ca``. The client also
  checks the name it dialled against the server certificate's subjectAltName (service_identity, through
  ``optionsForClientTLS``; IP addresses are matched against IP SANs). The server does not check names:
  any certificate of the farm may connect, from any address.
- Pin mode (``pins`` set): the peer's leaf certificate's SHA-256 must be one of ``pins``, checked in the
  OpenSSL verify callback, so an unpinned peer never completes the handshake. A pin names one exact
  certificate, so names and expiry are not checked; if ``ca`` is set as well, the chain must verify too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import attrs
from cryptography import x509
from OpenSSL import SSL, crypto
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator, IOpenSSLServerConnectionCreator
from twisted.internet.ssl import (
    Certificate,
    CertificateOptions,
    optionsForClientTLS,
    trustRootFromCertificates,
)
from twisted.logger import Logger
from twisted.protocols.tls import TLSMemoryBIOProtocol
from twisted.python.failure import Failure
from zope.interface import implementer

from garlicfarm.config import TLSConfig
from garlicfarm.tls.certs import CertifiedKey, load_certificates, load_certified_key
from garlicfarm.tls.errors import TLSError, UnpinnedPeer
from garlicfarm.tls.pins import digest, format_pin, is_pinned, parse_pins

if TYPE_CHECKING:
    from twisted.internet._sslverify import IOpenSSLTrustRoot

_log = Logger()


@attrs.frozen
class NodeTLS:
    """A node's TLS material, read and checked. Pass it instead of a :class:`TLSConfig` to read the files
    once; a ``TLSConfig`` is read again for each connection (so replaced certificates take effect)."""

    own: CertifiedKey
    ca: tuple[x509.Certificate, ...]
    pins: frozenset[bytes]
    require_client_certificate: bool = True

    @classmethod
    def load(cls, config: TLSConfig) -> NodeTLS:
        ca = tuple(load_certificates(config.ca)) if config.ca is not None else ()
        pins = parse_pins(config.pins)
        if not ca and not pins:
            raise TLSError(f"{config.cert}: [tls] needs ca or pins, to know which peers to trust")
        own = load_certified_key(config.cert, config.key)
        return cls(own, ca, pins, config.require_client_certificate)


def _trust_root(node: NodeTLS) -> IOpenSSLTrustRoot:
    roots = [Certificate(crypto.X509.from_cryptography(c)) for c in node.ca]  # type: ignore[no-untyped-call]
    return cast("IOpenSSLTrustRoot", trustRootFromCertificates(roots))  # type: ignore[no-untyped-call]


def own_certificate_options(node: NodeTLS, **extra: Any) -> CertificateOptions:
    """Options presenting this node's certificate; Twisted gets the ``cryptography`` objects (pyOpenSSL's
    X509 and PKey wrappers are deprecated there)."""
    # Twisted's annotations still name pyOpenSSL's types; at run time it hands the objects to pyOpenSSL,
    # which takes cryptography's and warns on its own
    return CertificateOptions(
        privateKey=node.own.key,  # type: ignore[arg-type]
        certificate=node.own.certificate,  # type: ignore[arg-type]
        **extra,
    )


def _certificate_options(node: NodeTLS) -> CertificateOptions:
    if not node.ca:
        # Pin mode alone: the per-connection verify callback does all the checking.
        return own_certificate_options(node)
    return own_certificate_options(node, trustRoot=_trust_root(node))


def _loaded(tls: TLSConfig | NodeTLS) -> NodeTLS:
    return tls if isinstance(tls, NodeTLS) else NodeTLS.load(tls)


def server_options(tls: TLSConfig | NodeTLS) -> IOpenSSLServerConnectionCreator:
    """Options for accepting peers: present our certificate, require theirs."""
    node = _loaded(tls)
    if node.pins:
        return _Pinned(
            _certificate_options(node),
            node.pins,
            check_chain=bool(node.ca),
            require=node.require_client_certificate,
        )
    # trustRoot on the server side means: verify, and fail a client that sends no certificate
    # ("required"); "optional" lets such a client in, still verifying one that is sent.
    if not node.require_client_certificate:
        return _OptionalClientCertificate(_certificate_options(node))
    return _certificate_options(node)


def client_options(tls: TLSConfig | NodeTLS, hostname: str) -> IOpenSSLClientConnectionCreator:
    """Options for dialling a peer known as ``hostname`` (a DNS name or an IPv4/IPv6 literal)."""
    node = _loaded(tls)
    if node.pins:
        return _Pinned(_certificate_options(node), node.pins, check_chain=bool(node.ca))
    # Twisted recognises IP literals here and verifies them as service_identity IPAddress_IDs (and
    # sends no SNI for them, as RFC 6066 requires).
    return optionsForClientTLS(
        hostname,
        trustRoot=_trust_root(node),
        extraCertificateOptions={"privateKey": node.own.key, "certificate": node.own.certificate},
    )


@implementer(IOpenSSLServerConnectionCreator)
class _OptionalClientCertificate:
    """A server that verifies a client certificate the client sends, and lets in one that sends none
    (Twisted will not combine ``trustRoot`` with ``requireCertificate=False``)."""

    def __init__(self, options: CertificateOptions) -> None:
        self._options = options

    def serverConnectionForTLS(self, tls_protocol: TLSMemoryBIOProtocol) -> SSL.Connection:
        connection = self._options.serverConnectionForTLS(tls_protocol)
        connection.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_CLIENT_ONCE, _keep_openssl_verdict)
        return connection


def _keep_openssl_verdict(
    _connection: SSL.Connection, _cert: crypto.X509, _errno: int, _depth: int, ok: int
) -> bool:
    return bool(ok)


@implementer(IOpenSSLClientConnectionCreator, IOpenSSLServerConnectionCreator)
class _Pinned:
    """Connections that accept the peer iff its leaf certificate is pinned."""

    def __init__(
        self, options: CertificateOptions, pins: frozenset[bytes], *, check_chain: bool, require: bool = True
    ) -> None:
        self._options = options
        self._pins = pins
        self._check_chain = check_chain
        self._require = require

    def clientConnectionForTLS(self, tls_protocol: TLSMemoryBIOProtocol) -> SSL.Connection:
        connection = self._options.clientConnectionForTLS(tls_protocol)
        connection.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT, self._verify)
        return connection

    def serverConnectionForTLS(self, tls_protocol: TLSMemoryBIOProtocol) -> SSL.Connection:
        connection = self._options.serverConnectionForTLS(tls_protocol)
        required = SSL.VERIFY_FAIL_IF_NO_PEER_CERT if self._require else 0
        connection.set_verify(SSL.VERIFY_PEER | required | SSL.VERIFY_CLIENT_ONCE, self._verify)
        return connection

    def _verify(self, connection: SSL.Connection, cert: crypto.X509, errno: int, depth: int, ok: int) -> bool:
        # Called once per certificate in the chain and per error; returning False ends the handshake.
        if depth > 0:
            # Without a CA the issuers are irrelevant: the pin names the leaf itself.
            return bool(ok) or not self._check_chain
        if self._check_chain and not ok:
            return False
        value = digest(cert)
        if is_pinned(value, self._pins):
            return True
        _log.warn("refused peer certificate {fingerprint}: not in [tls] pins", fingerprint=format_pin(value))
        protocol = connection.get_app_data()
        if isinstance(protocol, TLSMemoryBIOProtocol):
            # Gives connectionLost a reason better than OpenSSL's "certificate verify failed".
            reason = Failure(UnpinnedPeer(f"peer certificate {format_pin(value)} is not pinned"))
            protocol.failVerification(reason)  # type: ignore[no-untyped-call]
        return False
