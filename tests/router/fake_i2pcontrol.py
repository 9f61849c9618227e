"""A fake I2PControl server (twisted.web over TLS on 127.0.0.1) that can behave like Java I2P or i2pd.

``dialect="i2pd"`` copies what i2pd 2.45.1 was seen to do: a wrong password gets ``{"result":{}}``,
there is no GetRate, tokens are never checked, and (with ``token_last``) a ``Token`` that is not the
last parameter yields the invalid JSON ``{,...}`` its NetworkSetting handler writes.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

from OpenSSL import SSL
from twisted.internet import reactor as _reactor
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IListeningPort, IOpenSSLServerConnectionCreator
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Request, Site
from zope.interface import implementer

from garlicfarm.tls import CertifiedKey, fingerprint, issue_node, new_ca

reactor: Any = _reactor
PASSWORD = "s3cret"

JAVA_INFO: dict[str, Any] = {
    "i2p.router.uptime": 7_200_000,
    "i2p.router.version": "2.10.0",
    "i2p.router.status": "Running",
    "i2p.router.net.status": 2,
    "i2p.router.net.bw.inbound.1s": 1.0,
    "i2p.router.net.bw.inbound.15s": 1000.4,
    "i2p.router.net.bw.outbound.1s": 2.0,
    "i2p.router.net.bw.outbound.15s": 2000.3,
    "i2p.router.net.tunnels.participating": 42,
}
I2PD_INFO: dict[str, Any] = {
    "i2p.router.uptime": 8000,
    "i2p.router.version": "2.45.1",
    "i2p.router.status": "0",
    "i2p.router.net.status": 3,
    "i2p.router.net.bw.inbound.1s": 0.0,
    "i2p.router.net.bw.inbound.15s": 10.5,
    "i2p.router.net.bw.outbound.1s": 0.0,
    "i2p.router.net.bw.outbound.15s": 20.0,
    "i2p.router.net.tunnels.participating": 0,
    "i2p.router.net.total.received.bytes": 0.0,
}


def server_certificate() -> CertifiedKey:
    return issue_node(new_ca("fake router CA"), "fake-router")


@implementer(IOpenSSLServerConnectionCreator)
class ServerTLS:
    def __init__(self, pair: CertifiedKey) -> None:
        self._context = SSL.Context(SSL.TLS_METHOD)
        self._context.use_certificate(pair.certificate)
        self._context.use_privatekey(pair.key)

    def serverConnectionForTLS(self, tls_protocol: Any) -> SSL.Connection:
        return SSL.Connection(self._context, None)


def _stringify(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return f"{value:.1E}" if isinstance(value, float) and value >= 1000 else str(value)


class FakeI2PControl(Resource):
    isLeaf = True  # noqa: N815 -- twisted.web's name

    def __init__(self, dialect: str = "java", *, token_last: bool = False) -> None:
        super().__init__()
        self.dialect = dialect
        self.token_last = token_last
        self.password = PASSWORD
        self.info = dict(JAVA_INFO if dialect == "java" else I2PD_INFO)
        self.limits: dict[str, Any] = {"i2p.router.net.bw.in": 100, "i2p.router.net.bw.out": 50}
        self.job_lag = 12.6
        self.numbers_as_strings = False
        #: Called with the request instead of answering, e.g. to send an error status or a huge body.
        self.override: Callable[[Request], bytes] | None = None
        self.requests: list[dict[str, Any]] = []
        self.tokens: set[str] = set()
        self.expire_next = 0
        self._serial = itertools.count(1)

    def render_POST(self, request: Request) -> bytes:
        if self.override is not None:
            return self.override(request)
        assert request.content is not None
        message = json.loads(request.content.read())
        self.requests.append(message)
        request.setHeader(b"Content-Type", b"application/json")
        method, params = message["method"], message["params"]
        if self.token_last and "Token" in params and list(params)[-1] != "Token":
            return b'{"id":' + str(message["id"]).encode() + b',"result":{,"i2p.router.net.bw.in":1}}'
        return json.dumps({"id": message["id"], **self.answer(method, params), "jsonrpc": "2.0"}).encode()

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "Authenticate":
            if params.get("Password") != self.password:
                if self.dialect == "i2pd":
                    return {"result": {}}
                return {"error": {"code": -32001, "message": "Invalid password provided."}}
            new_token = f"token-{next(self._serial)}"
            self.tokens.add(new_token)
            return {"result": {"API": 1, "Token": new_token}}
        if self.dialect == "java":
            token = params.get("Token")
            if token is None:
                return {"error": {"code": -32002, "message": "No authentication token presented."}}
            if token not in self.tokens:
                return {"error": {"code": -32003, "message": "Authentication token doesn't exist."}}
            if self.expire_next:
                self.expire_next -= 1
                self.tokens.discard(token)
                return {
                    "error": {"code": -32004, "message": "The provided authentication token was expired."}
                }
        if method == "RouterInfo":
            result = {k: v for k, v in self.info.items() if k in params}
            result["i2p.router.something.new"] = {"nested": True}  # unknown keys must be ignored
        elif method == "NetworkSetting":
            assert all(v is None for k, v in params.items() if k != "Token"), "a value would set the limit"
            result = {k: v for k, v in self.limits.items() if k in params}
        elif method == "GetRate" and self.dialect == "java":
            result = {"Result": self.job_lag}
        else:
            return {"error": {"code": -32601, "message": "Method not found"}}
        if self.numbers_as_strings:
            result = {k: _stringify(v) for k, v in result.items()}
        return {"result": result}


class Hang(Resource):
    """Accepts the request and never answers (for timeouts)."""

    isLeaf = True  # noqa: N815 -- twisted.web's name

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[Request] = []

    def render_POST(self, request: Request) -> Any:
        self.pending.append(request)
        return NOT_DONE_YET


class TrackingSite(Site):
    """A Site that can wait until every connection it accepted has closed (a clean reactor for trial)."""

    def __init__(self, resource: Resource) -> None:
        super().__init__(resource)
        self.open: list[Deferred[None]] = []

    def buildProtocol(self, addr: Any) -> Any:
        protocol = super().buildProtocol(addr)
        assert protocol is not None
        closed: Deferred[None] = Deferred()
        self.open.append(closed)
        lost = protocol.connectionLost

        def connection_lost(reason: Any) -> None:
            lost(reason)
            closed.callback(None)

        protocol.connectionLost = connection_lost
        return protocol


class Served:
    """A resource listening with TLS on a free 127.0.0.1 port."""

    def __init__(self, resource: Resource, pair: CertifiedKey | None = None, *, tls: bool = True) -> None:
        self.pair = pair or server_certificate()
        self.site = TrackingSite(resource)
        if tls:
            self.port: IListeningPort = reactor.listenSSL(
                0, self.site, ServerTLS(self.pair), interface="127.0.0.1"
            )
        else:
            self.port = reactor.listenTCP(0, self.site, interface="127.0.0.1")
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port.getHost().port}/jsonrpc"  # type: ignore[attr-defined]
        self.pin = fingerprint(self.pair.cert_pem())

    async def close(self) -> None:
        await self.port.stopListening()  # type: ignore[misc]
        for closed in self.site.open:
            await closed
