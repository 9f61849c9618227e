"""From the endpoints advertised in Configuration entries to Twisted client endpoints.

* ``tcp://host:port`` — TLS over TCP with the farm's certificates (cleartext only on loopback, and only
  when the node has no ``[tls]`` section: for tests and JRaft interoperability);
* ``i2p://destination.b32.i2p[:port]`` — through the I2P router's HTTP proxy (``i2p:`` endpoint);
* anything else with a colon, e.g. ``tor:host=xyz.onion:port=9001`` or ``httpproxy:...`` — a Twisted
  client endpoint string, parsed by Twisted's plugins (txtorcon provides ``tor:``).
"""

from __future__ import annotations

import ipaddress
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


def parse_endpoint(uri: str) -> Address:
    if "://" not in uri:
        # A Twisted endpoint string: name its target as best we can for the Host header.
        fields = dict(part.split("=", 1) for part in uri.split(":")[1:] if "=" in part)
        return Address(uri.split(":", 1)[0], fields.get("host", "peer"), int(fields.get("port", "0") or 0))
    parts = urlsplit(uri)
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


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def client_endpoint(reactor: IReactorTCP, uri: str, tls: TLSConfig | None) -> IStreamClientEndpoint:
    address = parse_endpoint(uri)
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
    parsed: IStreamClientEndpoint = clientFromString(reactor, uri)
    return parsed
