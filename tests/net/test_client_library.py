"""GarlicFarmClient against a stand-in for the farm: what each request carries, how a refused batch is
split so that one bad entry fails alone, how errors reach each submission, and the farm client it
builds (its timeout, its kept connections)."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.task import Clock
from twisted.python.failure import Failure

import garlicfarm.client
from garlicfarm.client import ClientSettings, GarlicFarmClient
from garlicfarm.net.client import AuthenticationRefused, ClientError
from garlicfarm.wire import (
    AddServerRequest,
    AppendEntriesResponse,
    Application,
    ClusterServer,
    LogEntry,
    RemoveServerRequest,
    Request,
    Response,
)

SETTINGS = ClientSettings(endpoints=("tcp://127.0.0.1:1",), username="farm", password="secret", timeout=7.5)


class StandIn:
    """What GarlicFarmClient uses of FarmClient: ``request_leader``, answered from a script."""

    def __init__(self, reactor: Any, settings: ClientSettings, timeout: float = 30.0) -> None:
        self.reactor, self.settings, self.timeout = reactor, settings, timeout
        self.keep_connections = False
        self.sent: list[tuple[Request, str]] = []
        self.last = 0
        #: entries the "leader" refuses: a request holding one is refused whole
        self.bad: set[bytes] = set()
        self.error: Exception | None = None

    async def request_leader(self, request: Request, what: str) -> Response:
        self.sent.append((request, what))
        if self.error is not None:
            raise self.error
        data = [e.value.data for e in request.entries if isinstance(e.value, Application)]
        if self.bad.intersection(data):
            raise ClientError(f"{what}: refused by the leader (server 1): not JSON")
        self.last += len(request.entries)
        return AppendEntriesResponse(source=1, destination=1, term=1, next_index=self.last + 1, accepted=True)

    async def status(self, uri: str | None = None) -> dict[str, Any]:
        return {"asked": uri}


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> GarlicFarmClient:
    monkeypatch.setattr(garlicfarm.client, "FarmClient", StandIn)
    return GarlicFarmClient(Clock(), SETTINGS)


def farm(client: GarlicFarmClient) -> StandIn:
    stand_in = client._farm
    assert isinstance(stand_in, StandIn)
    return stand_in


def turn(client: GarlicFarmClient) -> None:
    clock = client.reactor
    assert isinstance(clock, Clock)
    clock.advance(0)


def outcomes(client: GarlicFarmClient, *data: bytes) -> list[Any]:
    got: list[Any] = []
    for item in data:
        client.submit(item).addBoth(got.append)
    turn(client)
    return got


def test_the_farm_client_waits_as_long_as_the_settings_say_and_keeps_its_connections(
    client: GarlicFarmClient,
) -> None:
    stand_in = farm(client)
    assert stand_in.reactor is client.reactor and stand_in.settings is SETTINGS
    assert stand_in.timeout == 7.5
    assert stand_in.keep_connections is True
    assert client.settings is SETTINGS


def test_a_request_carries_each_submission_as_an_application_entry_in_order(client: GarlicFarmClient) -> None:
    assert outcomes(client, b'{"a":1}', b'{"b":2}') == [1, 2]
    [(request, what)] = farm(client).sent
    assert what == "submit"
    assert request.entries == (LogEntry(0, Application(b'{"a":1}')), LogEntry(0, Application(b'{"b":2}')))


def test_a_refused_batch_is_sent_again_one_entry_a_request(client: GarlicFarmClient) -> None:
    farm(client).bad = {b"bad"}
    bad: list[Any] = []
    good: list[Any] = []
    client.submit(b"bad").addBoth(bad.append)  # two: the smallest batch that is split
    client.submit(b"[2]").addBoth(good.append)
    turn(client)
    assert [len(request.entries) for request, _ in farm(client).sent] == [2, 1, 1]
    assert good == [1]  # the good one commits
    [failure] = bad
    assert isinstance(failure, Failure) and failure.check(ClientError)
    assert "refused by the leader" in failure.getErrorMessage()


def test_a_refused_single_entry_fails_without_being_sent_again(client: GarlicFarmClient) -> None:
    farm(client).bad = {b"bad"}
    [failure] = outcomes(client, b"bad")
    assert isinstance(failure, Failure) and failure.check(ClientError)
    assert len(farm(client).sent) == 1


def test_another_client_error_fails_every_submission_of_the_batch_with_its_type_and_words(
    client: GarlicFarmClient,
) -> None:
    farm(client).error = AuthenticationRefused("submit: 401 from server 1")
    got = outcomes(client, b"[1]", b"[2]")
    assert len(farm(client).sent) == 1  # not split: no entry of it was at fault
    for failure in got:
        assert isinstance(failure, Failure) and failure.check(AuthenticationRefused)
        assert failure.getErrorMessage() == "submit: 401 from server 1"
    assert got[0].value is not got[1].value  # each its own exception: a caller may change one


def test_an_unexpected_error_reaches_every_submission_of_the_batch(client: GarlicFarmClient) -> None:
    error = RuntimeError("the reactor stopped")
    farm(client).error = error
    got = outcomes(client, b"[1]", b"[2]")
    assert all(isinstance(f, Failure) and f.value is error for f in got)


def test_each_turn_sends_what_was_submitted_in_it(client: GarlicFarmClient) -> None:
    assert outcomes(client, b"[1]") == [1]
    assert outcomes(client, b"[2]") == [2]  # the next turn is flushed too
    assert [len(request.entries) for request, _ in farm(client).sent] == [1, 1]


def test_membership_changes_name_the_server(client: GarlicFarmClient) -> None:
    done: list[Any] = []
    client.add_server(4, "tcp://127.0.0.1:22603").addBoth(done.append)
    client.remove_server(2).addBoth(done.append)
    assert done == [None, None]
    (add, add_what), (remove, remove_what) = farm(client).sent
    assert add == AddServerRequest(entries=(LogEntry(0, ClusterServer(4, "tcp://127.0.0.1:22603")),))
    assert add_what == "add server 4"
    assert remove == RemoveServerRequest(entries=(LogEntry(0, ClusterServer(2)),))
    assert remove_what == "remove server 2"


def test_status_asks_the_node_named_or_the_first(client: GarlicFarmClient) -> None:
    got: list[Any] = []
    client.status("tcp://127.0.0.1:2").addBoth(got.append)
    client.status().addBoth(got.append)
    assert got == [{"asked": "tcp://127.0.0.1:2"}, {"asked": None}]
