"""Client and server handshakes talking to each other in memory: the whole exchange."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from garlicfarm.handshake import (
    Algorithm,
    Authenticated,
    ChallengeCache,
    ClientEvent,
    Failed,
    Failure,
    NonceRegistry,
    Reconnect,
    Reject,
    Rejected,
    ServerEvent,
    Upgraded,
)
from garlicfarm.handshake.nonces import NC_WINDOW
from tests.handshake.helpers import BINARY, HOUR, T0, Farm, client_config, rng, sent, server_config


def connect(
    farm: Farm, now: float, *, to_server: bytes = b"", to_client: bytes = b""
) -> tuple[bool, list[ClientEvent], list[ServerEvent]]:
    """One connection: returns (whether request 2 was sent, client events, server events).

    ``to_server``/``to_client`` are binary-protocol bytes sent right behind each side's head.
    """
    client, server = farm.handshakes(now)
    server_events = server.receive_data(client.initiate() + to_server, now)
    client_events = client.receive_data(sent(server_events) + to_client, now)
    return client.sends_credentials, client_events, server_events


def rejected(events: Sequence[ServerEvent]) -> Reject | None:
    return next((e.reason for e in events if isinstance(e, Rejected)), None)


def test_full_flow_with_binary_data_both_ways() -> None:
    farm = Farm()
    sends_credentials, client_events, server_events = connect(farm, T0)
    assert not sends_credentials
    assert rejected(server_events) is Reject.NO_CREDENTIALS
    assert client_events == [Reconnect("challenge received")]

    sends_credentials, client_events, server_events = connect(
        farm, T0 + 1, to_server=BINARY, to_client=BINARY[::-1]
    )
    assert sends_credentials
    assert server_events[-1] == Authenticated("alice", Algorithm.SHA256, BINARY)
    (upgraded,) = client_events
    assert isinstance(upgraded, Upgraded)
    assert upgraded.leftover == BINARY[::-1]
    assert upgraded.header("GarlicFarm-Leader") == "3"


def test_full_flow_byte_by_byte() -> None:
    farm = Farm()
    connect(farm, T0)
    client, server = farm.handshakes(T0)
    request = client.initiate()
    server_events: list[ServerEvent] = []
    for i in range(len(request)):
        assert not server.finished
        server_events += server.receive_data(request[i : i + 1], T0)
    assert server_events[-1] == Authenticated("alice", Algorithm.SHA256, b"")
    response = sent(server_events)
    client_events: list[ClientEvent] = []
    for i in range(len(response)):
        assert not client.finished
        client_events += client.receive_data(response[i : i + 1], T0)
    (upgraded,) = client_events
    assert isinstance(upgraded, Upgraded)
    assert upgraded.leftover == b""


@pytest.mark.parametrize("algorithm", [Algorithm.SHA256, Algorithm.MD5])
def test_each_algorithm_works(algorithm: Algorithm) -> None:
    farm = Farm(client=client_config(algorithms=(algorithm,)))
    connect(farm, T0)
    _, _, server_events = connect(farm, T0)
    assert server_events[-1] == Authenticated("alice", algorithm, b"")


def test_sha256_preferred_by_default() -> None:
    farm = Farm()
    connect(farm, T0)
    assert connect(farm, T0)[2][-1] == Authenticated("alice", Algorithm.SHA256, b"")


def test_reconnects_within_the_hour_skip_request_1_with_increasing_nc() -> None:
    farm = Farm()
    connect(farm, T0)
    for i in range(1, 6):
        sends_credentials, client_events, server_events = connect(farm, T0 + i * 600)
        assert sends_credentials
        assert isinstance(client_events[0], Upgraded)
        assert isinstance(server_events[-1], Authenticated)
    entry = farm.cache.get(("127.0.0.1:9001", "farm"), T0 + HOUR)
    assert entry is not None
    assert entry.last_nc == 5
    assert len(farm.nonces) == 1


def test_after_the_cache_expires_the_client_starts_over() -> None:
    farm = Farm()
    connect(farm, T0)
    assert connect(farm, T0 + HOUR)[0]
    sends_credentials, client_events, _ = connect(farm, T0 + HOUR + 1)
    assert not sends_credentials
    assert client_events == [Reconnect("challenge received")]
    assert isinstance(connect(farm, T0 + HOUR + 2)[1][0], Upgraded)


def test_expired_nonce_gets_stale_and_the_client_retries() -> None:
    # The server forgets faster than the client: the client's cached nonce is stale.
    farm = Farm(nonces=NonceRegistry(rng(1), lifetime=HOUR), cache=ChallengeCache(lifetime=2 * HOUR))
    connect(farm, T0)
    _, client_events, server_events = connect(farm, T0 + HOUR + 10)
    assert rejected(server_events) is Reject.STALE_NONCE
    assert b"stale=true" in sent(server_events)
    assert client_events == [Reconnect("stale nonce, retrying once with the fresh challenge")]
    sends_credentials, client_events, server_events = connect(farm, T0 + HOUR + 11)
    assert sends_credentials
    assert isinstance(server_events[-1], Authenticated)
    assert isinstance(client_events[0], Upgraded)


def test_server_restart_is_a_stale_nonce_too() -> None:
    farm = Farm()
    connect(farm, T0)
    farm.nonces = NonceRegistry(rng(99))  # a restarted server: a new secret
    assert rejected(connect(farm, T0 + 1)[2]) is Reject.STALE_NONCE
    assert isinstance(connect(farm, T0 + 2)[2][-1], Authenticated)


def test_replayed_request_2_is_refused() -> None:
    farm = Farm()
    connect(farm, T0)
    client, server = farm.handshakes(T0)
    captured = client.initiate()
    assert isinstance(server.receive_data(captured, T0)[-1], Authenticated)
    _, replay_server = farm.handshakes(T0 + 5)
    assert rejected(replay_server.receive_data(captured, T0 + 5)) is Reject.REPLAYED_NC
    # The real client carries on: its next nc is higher.
    assert isinstance(connect(farm, T0 + 6)[2][-1], Authenticated)


def test_concurrent_connections_reaching_the_server_out_of_order_all_upgrade() -> None:
    """Three connections opened at once take nc 1, 2, 3 from the cache; the server sees them 3, 1, 2
    (their TLS handshakes ended in that order). Each is let in: a refusal here failed a client's
    connections under load as "credentials refused"."""
    farm = Farm()
    connect(farm, T0)  # the challenge, cached
    pairs = [farm.handshakes(T0) for _ in range(3)]
    requests = [client.initiate() for client, _ in pairs]
    for i in (2, 0, 1):
        client, server = pairs[i]
        server_events = server.receive_data(requests[i], T0)
        assert isinstance(server_events[-1], Authenticated)
        (upgraded,) = client.receive_data(sent(server_events), T0)
        assert isinstance(upgraded, Upgraded)


def test_a_connection_far_behind_the_others_is_told_stale_and_gets_in_on_its_retry() -> None:
    farm = Farm()
    connect(farm, T0)
    late_client, late_server = farm.handshakes(T0)
    late_request = late_client.initiate()  # nc 1, delayed past NC_WINDOW later connections
    for _ in range(NC_WINDOW):
        assert isinstance(connect(farm, T0)[2][-1], Authenticated)
    server_events = late_server.receive_data(late_request, T0)
    assert rejected(server_events) is Reject.REPLAYED_NC
    assert late_client.receive_data(sent(server_events), T0) == [
        Reconnect("stale nonce, retrying once with the fresh challenge")
    ]
    assert isinstance(connect(farm, T0)[2][-1], Authenticated)


def test_wrong_password_fails_and_the_next_attempt_starts_over() -> None:
    farm = Farm(client=client_config(password="wrong"))
    connect(farm, T0)
    _, client_events, server_events = connect(farm, T0)
    assert rejected(server_events) is Reject.WRONG_PASSWORD
    assert client_events == [Failed(Failure.AUTH_FAILED, "credentials refused")]
    assert not connect(farm, T0)[0]


def test_unknown_user_fails() -> None:
    farm = Farm(client=client_config(username="mallory"))
    connect(farm, T0)
    _, client_events, server_events = connect(farm, T0)
    assert rejected(server_events) is Reject.UNKNOWN_USER
    assert client_events == [Failed(Failure.AUTH_FAILED, "credentials refused")]


@pytest.mark.parametrize("changes", [{"cluster": "other"}, {"version": "2"}])
def test_wrong_cluster_or_version(changes: dict[str, object]) -> None:
    farm = Farm(client=client_config(**changes))
    _, client_events, server_events = connect(farm, T0)
    assert rejected(server_events) is Reject.WRONG_PATH
    assert client_events == [Failed(Failure.NOT_FOUND)]


def test_custom_realm_and_cluster() -> None:
    farm = Farm(
        server=server_config(cluster="alpha", realm="Alpha nodes"), client=client_config(cluster="alpha")
    )
    connect(farm, T0)
    assert isinstance(connect(farm, T0)[2][-1], Authenticated)
