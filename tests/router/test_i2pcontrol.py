"""I2PControlRouter against a fake I2PControl server over TLS on loopback, with the real reactor.

Trial test cases (pytest runs them); each waits for the server's connections to close, so the reactor
is clean, and is bounded by ``timeout``.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest
from twisted.internet.defer import Deferred
from twisted.trial import unittest
from twisted.web.server import Request

from garlicfarm.router.i2pcontrol import I2PControlRouter
from garlicfarm.router.i2pcontrol_tls import I2PControlConfigError
from garlicfarm.router.interface import LeafStatus, RouterStatus, RouterUnavailable
from tests.router.fake_i2pcontrol import PASSWORD, FakeI2PControl, Hang, Served, reactor


class Base(unittest.TestCase):
    timeout = 10

    def serve(self, resource: Any, **kwargs: Any) -> Served:
        served = Served(resource, **kwargs)
        self.addCleanup(lambda: Deferred.fromCoroutine(served.close()))
        return served

    def client(self, served: Served, password: str = PASSWORD, **kwargs: Any) -> I2PControlRouter:
        return I2PControlRouter(reactor, served.url, password, **kwargs)

    async def unavailable(self, d: Deferred[Any]) -> str:
        try:
            await d
        except RouterUnavailable as e:
            return str(e)
        raise AssertionError("expected RouterUnavailable")


class HappyPath(Base):
    async def test_java_router_status(self) -> None:
        fake = FakeI2PControl("java")
        router = self.client(self.serve(fake))
        status = await router.router_status()
        assert status == RouterStatus(
            net_status="FIREWALLED",
            uptime_ms=7_200_000,
            job_lag_ms=13,
            participating_tunnels=42,
            bandwidth_configured=150 * 1024,
            bandwidth_current=3001,
            version="2.10.0",
        )
        assert status.healthy
        methods = [r["method"] for r in fake.requests]
        assert methods == ["Authenticate", "RouterInfo", "NetworkSetting", "GetRate"]
        assert fake.requests[0]["params"] == {"API": 1, "Password": PASSWORD}
        assert fake.requests[1]["params"]["Token"] == "token-1"
        assert all(isinstance(r["id"], int) for r in fake.requests)  # i2pd echoes ids unquoted

    async def test_token_is_reused(self) -> None:
        fake = FakeI2PControl("java")
        router = self.client(self.serve(fake))
        await router.router_status()
        await router.router_status()
        assert [r["method"] for r in fake.requests].count("Authenticate") == 1

    async def test_i2pd_router_status(self) -> None:
        fake = FakeI2PControl("i2pd", token_last=True)
        router = self.client(self.serve(fake))
        status = await router.router_status()
        # i2pd 2.45's code 3 is "Unknown"; no GetRate, so no job lag.
        assert status == RouterStatus(
            "UNKNOWN", uptime_ms=8000, bandwidth_configured=150 * 1024, bandwidth_current=30, version="2.45.1"
        )
        await router.router_status()
        # After i2pd's "method not found", GetRate is not asked again.
        assert [r["method"] for r in fake.requests].count("GetRate") == 1

    async def test_leaves_are_the_configured_destinations(self) -> None:
        fake = FakeI2PControl("java")
        router = self.client(self.serve(fake), leaves=["leaf-a", "leaf-b"])
        assert await router.leaf_status() == [LeafStatus("leaf-a"), LeafStatus("leaf-b")]
        assert fake.requests == []  # I2PControl has nothing to say about them


class Quirks(Base):
    async def test_wrong_password_as_error_32001(self) -> None:
        router = self.client(self.serve(FakeI2PControl("java")), password="nope")
        message = await self.unavailable(router.router_status())
        assert message.endswith(": wrong I2PControl password")
        assert "nope" not in message

    async def test_wrong_password_as_i2pd_empty_result(self) -> None:
        router = self.client(self.serve(FakeI2PControl("i2pd")), password="nope")
        message = await self.unavailable(router.router_status())
        assert "wrong I2PControl password" in message

    async def test_numbers_as_strings(self) -> None:
        fake = FakeI2PControl("java")
        fake.numbers_as_strings = True  # "7200000", "1.0E3", "42", "2", ...
        status = await self.client(self.serve(fake)).router_status()
        assert (status.uptime_ms, status.net_status, status.participating_tunnels) == (
            7_200_000,
            "FIREWALLED",
            42,
        )
        assert status.bandwidth_current == 3000  # "1.0E3" + "2.0E3"
        assert status.bandwidth_configured == 150 * 1024
        assert status.job_lag_ms == 13

    async def test_token_is_always_the_last_parameter(self) -> None:
        fake = FakeI2PControl("i2pd", token_last=True)
        await self.client(self.serve(fake)).router_status()
        for request in fake.requests[1:]:
            assert list(request["params"])[-1] == "Token", request

    async def test_missing_keys_read_as_zero(self) -> None:
        fake = FakeI2PControl("java")
        fake.info = {"i2p.router.net.status": 0}
        fake.limits = {}
        status = await self.client(self.serve(fake)).router_status()
        assert status == RouterStatus("OK", uptime_ms=0, job_lag_ms=13)

    async def test_expired_token_authenticates_again_once(self) -> None:
        fake = FakeI2PControl("java")
        router = self.client(self.serve(fake))
        await router.router_status()
        fake.expire_next = 1
        status = await router.router_status()
        assert status.uptime_ms == 7_200_000
        methods = [r["method"] for r in fake.requests]
        assert methods[4:] == ["RouterInfo", "Authenticate", "RouterInfo", "NetworkSetting", "GetRate"]
        assert fake.requests[-1]["params"]["Token"] == "token-2"

    async def test_token_expiring_again_is_an_error(self) -> None:
        fake = FakeI2PControl("java")
        fake.expire_next = 2
        message = await self.unavailable(self.client(self.serve(fake)).router_status())
        assert "error -32004" in message
        assert [r["method"] for r in fake.requests] == [
            "Authenticate",
            "RouterInfo",
            "Authenticate",
            "RouterInfo",
        ]


class Failures(Base):
    async def test_oversized_response(self) -> None:
        fake = FakeI2PControl("java")
        fake.override = lambda request: b"x" * 5000
        message = await self.unavailable(self.client(self.serve(fake), max_response=4096).router_status())
        assert "larger than the 4096 bytes allowed" in message or "more than the 4096 allowed" in message

    async def test_oversized_response_without_length(self) -> None:
        fake = FakeI2PControl("java")

        def chunked(request: Request) -> bytes:
            for _ in range(5):
                request.write(b"y" * 1000)  # written before render returns: chunked, no Content-Length
            return b""

        fake.override = chunked
        message = await self.unavailable(self.client(self.serve(fake), max_response=4096).router_status())
        assert "larger than the 4096 bytes allowed" in message

    async def test_http_500(self) -> None:
        fake = FakeI2PControl("java")

        def boom(request: Request) -> bytes:
            request.setResponseCode(500)
            return b"internal trouble"

        fake.override = boom
        message = await self.unavailable(self.client(self.serve(fake)).router_status())
        assert message.endswith("Authenticate: HTTP 500 Internal Server Error: internal trouble")

    async def test_not_json(self) -> None:
        fake = FakeI2PControl("java")
        fake.override = lambda request: b'{"id":abc,"result":{}}'
        message = await self.unavailable(self.client(self.serve(fake)).router_status())
        assert "not JSON" in message

    async def test_connection_refused(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # nobody listens here once the socket closes
        router = I2PControlRouter(reactor, f"https://127.0.0.1:{port}/jsonrpc", PASSWORD)
        message = await self.unavailable(router.router_status())
        assert "connection refused" in message
        assert f"127.0.0.1:{port}" in message

    async def test_timeout(self) -> None:
        hang = Hang()
        router = self.client(self.serve(hang), timeout=0.3)
        message = await self.unavailable(router.router_status())
        assert message.endswith("Authenticate: no answer within 0.3 s")
        assert len(hang.pending) == 1

    async def test_http_url_for_an_https_server(self) -> None:
        served = self.serve(FakeI2PControl("java"))
        router = I2PControlRouter(reactor, served.url.replace("https:", "http:"), PASSWORD, timeout=5)
        message = await self.unavailable(router.router_status())
        assert message.endswith(
            "the server closed the connection without a complete answer (not an HTTP(S) server?)"
        )


class Certificates(Base):
    async def test_pinned_certificate_is_accepted(self) -> None:
        served = self.serve(FakeI2PControl("java"))
        status = await self.client(served, pin=served.pin).router_status()
        assert status.net_status == "FIREWALLED"

    async def test_other_certificate_than_pinned_is_refused(self) -> None:
        served = self.serve(FakeI2PControl("java"))
        other = "sha256:" + ":".join(["AB"] * 32)
        message = await self.unavailable(self.client(served, pin=other).router_status())
        assert "is not the pinned one" in message
        assert served.pin in message

    async def test_plain_http_on_loopback(self) -> None:
        # Java I2P's bundled webapp serves I2PControl at http://127.0.0.1:7657/jsonrpc/.
        served = self.serve(FakeI2PControl("java"), tls=False)
        assert (await self.client(served).router_status()).uptime_ms == 7_200_000


@pytest.mark.parametrize(
    ("url", "pin", "why"),
    [
        ("https://192.0.2.7:7650/jsonrpc", None, "is not on loopback: pin"),
        ("https://router.example:7650/jsonrpc", None, "is not on loopback: pin"),
        ("http://192.0.2.7:7650/jsonrpc", "sha256:" + "00" * 32, "plain http is allowed on loopback only"),
        ("ftp://127.0.0.1/", None, "expected https://"),
        ("https://127.0.0.1:99999/", None, "Port out of range"),
    ],
)
def test_refused_urls(url: str, pin: str | None, why: str) -> None:
    with pytest.raises(I2PControlConfigError, match=why):
        I2PControlRouter(reactor, url, PASSWORD, pin=pin)


@pytest.mark.parametrize(
    "url",
    ["https://127.0.0.1:7650/jsonrpc", "https://127.8.9.10/", "https://[::1]:7650/", "https://localhost/"],
)
def test_loopback_urls_need_no_pin(url: str) -> None:
    I2PControlRouter(reactor, url, PASSWORD)


def test_non_loopback_with_pin_is_accepted() -> None:
    router = I2PControlRouter(reactor, "https://192.0.2.7:7650/jsonrpc", PASSWORD, pin="AB" * 32)
    assert router.endpoint.pin == bytes.fromhex("AB" * 32)
