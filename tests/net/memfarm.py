"""An in-memory farm for FarmClient: each member a real ServerConnection (Digest handshake, wire
codec) behind a stand-in for ``client_endpoint``, joined to the client by twisted.test.iosim and
driven by a task.Clock: deterministic, no sockets, no real time."""

from __future__ import annotations

import json
import os
from collections.abc import Coroutine
from typing import Any

import pytest
from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.interfaces import IProtocol, IProtocolFactory
from twisted.internet.protocol import Protocol
from twisted.internet.task import Clock
from twisted.test.iosim import FakeTransport, IOPump, connect

import garlicfarm.net.client
from garlicfarm.config import TLSConfig
from garlicfarm.handshake import NonceRegistry, ServerConfig
from garlicfarm.handshake.features import FEATURES_HEADER
from garlicfarm.net.client import FarmClient
from garlicfarm.net.connection import ConnectionLimits, ServerConnection
from garlicfarm.wire import NO_LEADER, AppendEntriesResponse, Request, Response

#: what the stand-in endpoint is handed for [tls] (the client must pass its own on)
TLS: Any = object()


def uri(node: int) -> str:
    return f"tcp://127.0.0.1:{9000 + node}"


class Settings:
    """What a FarmClient needs of the farm (FarmAccess): node 1 is the configured endpoint."""

    endpoint = uri(1)
    username = "farm"
    cluster = "farm"
    tls: TLSConfig | None = TLS

    def __init__(self, peers: dict[int, str] | None = None) -> None:
        self.peers = peers if peers is not None else {}

    def password(self) -> str:
        return "secret"


def answer(source: int, leader: int, accepted: bool = False) -> AppendEntriesResponse:
    """A node's answer to a client request: accepted, or naming the leader (or NO_LEADER)."""
    return AppendEntriesResponse(source=source, destination=leader, term=1, next_index=1, accepted=accepted)


class Node:
    """One member: how it takes connections, what its 101 says and how it answers requests."""

    def __init__(self, farm: MemoryFarm, node: int) -> None:
        self.farm = farm
        self.id = node
        self.uri = uri(node)
        #: refuse TCP connections
        self.down = False
        #: accept, then close before a word
        self.closes = False
        #: a fresh nonce registry each connection: every cached challenge is stale
        self.restarting = False
        self.credentials = {"farm": "secret"}
        self.cluster = "farm"
        self.members: str | None = None
        self.status: dict[str, Any] | None = {"id": node, "change_refused": None}
        self.features: str | None = None
        #: the leader this node names (its own id: it is the leader and accepts)
        self.leader = NO_LEADER
        #: the leader refuses requests (e.g. a membership change it cannot make)
        self.refuses = False
        #: never answer a request
        self.silent = False
        self.connections = 0
        self.requests: list[Request] = []
        self._nonces = NonceRegistry(os.urandom)

    def headers(self) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        if self.members is not None:
            found.append(("GarlicFarm-Members", self.members))
        if self.status is not None:
            found.append(("GarlicFarm-Status", json.dumps(self.status)))
        if self.features is not None:
            found.append((FEATURES_HEADER, self.features))
        return found

    def serve(self, request: Request) -> Deferred[Response]:
        self.requests.append(request)
        if self.silent:
            return Deferred()
        accepted = self.leader == self.id and not self.refuses
        return succeed(answer(self.id, self.leader, accepted))

    def nonces(self) -> NonceRegistry:
        if self.restarting:
            self._nonces = NonceRegistry(os.urandom)
        return self._nonces


class Closer(Protocol):
    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.loseConnection()


class Endpoint:
    def __init__(self, farm: MemoryFarm, node: Node) -> None:
        self.farm = farm
        self.node = node

    def connect(self, factory: IProtocolFactory) -> Deferred[IProtocol]:
        factory.doStart()  # as Twisted's connectors do (a noisy factory logs it)
        node, farm = self.node, self.farm
        farm.dialled.append(node.id)
        if node.down:
            return fail(ConnectionRefusedError())
        node.connections += 1
        client = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 9000 + node.id))
        assert client is not None
        server: Protocol = (
            Closer()
            if node.closes
            else ServerConnection(
                farm.clock,
                ServerConfig(credentials=node.credentials, cluster=node.cluster),
                node.nonces(),
                node.serve,
                ConnectionLimits(),
                node.headers,
            )
        )
        farm.pumps.append(
            connect(
                server,
                FakeTransport(server, isServer=True),
                client,
                FakeTransport(client, isServer=False),
                greet=False,  # data flows once the client awaits the handshake, as over TCP
            )
        )
        return succeed(client)


class MemoryFarm:
    """Nodes 1..n by id (node 1 is the client's configured endpoint) and what the client did."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, nodes: int = 3, timeout: float = 5.0) -> None:
        self.clock = Clock()
        self.nodes = {n: Node(self, n) for n in range(1, nodes + 1)}
        self.pumps: list[IOPump] = []
        #: the nodes dialled, in order (refused ones too)
        self.dialled: list[int] = []
        #: what client_endpoint was called with
        self.endpoint_calls: list[tuple[Any, str, Any]] = []
        self.client = FarmClient(self.clock, Settings({n: uri(n) for n in self.nodes}), timeout=timeout)
        monkeypatch.setattr(garlicfarm.net.client, "client_endpoint", self.endpoint)

    def __getitem__(self, node: int) -> Node:
        return self.nodes[node]

    def endpoint(self, reactor: Any, where: str, tls: Any) -> Endpoint:
        self.endpoint_calls.append((reactor, where, tls))
        by_uri = {node.uri: node for node in self.nodes.values()}
        return Endpoint(self, by_uri[where])

    def run(self, work: Coroutine[Any, Any, Any], limit: float = 600.0, step: float = 0.05) -> Any:
        """What ``work`` gave (a Failure if it raised), moving bytes and time until it is done."""
        box: list[Any] = []
        Deferred.fromCoroutine(work).addBoth(box.append)
        while not box:
            for _ in range(100):  # a client dialling without end (no pause) fails the test
                if not any([pump.flush() for pump in list(self.pumps)]):
                    break
                self.pumps = [
                    p for p in self.pumps if not (p.clientIO.disconnected and p.serverIO.disconnected)
                ]
            else:
                raise AssertionError("still dialling after 100 rounds without a pause")
            if box or self.clock.seconds() >= limit:
                break
            self.clock.advance(step)
        assert box, f"not done after {limit} s"
        return box[0]
