"""The ``httpproxy:`` and ``i2p:`` client endpoint strings (plugins: twisted/plugins/garlicfarm_endpoints.py).

    httpproxy:host=xyz.b32.i2p:port=0:proxyHost=127.0.0.1:proxyPort=4444
    httpproxy:...:proxyUser=alice:proxyPasswordFile=/etc/garlicfarm/proxy-password[:timeout=30]
    i2p:host=xyz.b32.i2p[:port=0][:proxyHost=127.0.0.1][:proxyPort=4444][:proxyUser=...][:timeout=60]

The proxy password comes from a file so that it never shows in a command line or a process list.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, cast

from twisted.internet.interfaces import (
    IReactorCore,
    IReactorTCP,
    IReactorTime,
    IStreamClientEndpoint,
    IStreamClientEndpointStringParserWithReactor,
)
from twisted.plugin import IPlugin
from zope.interface import implementer

from garlicfarm.net.httpproxy import HTTPConnectEndpoint
from garlicfarm.net.tcp import tcp_endpoint

# The I2P router's HTTP proxy ("I2P HTTP Proxy" tunnel) as shipped by Java I2P and i2pd.
I2P_PROXY_HOST = "127.0.0.1"
I2P_PROXY_PORT = 4444
# Opening a stream to a destination not seen before means a lease-set lookup and tunnel building,
# which can take tens of seconds on I2P: a shorter timeout would fail peers that are merely far.
I2P_TIMEOUT = 60.0

_KEYS = ("host", "port", "proxyHost", "proxyPort", "proxyUser", "proxyPasswordFile", "timeout")


@implementer(IPlugin, IStreamClientEndpointStringParserWithReactor)
class HTTPProxyEndpointParser:
    """``httpproxy:``: a stream to ``host:port`` through any HTTP proxy that allows CONNECT."""

    prefix: ClassVar[str] = "httpproxy"
    defaults: ClassVar[Mapping[str, str]] = {"timeout": "30"}

    def parseStreamClient(
        self, reactor: IReactorCore, *args: object, **kwargs: object
    ) -> IStreamClientEndpoint:
        if args:
            raise ValueError(f"{self.prefix}: unexpected {args[0]!r}; give every option as key=value")
        options = {**self.defaults, **{key: str(value) for key, value in kwargs.items()}}
        unknown = sorted(set(options) - set(_KEYS))
        if unknown:
            raise ValueError(f"{self.prefix}: unknown option {unknown[0]!r}; known: {', '.join(_KEYS)}")
        for key in ("host", "port", "proxyHost", "proxyPort"):
            if not options.get(key):
                raise ValueError(f"{self.prefix}: {key}= is required")
        self.check_host(options["host"])
        return self.endpoint(reactor, options)

    def check_host(self, host: str) -> None:
        """Refuse a target this kind of endpoint cannot reach (any host will do for a plain proxy)."""

    def endpoint(self, reactor: IReactorCore, options: Mapping[str, str]) -> HTTPConnectEndpoint:
        if not (IReactorTCP.providedBy(reactor) and IReactorTime.providedBy(reactor)):
            raise TypeError(f"{self.prefix}: the reactor must provide IReactorTCP and IReactorTime")
        timeout = _number(self.prefix, "timeout", options["timeout"])
        proxy_host, proxy_port = options["proxyHost"], _port(self.prefix, "proxyPort", options["proxyPort"])
        proxy = tcp_endpoint(reactor, proxy_host, proxy_port, timeout)
        return HTTPConnectEndpoint(
            proxy,
            options["host"],
            _port(self.prefix, "port", options["port"]),
            proxy_auth=_credentials(self.prefix, options.get("proxyUser"), options.get("proxyPasswordFile")),
            timeout=timeout,
            reactor=cast(IReactorTime, reactor),
        )


@implementer(IPlugin, IStreamClientEndpointStringParserWithReactor)
class I2PEndpointParser(HTTPProxyEndpointParser):
    """``i2p:``: ``httpproxy:`` with the I2P router's defaults; the host must be an I2P name."""

    prefix: ClassVar[str] = "i2p"
    defaults: ClassVar[Mapping[str, str]] = {
        "port": "0",  # I2P streaming ports are optional; Garlic Farm destinations use 0
        "proxyHost": I2P_PROXY_HOST,
        "proxyPort": str(I2P_PROXY_PORT),
        "timeout": f"{I2P_TIMEOUT:g}",
    }

    def check_host(self, host: str) -> None:
        if not host.lower().endswith(".i2p"):
            raise ValueError(
                f"i2p: host={host!r} is not an I2P name (expected xyz.b32.i2p or an address-book name "
                "ending in .i2p); use httpproxy: for other hosts"
            )


def _port(prefix: str, key: str, text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise ValueError(f"{prefix}: {key}={text!r} is not a port number (0-65535)")
    return int(text)


def _number(prefix: str, key: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:  # also refuses nan
        raise ValueError(f"{prefix}: {key}={text!r} is not a positive number of seconds")
    return value


def _credentials(prefix: str, user: str | None, password_file: str | None) -> tuple[str, str] | None:
    if user is None and password_file is None:
        return None
    if user is None or password_file is None:
        raise ValueError(f"{prefix}: proxyUser= and proxyPasswordFile= go together")
    try:
        # One line; the newline an editor or `echo` leaves at the end is not part of the password.
        password = Path(password_file).read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeError) as e:
        raise ValueError(f"{prefix}: cannot read proxyPasswordFile={password_file!r}: {e}") from None
    if not password or "\n" in password or "\r" in password:
        raise ValueError(f"{prefix}: proxyPasswordFile={password_file!r} must hold one non-empty line")
    return user, password
