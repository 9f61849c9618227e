"""Real GarlicFarmService nodes on a MemoryReactorClock (single-node farms that elect themselves), and an
in-memory HTTP client that speaks to an AdminSite through twisted.web's real request parsing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import h11
from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.interfaces import IAddress, ISSLTransport
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure
from zope.interface import implementer

from garlicfarm.admin.config import admin_config
from garlicfarm.admin.farm import FarmHandle
from garlicfarm.admin.site import AdminSite
from garlicfarm.config import TLSConfig, parse_config
from garlicfarm.handshake.authheader import parse_challenges
from garlicfarm.handshake.digest import Algorithm, Challenge, DigestCredentials
from garlicfarm.service import GarlicFarmService
from garlicfarm.tls import issue_node, new_ca, write_certified_key

PASSWORD = "correct horse battery staple"
#: the Browser's address unless it is given another
LOCAL = IPv4Address("TCP", "127.0.0.1", 40000)

FARM_CA = new_ca("farm CA")
NODE_CERT = issue_node(FARM_CA, "node-1")


def farm_tls(directory: Path) -> TLSConfig:
    """A farm's [tls] written into ``directory``: its CA, and node 1's certificate (for 127.0.0.1)."""
    write_certified_key(FARM_CA, directory / "ca.pem", directory / "ca.key")
    write_certified_key(NODE_CERT, directory / "node-1.pem", directory / "node-1.key")
    return TLSConfig(ca=directory / "ca.pem", cert=directory / "node-1.pem", key=directory / "node-1.key")


def make_node(
    tmp: Path,
    clock: MemoryReactorClock,
    cluster: str = "farm",
    password: str = PASSWORD,
    port: int = 9001,
    admin_port: int | bool | None = True,
) -> GarlicFarmService:
    """A started single-node farm (no TLS, loopback), leader after a few ticks, one status committed."""
    base = tmp / cluster
    base.mkdir(parents=True, exist_ok=True)
    (base / "credentials").write_text(password + "\n")
    raw: dict[str, Any] = {
        "node": {
            "id": 1,
            "cluster": cluster,
            "endpoint": f"tcp://127.0.0.1:{port}",
            "listen": f"tcp:{port}:interface=127.0.0.1",
            "data_dir": "node-1",
        },
        "auth": {"username": "farm", "password_file": "credentials"},
        "peers": {"1": f"tcp://127.0.0.1:{port}"},
        "app": {"interval": 5},
        "router": {"leaves": [f"{cluster}-leaf-1", f"{cluster}-leaf-2"]},
        "publisher": {"kind": "none"},
    }
    if admin_port is not None:
        raw["admin"] = {"listen": port + 100 if admin_port is True else admin_port}
    node = GarlicFarmService(parse_config(raw, base / "node-1.toml"), clock, monotonic=clock.seconds)
    node.startService()
    for _ in range(100):
        clock.advance(0.05)
    assert node.driver.core.is_leader()
    assert node.state.latest, "the first status report was committed"
    return node


def handle(node: GarlicFarmService) -> FarmHandle:
    config = admin_config(node.config)
    return FarmHandle(node, config, f"http://127.0.0.1:{node.config.listen.split(':')[1]}/")


@implementer(ISSLTransport)
class TLSStringTransport(StringTransport):
    """A StringTransport that says it is TLS (twisted.web then takes the request for https)."""

    def getPeerCertificate(self) -> None:
        return None

    def getTcpNoDelay(self) -> bool:
        return True

    def setTcpNoDelay(self, enabled: bool) -> None:
        pass

    def getTcpKeepAlive(self) -> bool:
        return False

    def setTcpKeepAlive(self, enabled: bool) -> None:
        pass

    def loseWriteConnection(self) -> None:
        pass


class Response:
    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name.lower()), None)

    def all(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k == name.lower()]

    def json(self) -> Any:
        return json.loads(self.body)


class Browser:
    """Sends requests to ``site`` over a StringTransport, answering Digest challenges like a browser.

    ``peer`` is the client's address; with ``hang_up`` set, the client closes each connection as soon as
    its request is sent (the response then has status 0 and nothing else); with ``secure`` set, the
    connections look like TLS ones to the site (``request.isSecure()``)."""

    def __init__(
        self,
        site: AdminSite,
        username: str = "farm",
        password: str = PASSWORD,
        host: str = "127.0.0.1:9101",
        peer: IAddress = LOCAL,
    ) -> None:
        self.site = site
        assert isinstance(site.reactor, Clock), "the tests' sites run on a MemoryReactorClock"
        self.clock = site.reactor
        self.http = site.http_factory()
        self.username = username
        self.password = password
        self.host = host
        self.challenge: Challenge | None = None
        self.nc = 0
        self.csrf: str | None = None
        self.peer = peer
        self.hang_up = False
        self.secure = False

    def raw(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes = b"") -> Response:
        protocol = self.http.buildProtocol(self.peer)
        assert protocol is not None
        transport = (TLSStringTransport if self.secure else StringTransport)(peerAddress=self.peer)
        protocol.makeConnection(transport)
        client = h11.Connection(h11.CLIENT)
        all_headers = [("Host", self.host), *headers]
        if body or method == "POST":
            all_headers.append(("Content-Length", str(len(body))))
        data = client.send(h11.Request(method=method, target=path, headers=all_headers))
        data += client.send(h11.Data(data=body)) if body else b""
        data += client.send(h11.EndOfMessage())
        protocol.dataReceived(data)
        if self.hang_up:
            protocol.connectionLost(Failure(ConnectionDone()))
            return Response(0, [], b"")
        status, got, chunks = 0, [], []
        # Actions answer once their log entry commits, a few reactor turns later (the driver drains the
        # core with callLater(0)): turn the site's clock, as the reactor would, until the answer is whole.
        for _ in range(200):
            if transport.value():  # (h11 takes empty bytes for the end of the connection)
                client.receive_data(transport.value())
                transport.clear()
            while (event := client.next_event()) is not h11.NEED_DATA:
                if isinstance(event, h11.Response):
                    status = event.status_code
                    got = [(k.decode().lower(), v.decode()) for k, v in event.headers]
                elif isinstance(event, h11.Data):
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    protocol.connectionLost(Failure(ConnectionDone()))
                    return Response(status, got, b"".join(chunks))
            self.clock.advance(0)
        raise AssertionError(f"{method} {path}: no whole response after 200 reactor turns")

    def request(
        self, method: str, path: str, headers: list[tuple[str, str]] | None = None, body: bytes = b""
    ) -> Response:
        headers = list(headers or [])
        for _ in range(3):
            extra = []
            if self.challenge is not None:
                self.nc += 1
                creds = DigestCredentials.answer(
                    self.challenge,
                    username=self.username,
                    password=self.password,
                    method=method,
                    uri=path,
                    nc=self.nc,
                    cnonce=os.urandom(8).hex(),
                )
                extra = [("Authorization", creds.to_header())]
            response = self.raw(method, path, headers + extra, body)
            if response.status != 401:
                return response
            items = parse_challenges(", ".join(response.all("www-authenticate")))
            challenges = [c for c in (Challenge.from_item(i) for i in items) if c is not None]
            fresh = challenges[0]
            if self.challenge is not None and not fresh.stale:
                return response  # refused with our credentials: a wrong password
            self.challenge, self.nc = fresh, 0
        return response

    def get(self, path: str) -> Response:
        return self.request("GET", path)

    def session(self) -> dict[str, Any]:
        data: dict[str, Any] = self.get("/api/session").json()
        self.csrf = data["csrf"]
        return data

    def post(
        self,
        path: str,
        body: Any,
        *,
        csrf: bool = True,
        content_type: str = "application/json",
        origin: str | None = None,
        raw: bytes | None = None,
    ) -> Response:
        if csrf and self.csrf is None:
            self.session()
        headers = [("Content-Type", content_type)]
        if csrf and self.csrf is not None:
            headers.append(("X-CSRF-Token", self.csrf))
        if origin is not None:
            headers.append(("Origin", origin))
        data = raw if raw is not None else json.dumps(body).encode()
        return self.request("POST", path, headers, data)


def algorithms(response: Response) -> list[Algorithm]:
    items = parse_challenges(", ".join(response.all("www-authenticate")))
    return [c.algorithm for c in (Challenge.from_item(i) for i in items) if c is not None]
