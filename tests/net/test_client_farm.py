"""FarmClient against an in-memory farm (tests/net/memfarm.py: real Digest handshakes and wire codec,
a task.Clock): which node it asks and in what order, what it learns from a 101, how each kind of
refusal reads, and the message it gives up with."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.logger import ILogObserver, globalLogPublisher
from twisted.python.failure import Failure

from garlicfarm.handshake import ChallengeCache
from garlicfarm.handshake.cache import CacheKey
from garlicfarm.handshake.digest import Challenge
from garlicfarm.net.client import AuthenticationRefused, ClientError, FarmClient
from garlicfarm.wire import AddServerRequest, Application, ClientRequest, ClusterServer, LogEntry
from tests.net.memfarm import TLS, MemoryFarm, Settings, uri


@pytest.fixture
def farm(monkeypatch: pytest.MonkeyPatch) -> MemoryFarm:
    return MemoryFarm(monkeypatch)


def error(outcome: Any, kind: type[Exception] = ClientError) -> str:
    assert isinstance(outcome, Failure), outcome
    assert outcome.check(kind), outcome
    return outcome.getErrorMessage()


def submit(farm: MemoryFarm, what: str = "submit") -> Any:
    return farm.run(farm.client.request_leader(ClientRequest(), what))


# -------------------------------------------------------------------------------- connecting


def test_a_status_costs_a_challenge_once_then_one_connection(farm: MemoryFarm) -> None:
    """The first connection to a node gets the Digest challenge and the client reconnects; the
    cached challenge lets the next go straight in. Each dial names the node, the reactor and [tls]."""
    farm[2].status = {"id": 2, "role": "follower"}
    assert farm.run(farm.client.status(uri(2))) == {"id": 2, "role": "follower"}
    assert farm[2].connections == 2
    assert farm.run(farm.client.status(uri(2))) == {"id": 2, "role": "follower"}
    assert farm[2].connections == 3
    assert farm.endpoint_calls == [(farm.clock, uri(2), TLS)] * 3
    assert farm.dialled == [2, 2, 2]


def test_a_status_asks_the_configured_node_by_default(farm: MemoryFarm) -> None:
    assert farm.run(farm.client.status()) == {"id": 1, "change_refused": None}
    assert farm.dialled == [1, 1]


def test_a_node_that_sends_no_status_is_not_taken_for_a_garlicfarm_node(farm: MemoryFarm) -> None:
    farm[1].status = None
    outcome = farm.run(farm.client.status())
    assert error(outcome) == "the node sent no status (not a garlicfarm node?)"
    assert all(pump.serverIO.disconnected for pump in farm.pumps)  # the connection is closed anyway


def test_the_members_a_node_names_are_learned(farm: MemoryFarm) -> None:
    """``id=endpoint`` items, comma-separated, spaces around them ignored; an endpoint may hold '='
    (Twisted's endpoint strings); items without a numeric id are skipped."""
    farm[1].members = "1=tcp://127.0.0.1:9001, 4=tcp:host=127.0.0.1:port=9004 ,x=tcp://nope:1, junk, 5:6"
    farm.run(farm.client.status())
    assert farm.client.endpoints == {
        1: uri(1),
        2: uri(2),
        3: uri(3),
        4: "tcp:host=127.0.0.1:port=9004",
    }


def test_no_member_header_leaves_the_members_as_configured(farm: MemoryFarm) -> None:
    farm.run(farm.client.status())
    assert farm.client.endpoints == {1: uri(1), 2: uri(2), 3: uri(3)}


def test_a_refused_connection_reads_as_such(farm: MemoryFarm) -> None:
    farm[1].down = True
    assert error(farm.run(farm.client.status())) == (
        "cannot connect to tcp://127.0.0.1:9001: "
        "connection refused (is the node running and listening there?)"
    )


def test_a_wrong_password_is_refused_at_once_with_what_to_check(farm: MemoryFarm) -> None:
    """A 401 to our credentials: AuthenticationRefused, from the first node, no other asked."""
    farm[1].credentials = {"farm": "another"}
    outcome = submit(farm)
    assert error(outcome, AuthenticationRefused) == (
        "submit: tcp://127.0.0.1:9001: authentication refused "
        "(HTTP 401 to user 'farm': check the username and password)"
    )
    assert farm.dialled == [1, 1]


def test_another_handshake_failure_is_a_plain_client_error_naming_it(farm: MemoryFarm) -> None:
    farm[1].cluster = "other"
    outcome = farm.run(farm.client.status())
    assert not outcome.check(AuthenticationRefused)
    assert error(outcome) == (
        "tcp://127.0.0.1:9001: handshake failed: 404: wrong cluster/version or not a Garlic Farm server"
    )


def test_a_node_that_closes_at_once_is_named_with_the_cause(farm: MemoryFarm) -> None:
    farm[1].closes = True
    assert error(farm.run(farm.client.status())) == "tcp://127.0.0.1:9001: connection closed"


class Forgetful(ChallengeCache):
    """A cache whose challenge is gone by the next connection (as when a concurrent request's
    refused credentials discard it each time)."""

    def put(self, key: CacheKey, challenge: Challenge, now: float, *, retried_stale: bool = False) -> None:
        pass


def test_three_challenges_in_a_row_end_the_attempt(farm: MemoryFarm) -> None:
    """Every connection answered with a challenge: three connections, then a plain error."""
    farm.client.cache = Forgetful()
    assert error(farm.run(farm.client.status())) == "tcp://127.0.0.1:9001: the handshake did not complete"
    assert farm[1].connections == 3


def test_a_stale_challenge_is_retried_once_then_refused(farm: MemoryFarm) -> None:
    """A node whose nonces are forgotten by each next connection (restarting): the challenge, one
    retry with the stale-marked fresh one, then the refusal."""
    farm[1].restarting = True
    assert error(farm.run(farm.client.status()), AuthenticationRefused).startswith(
        "tcp://127.0.0.1:9001: authentication refused"
    )
    assert farm[1].connections == 3


def test_connecting_logs_no_factory_lines(farm: MemoryFarm) -> None:
    """A client connects for every request: Twisted's "Starting factory" lines would drown the log."""
    events: list[dict[str, Any]] = []
    observe: ILogObserver = events.append  # type: ignore[assignment]
    globalLogPublisher.addObserver(observe)
    try:
        farm.run(farm.client.status())
    finally:
        globalLogPublisher.removeObserver(observe)
    assert not [e for e in events if "factory" in str(e.get("log_format", "")).lower()]


def test_a_new_client_waits_30_s_and_knows_no_leader_features(farm: MemoryFarm) -> None:
    client = FarmClient(farm.clock, Settings())
    assert client.timeout == 30.0
    assert client.leader_features == frozenset()


# -------------------------------------------------------------------------------- the leader


def lead(farm: MemoryFarm, leader: int) -> None:
    """Every node names ``leader``; ``leader`` accepts."""
    for node in farm.nodes.values():
        node.leader = leader


def add_server_4() -> AddServerRequest:
    return AddServerRequest(entries=(LogEntry(0, ClusterServer(4, "tcp://127.0.0.1:9004")),))


def test_a_redirect_is_followed_and_the_leader_asked_first_next_time(farm: MemoryFarm) -> None:
    """The leader's features are the client's to see; the next request skips the redirect."""
    lead(farm, 2)
    farm[2].features = "pre-vote, commit-ack"
    response = submit(farm)
    assert response.accepted and response.source == 2
    assert farm.client.leader_features == frozenset({"pre-vote", "commit-ack"})
    assert farm.dialled == [1, 1, 2, 2]  # each node's first connection takes its challenge
    assert submit(farm).accepted
    assert farm.dialled == [1, 1, 2, 2, 2]
    assert [len(node.requests) for node in farm.nodes.values()] == [1, 2, 0]


def test_kept_connections_carry_many_requests_over_one_handshake(farm: MemoryFarm) -> None:
    lead(farm, 1)
    farm.client.keep_connections = True
    assert submit(farm).accepted and submit(farm).accepted
    assert farm.dialled == [1, 1] and len(farm[1].requests) == 2
    farm.client.close()


def test_a_leader_refusing_a_request_says_so_without_a_cause(farm: MemoryFarm) -> None:
    lead(farm, 2)
    farm[2].refuses = True
    farm[2].status = {"change_refused": {"server": None, "why": "not a membership change's"}}
    request = ClientRequest(entries=(LogEntry(0, Application(b"[1]")),))
    assert error(farm.run(farm.client.request_leader(request, "submit"))) == (
        "submit: refused by the leader (server 2)"
    )
    assert len(farm[2].requests) == 1  # not asked again


def test_a_refused_membership_change_gives_the_leaders_cause(farm: MemoryFarm) -> None:
    """The leader's status keeps why it refused a change to that server (the answer has no room)."""
    lead(farm, 2)
    farm[2].refuses = True
    farm[2].status = {"change_refused": {"server": 4, "why": "its endpoint is refused: no such host"}}
    outcome = farm.run(farm.client.request_leader(add_server_4(), "add server 4"))
    assert error(outcome) == (
        "add server 4: refused by the leader (server 2): its endpoint is refused: no such host"
    )


@pytest.mark.parametrize(
    "status",
    [
        {"change_refused": {"server": 5, "why": "another change's cause"}},
        {"change_refused": None},
        None,  # no status at all: nothing to add
    ],
)
def test_no_cause_when_the_leader_keeps_none_for_that_server(
    farm: MemoryFarm, status: dict[str, Any] | None
) -> None:
    lead(farm, 2)
    farm[2].refuses = True
    farm[2].status = status
    outcome = farm.run(farm.client.request_leader(add_server_4(), "add server 4"))
    assert error(outcome) == "add server 4: refused by the leader (server 2)"


def test_an_unreachable_node_is_skipped_for_the_next_member(farm: MemoryFarm) -> None:
    farm[1].down = True
    lead(farm, 3)
    farm[2].leader = 0  # NO_LEADER: has not heard of one yet
    assert submit(farm).source == 3
    assert farm.dialled == [1, 2, 2, 3, 3]


def test_a_redirect_to_an_unreachable_leader_goes_on_to_a_member_not_tried(farm: MemoryFarm) -> None:
    """Node 1 still names node 2, which is down: the client tries node 3, not node 1 again."""
    lead(farm, 2)
    farm[2].down = True
    farm[3].leader = 3
    assert submit(farm).source == 3
    assert farm.dialled == [1, 1, 2, 3, 3]


# -------------------------------------------------------------------------------- giving up


def test_no_leader_names_the_unreachable_servers_and_their_causes(farm: MemoryFarm) -> None:
    farm[3].down = True
    assert error(submit(farm)) == (
        "submit: no leader after 5s; 1 of 3 servers unreachable — cannot connect to "
        "tcp://127.0.0.1:9003: connection refused (is the node running and listening there?)"
    )


def test_half_the_servers_unreachable_is_no_quorum(monkeypatch: pytest.MonkeyPatch) -> None:
    farm = MemoryFarm(monkeypatch, nodes=4)
    farm[3].down = farm[4].down = True
    assert error(submit(farm)).startswith(
        "submit: no leader after 5s; 2 of 4 servers unreachable "
        "(fewer than a majority up: the farm has no quorum) — cannot connect to tcp://127.0.0.1:9003"
    )


def test_the_causes_are_cut_at_400_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    farm = MemoryFarm(monkeypatch, nodes=6)
    for node in farm.nodes.values():
        node.down = True
    message = error(submit(farm))
    head, causes = message.split(" — ")
    assert head == (
        "submit: no leader after 5s; 6 of 6 servers unreachable "
        "(fewer than a majority up: the farm has no quorum)"
    )
    assert len(causes) == 400
    assert causes.startswith(
        "cannot connect to tcp://127.0.0.1:9001: connection refused (is the node running and listening "
        "there?); cannot connect to tcp://127.0.0.1:9002: "
    )


def test_a_server_that_answers_later_is_no_longer_counted_unreachable(farm: MemoryFarm) -> None:
    farm[2].down = True
    farm.clock.callLater(1.0, setattr, farm[2], "down", False)
    farm.client.timeout = 3.0
    assert error(submit(farm)) == "submit: no leader after 3s"
    assert farm.dialled == [1, 1, 2, 3, 3, 1, 2, 2]  # node 2 refused, then answered


def test_an_empty_what_leaves_the_message_unprefixed(farm: MemoryFarm) -> None:
    assert error(submit(farm, what="")) == "no leader after 5s"


def test_a_silent_node_is_given_up_at_the_clients_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not the connection's own 30 s: a request waits as long as the client does, then the client
    asks again after its pause."""
    farm = MemoryFarm(monkeypatch, nodes=1, timeout=2.0)
    farm[1].silent = True
    message = error(submit(farm))
    assert message == (
        "submit: no leader after 3s; 1 of 1 servers unreachable "
        "(fewer than a majority up: the farm has no quorum) — no response to a ClientRequest"
    )
    # five attempts of 2 s each, and the pauses between them (0.2 + 0.4 + 0.8 + 1.6 s)
    assert len(farm[1].requests) == 5
    assert farm.clock.seconds() == pytest.approx(5 * 2.0 + 3.0, abs=0.5)  # the clock steps 0.05 s
