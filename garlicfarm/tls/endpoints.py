"""Twisted endpoints that speak mutual TLS with a node's ``[tls]`` material."""

from __future__ import annotations

from typing import Any

from twisted.internet.endpoints import serverFromString, wrapClientTLS, wrapServerTLS
from twisted.internet.interfaces import IStreamClientEndpoint, IStreamServerEndpoint

from garlicfarm.config import ConfigError, TLSConfig
from garlicfarm.net.tcp import tcp_endpoint
from garlicfarm.tls.options import NodeTLS, client_options, server_options

# Endpoint types that already do TLS: wrapping them again would nest two TLS sessions.
_TLS_TYPES = frozenset({"ssl", "tls", "le", "lets"})


def server_endpoint(reactor: Any, listen: str, tls: TLSConfig | NodeTLS) -> IStreamServerEndpoint:
    """Listen on the plain stream endpoint ``listen`` (e.g. ``tcp:22600:interface=127.0.0.1``) with TLS
    added around it. Raises :class:`~garlicfarm.config.ConfigError` for a bad string and
    :class:`~garlicfarm.tls.TLSError` for bad certificate files."""
    kind = listen.split(":", 1)[0].strip().lower()
    if kind in _TLS_TYPES:
        raise ConfigError(
            f"listen {listen!r}: give a plain endpoint such as 'tcp:22600:interface=127.0.0.1'; "
            "TLS is added from [tls]"
        )
    options = server_options(tls)  # first, so bad certificate files are reported before endpoint syntax
    try:
        inner = serverFromString(reactor, listen)
    except (ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"listen {listen!r} is not a Twisted server endpoint string: {e}") from None
    return wrapServerTLS(options, inner)


def client_endpoint(
    reactor: Any,
    host: str,
    port: int,
    tls: TLSConfig | NodeTLS,
    hostname: str | None = None,
    *,
    timeout: float = 30,
) -> IStreamClientEndpoint:
    """Connect to ``host``:``port`` over TLS, checking the server certificate names ``hostname``
    (default: ``host``, which may be an IP address) or, in pin mode, is pinned."""
    options = client_options(tls, hostname or host)
    return wrapClientTLS(options, tcp_endpoint(reactor, host, port, timeout))
