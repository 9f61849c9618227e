"""Why an HTTP CONNECT tunnel could not be opened: one exception per cause, each naming the proxy and target.

An operator reads these in a log when a peer on I2P is unreachable, so the messages say who answered what.
"""

from __future__ import annotations


class ProxyError(Exception):
    """The tunnel through the HTTP proxy could not be opened."""

    def __init__(self, message: str, *, proxy: str, target: str) -> None:
        super().__init__(message)
        self.proxy = proxy
        self.target = target


class ProxyUnreachable(ProxyError):
    """No connection to the proxy itself (e.g. the I2P router is not running)."""

    def __init__(self, *, proxy: str, target: str, why: str) -> None:
        super().__init__(
            f"could not connect to HTTP proxy {proxy} for CONNECT to {target}: {why}",
            proxy=proxy,
            target=target,
        )


class ProxyRefused(ProxyError):
    """The proxy answered CONNECT with a status other than 2xx."""

    def __init__(
        self, *, proxy: str, target: str, status_code: int, reason: str, message: str | None = None
    ) -> None:
        self.status_code = status_code
        self.reason = reason
        status = f"{status_code} {reason}".rstrip()
        super().__init__(
            message or f"HTTP proxy {proxy} refused CONNECT to {target}: {status}", proxy=proxy, target=target
        )


class ProxyAuthenticationRequired(ProxyRefused):
    """407 (or 401): the proxy wants credentials, or did not accept the ones given."""

    def __init__(self, *, proxy: str, target: str, status_code: int, reason: str, user: str | None) -> None:
        status = f"{status_code} {reason}".rstrip()
        if user is None:
            message = (
                f"HTTP proxy {proxy} requires authentication for CONNECT to {target} ({status}); "
                "no credentials were given (proxyUser= and proxyPasswordFile=)"
            )
        else:
            message = (
                f"HTTP proxy {proxy} rejected the credentials of user {user!r} "
                f"for CONNECT to {target} ({status})"
            )
        super().__init__(proxy=proxy, target=target, status_code=status_code, reason=reason, message=message)


class ProxyProtocolError(ProxyError):
    """The proxy's reply is not HTTP we can read."""


class ProxyHeadTooLarge(ProxyProtocolError):
    """The reply head grew past the limit without ending: not a proxy we want to keep buffering for."""


class ProxyClosed(ProxyError):
    """The proxy closed the connection before its reply head was complete."""


class ProxyTimeout(ProxyError):
    """The whole attempt (connecting to the proxy and its reply) took longer than the endpoint's timeout."""
