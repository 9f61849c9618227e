"""From endpoints to Twisted client endpoints.

Endpoints that arrive over the network (Configuration entries, AddServerRequest, JoinClusterRequest)
may only take the protocol's own forms, checked strictly by :func:`parse_network_endpoint`:

* ``tcp://host:port`` — TLS over TCP with the farm's certificates (cleartext only on loopback, and only
  when the node has no ``[tls]`` section: for tests and JRaft interoperability);
* ``i2p://<52 base32 characters>.b32.i2p[:port]`` — through the I2P router's HTTP proxy;
* ``tor://<56 base32 characters>.onion:port`` — a v3 onion service through Tor's SOCKS port (txtorcon).

Twisted endpoint strings (``tor:host=...``, ``httpproxy:...``, ``unix:...``) name local resources —
files, sockets, proxies — and are taken only from the operator's own TOML ([peers]), never from the
network: a requester could otherwise make a leader dial a local socket or read a local file.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

import attrs
from twisted.internet.endpoints import TCP4ClientEndpoint, clientFromString
from twisted.internet.interfaces import IReactorTCP, IStreamClientEndpoint

from garlicfarm.config import ConfigError, TLSConfig


@attrs.frozen
class Address:
    """Where a peer is, as the handshake needs it: ``host`` for the Host header and the challenge cache."""

    scheme: str
    host: str
    port: int

    @property
    def host_header(self) -> str:
        return f"{self.host}:{self.port}"


_HOST_PORT = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}\Z")


def scheme_hint(uri: str) -> str:
    """``; did you mean tcp://host:port?`` for a scheme-less ``host:port``, else nothing."""
    return f"; did you mean tcp://{uri}?" if _HOST_PORT.match(uri) else ""


def parse_endpoint(uri: str) -> Address:
    if "://" not in uri:
        if _HOST_PORT.match(uri):
            raise ConfigError(f"endpoint {uri!r}: no scheme{scheme_hint(uri)}")
        # A Twisted endpoint string: name its target as best we can for the Host header.
        fields = dict(part.split("=", 1) for part in uri.split(":")[1:] if "=" in part)
        return Address(uri.split(":", 1)[0], fields.get("host", "peer"), int(fields.get("port", "0") or 0))
    parts = urlsplit(uri)
    if parts.scheme == "tor":
        return parse_network_endpoint(uri)
    if parts.scheme not in ("tcp", "i2p") or not parts.hostname:
        raise ConfigError(
            f"endpoint {uri!r}: expected tcp://host:port, i2p://dest.b32.i2p or a Twisted endpoint"
        )
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"endpoint {uri!r}: bad port") from None
    if port is None:
        if parts.scheme == "tcp":
            raise ConfigError(f"endpoint {uri!r}: tcp:// needs a port")
        port = 0
    return Address(parts.scheme, parts.hostname, port)


_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"(?=.{{1,253}}\Z){_LABEL}(?:\.{_LABEL})*\Z")
_B32_I2P = re.compile(r"[a-z2-7]{52}\.b32\.i2p\Z")
_ONION_V3 = re.compile(r"[a-z2-7]{56}\.onion\Z")
_FORMS = "tcp://host:port, i2p://<52 base32>.b32.i2p[:port] or tor://<56 base32>.onion:port"
MAX_ENDPOINT = 300


class EndpointRefused(ValueError):
    """An endpoint from the network that is not one of the protocol's forms."""


def parse_network_endpoint(uri: str) -> Address:
    """``uri`` if it is one of the protocol's own forms (see the module), else :class:`EndpointRefused`."""
    shown = repr(uri[:80])
    if len(uri) > MAX_ENDPOINT or not uri.isascii() or not uri.isprintable():
        raise EndpointRefused(f"endpoint {shown}: not a short printable ASCII string")
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        raise EndpointRefused(f"endpoint {shown}: expected {_FORMS}{scheme_hint(uri)}") from None
    host = parts.hostname or ""
    if (
        parts.scheme not in ("tcp", "i2p", "tor")
        or parts.username is not None
        or parts.password is not None
        or parts.path
        or parts.query
        or parts.fragment
        or port == 0
    ):
        raise EndpointRefused(f"endpoint {shown}: expected {_FORMS}{scheme_hint(uri)}")
    if parts.scheme == "tcp":
        if port is None or not (_HOSTNAME.match(host) or _is_ip(host)):
            raise EndpointRefused(f"endpoint {shown}: tcp:// needs a host name or IP address and a port")
    elif parts.scheme == "i2p":
        if not _B32_I2P.match(host):
            raise EndpointRefused(f"endpoint {shown}: i2p:// needs a <52 base32 characters>.b32.i2p name")
    elif port is None or not _ONION_V3.match(host):
        raise EndpointRefused(f"endpoint {shown}: tor:// needs a v3 .onion name and a port")
    return Address(parts.scheme, host, port or 0)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def client_endpoint(
    reactor: IReactorTCP, uri: str, tls: TLSConfig | None, trusted: bool = True
) -> IStreamClientEndpoint:
    """The endpoint to dial ``uri``; ``trusted`` only for the operator's own configuration: anything
    else must be a network form (:func:`parse_network_endpoint`, raising :class:`EndpointRefused`)."""
    address = parse_endpoint(uri) if trusted else parse_network_endpoint(uri)
    if address.scheme == "tcp":
        if tls is not None:
            from garlicfarm.tls import client_endpoint as tls_client_endpoint  # noqa: PLC0415 - pyOpenSSL is heavy

            endpoint: IStreamClientEndpoint = tls_client_endpoint(reactor, address.host, address.port, tls)
            return endpoint
        if not is_loopback(address.host):
            raise ConfigError(f"endpoint {uri!r}: cleartext TCP is refused off loopback; configure [tls]")
        return TCP4ClientEndpoint(reactor, address.host, address.port)
    if address.scheme == "i2p":
        port = f":port={address.port}" if address.port else ""
        uri = f"i2p:host={address.host}{port}"
    elif address.scheme == "tor":
        uri = f"tor:host={address.host}:port={address.port}"
    try:
        parsed: IStreamClientEndpoint = clientFromString(reactor, uri)
    except (ValueError, TypeError) as e:  # an unknown or malformed Twisted endpoint string
        raise ConfigError(
            f"endpoint {uri!r}: {e} (expected tcp://host:port, i2p://dest.b32.i2p or a Twisted endpoint)"
        ) from None
    return parsed
