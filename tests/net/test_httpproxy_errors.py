"""What each HTTP CONNECT failure tells an operator: the proxy, the target and, for a refusal, the
status without a dangling space when the proxy gave no reason (garlicfarm.net.httpproxy_errors)."""

from __future__ import annotations

import pytest

from garlicfarm.net.httpproxy_errors import (
    ProxyAuthenticationRequired,
    ProxyError,
    ProxyRefused,
    ProxyUnreachable,
)

PROXY, TARGET = "127.0.0.1:4444", "x.b32.i2p:0"


def test_unreachable_names_the_proxy_the_target_and_why() -> None:
    error = ProxyUnreachable(proxy=PROXY, target=TARGET, why="connection refused")
    assert (
        str(error) == f"could not connect to HTTP proxy {PROXY} for CONNECT to {TARGET}: connection refused"
    )
    assert (error.proxy, error.target) == (PROXY, TARGET)


@pytest.mark.parametrize(("reason", "status"), [("Forbidden", "403 Forbidden"), ("", "403")])
def test_a_refusal_names_the_status_and_keeps_its_parts(reason: str, status: str) -> None:
    error = ProxyRefused(proxy=PROXY, target=TARGET, status_code=403, reason=reason)
    assert str(error) == f"HTTP proxy {PROXY} refused CONNECT to {TARGET}: {status}"
    assert (error.proxy, error.target, error.status_code, error.reason) == (PROXY, TARGET, 403, reason)


@pytest.mark.parametrize(
    ("user", "words"),
    [
        (None, f"requires authentication for CONNECT to {TARGET} (407); no credentials were given"),
        ("u", f"rejected the credentials of user 'u' for CONNECT to {TARGET} (407)"),
    ],
)
def test_authentication_says_whether_credentials_were_given(user: str | None, words: str) -> None:
    error = ProxyAuthenticationRequired(proxy=PROXY, target=TARGET, status_code=407, reason="", user=user)
    assert str(error).startswith(f"HTTP proxy {PROXY} {words}")
    assert isinstance(error, ProxyRefused) and isinstance(error, ProxyError)
    assert (error.proxy, error.target, error.status_code, error.reason) == (PROXY, TARGET, 407, "")
