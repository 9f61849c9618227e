"""Which I2PControl servers the router client talks to and which certificates it accepts
(garlicfarm.router.i2pcontrol_tls), rule by rule: the URL checks' words, loopback spellings, the
policy refusing an unpinned host the URL did not name, and OpenSSL's verify callback itself."""

from __future__ import annotations

from typing import Any

import pytest
from OpenSSL import SSL, crypto
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import StringTransport
from twisted.protocols.tls import TLSMemoryBIOFactory

from garlicfarm.router.i2pcontrol_tls import (
    I2PControlConfigError,
    RouterTLSPolicy,
    RouterURL,
    _RouterCertificate,
    check_url,
    is_loopback,
)
from garlicfarm.tls.certs import issue_node, new_ca
from garlicfarm.tls.pins import digest, format_pin


def test_a_checked_url_keeps_its_parts() -> None:
    assert check_url("https://[::1]:7650/jsonrpc", None) == RouterURL(
        "https://[::1]:7650/jsonrpc", "https", "::1", None
    )
    pin = "AB" * 32
    assert check_url("https://192.0.2.7:7650/", pin) == RouterURL(
        "https://192.0.2.7:7650/", "https", "192.0.2.7", bytes.fromhex(pin)
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        (
            "http://192.0.2.7:7650/",
            "I2PControl URL 'http://192.0.2.7:7650/': plain http is allowed on loopback only (the "
            "password would cross the network in clear); use https with the router's certificate pinned",
        ),
        (
            "https://192.0.2.7:7650/",
            "I2PControl URL 'https://192.0.2.7:7650/' is not on loopback: pin the router's self-signed "
            'certificate ([router] pin = "sha256:...", as `openssl x509 -noout -fingerprint -sha256` '
            "prints it)",
        ),
    ],
)
def test_a_refused_url_says_what_to_do(url: str, says: str) -> None:
    with pytest.raises(I2PControlConfigError) as raised:
        check_url(url, None)
    assert str(raised.value) == says


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("[::1]", True),
        ("::1", True),
        ("127.0.0.9", True),
        ("LocalHost", True),
        ("[::2]", False),
        ("x", False),
    ],
)
def test_loopback_spellings(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_the_policy_refuses_an_unpinned_host_the_url_did_not_name() -> None:
    """The Agent dials only the configured URL; were it asked for another host, without a pin that
    would be a certificate accepted unchecked: refused."""
    loopback = RouterTLSPolicy(check_url("https://127.0.0.1:7650/", None))
    assert isinstance(loopback.creatorForNetloc(b"localhost", 7650), _RouterCertificate)
    with pytest.raises(I2PControlConfigError) as raised:
        loopback.creatorForNetloc(b"192.0.2.7", 7650)
    assert str(raised.value) == "refusing an unpinned TLS connection to 192.0.2.7:7650"
    with pytest.raises(I2PControlConfigError, match="to \ufffd.example:7650$"):
        loopback.creatorForNetloc(b"\xff.example", 7650)
    pinned = RouterTLSPolicy(check_url("https://192.0.2.7:7650/", "AB" * 32))
    assert isinstance(pinned.creatorForNetloc(b"192.0.2.7", 7650), _RouterCertificate)


class Connection:
    """What the callback reads of a connection: its app data (not a TLS protocol here)."""

    def get_app_data(self) -> Any:
        return None


def _x509(cert: Any) -> crypto.X509:
    return crypto.X509.from_cryptography(cert)


def test_the_verify_callback_checks_the_leaf_against_the_pin_and_nothing_else() -> None:
    """A router whose certificate a CA signed is accepted by its own pin: the chain above the leaf
    (depth > 0) is not what is pinned. Any other leaf is refused by the callback's own answer, not
    only by aborting the connection."""
    ca = new_ca("router CA")
    leaf = issue_node(ca, "router")
    pin = digest(_x509(leaf.certificate))
    check = _RouterCertificate(pin)._verify
    assert check(Connection(), _x509(ca.certificate), 0, 1, 1) is True  # type: ignore[arg-type]
    assert check(Connection(), _x509(leaf.certificate), 0, 0, 1) is True  # type: ignore[arg-type]
    other = issue_node(ca, "someone else")
    assert check(Connection(), _x509(other.certificate), 0, 0, 1) is False  # type: ignore[arg-type]
    assert format_pin(pin).startswith("sha256:")


def _connection(pin: bytes | None) -> SSL.Connection:
    """The OpenSSL connection a TLS client protocol gets from the creator."""
    factory = TLSMemoryBIOFactory(_RouterCertificate(pin), True, Factory.forProtocol(Protocol))
    protocol = factory.buildProtocol(None)
    assert protocol is not None
    protocol.makeConnection(StringTransport())
    connection: SSL.Connection = protocol._tlsConnection
    return connection


def test_a_pinned_connection_fails_its_handshake_on_the_callbacks_answer() -> None:
    assert _connection(b"\x00" * 32).get_verify_mode() == SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT
    assert _connection(None).get_verify_mode() == SSL.VERIFY_NONE  # no pin: loopback, any certificate
