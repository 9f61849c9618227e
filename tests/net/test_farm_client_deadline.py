"""FarmClient.connect keeps to the client's timeout however the connection stalls: a TCP connect that
never completes, or a node that accepts and never answers the upgrade, fails with a ClientError
naming the time, and the half-made connection is aborted (a console asking a leader for its cause
waited up to three times a TCP connect timeout and a handshake timeout before)."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IProtocolFactory
from twisted.internet.protocol import Protocol
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

import garlicfarm.net.client
from garlicfarm.net.client import ClientError, FarmClient
from tests.net.test_client_reuse import Access


class NeverConnects:
    def connect(self, factory: IProtocolFactory) -> Deferred[Protocol]:
        return Deferred()


class AcceptsAndIsSilent:
    def __init__(self) -> None:
        self.transports: list[StringTransport] = []

    def connect(self, factory: IProtocolFactory) -> Deferred[Protocol]:
        protocol = factory.buildProtocol(None)  # type: ignore[arg-type]
        assert protocol is not None
        transport = StringTransport()
        protocol.makeConnection(transport)
        self.transports.append(transport)
        return succeed(protocol)  # type: ignore[arg-type]


def status_after(endpoint: Any, monkeypatch: pytest.MonkeyPatch, seconds: float) -> list[Any]:
    clock = Clock()
    monkeypatch.setattr(garlicfarm.net.client, "client_endpoint", lambda *args: endpoint)
    client = FarmClient(clock, Access(), timeout=5.0)
    outcome: list[Any] = []
    Deferred.fromCoroutine(client.status()).addBoth(outcome.append)
    clock.advance(seconds)
    return outcome


@pytest.mark.parametrize("endpoint", [NeverConnects, AcceptsAndIsSilent])
def test_a_stalled_connection_fails_at_the_clients_timeout(
    endpoint: type[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert status_after(endpoint(), monkeypatch, 4.9) == []
    (failure,) = status_after(endpoint(), monkeypatch, 5.0)
    assert failure.check(ClientError)
    assert str(failure.value) == (
        "cannot connect to tcp://127.0.0.1:1: no authenticated connection within 5 s"
    )


def test_the_half_made_connection_is_aborted(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = AcceptsAndIsSilent()
    (failure,) = status_after(endpoint, monkeypatch, 5.0)
    failure.trap(ClientError)
    (transport,) = endpoint.transports
    assert transport.disconnecting
