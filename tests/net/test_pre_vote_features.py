"""Negotiating pre-vote in the handshake (issue 15): a ``GarlicFarm-Features`` header JRaft never sends,
the [raft] pre_vote setting, and the transport that never lets a pre-vote reach a peer without it."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from twisted.internet.defer import succeed
from twisted.internet.task import Clock

from garlicfarm.config import ConfigError, parse_config
from garlicfarm.handshake import (
    FEATURES_HEADER,
    OUR_FEATURES,
    PRE_VOTE,
    ChallengeCache,
    ClientHandshake,
    Upgraded,
    parse_features,
)
from garlicfarm.net.connection import ClientConnection, NotConnected
from garlicfarm.net.peers import PeerConnections, _Peer, is_pre_vote
from garlicfarm.raft.types import PRE_VOTE_MARKER
from garlicfarm.wire import RequestVoteRequest
from tests.handshake.helpers import client_config, rng

BASE_TOML = """
[node]
id = 2
endpoint = "tcp://127.0.0.1:28002"
listen = "tcp:28002:interface=127.0.0.1"
data_dir = "node-2"
[auth]
username = "farm"
password_file = "credentials"
"""


def test_parse_features() -> None:
    assert parse_features(None) == frozenset()
    assert parse_features("") == frozenset()
    assert parse_features(" Pre-Vote , ,other") == {"pre-vote", "other"}


def test_client_offers_its_features_in_the_request() -> None:
    request = ClientHandshake(client_config(features=OUR_FEATURES), ChallengeCache(), 0.0, rng(0)).initiate()
    assert f"{FEATURES_HEADER}: pre-vote, commit-ack, transfer\r\n".encode() in request
    plain = ClientHandshake(client_config(), ChallengeCache(), 0.0, rng(0)).initiate()
    assert FEATURES_HEADER.encode() not in plain  # what JRaft (or an older client) sends


def _vote(pre: bool) -> RequestVoteRequest:
    marker = PRE_VOTE_MARKER if pre else 0
    return RequestVoteRequest(
        source=1, destination=2, term=3, last_log_term=1, last_log_index=1, commit_index=marker
    )


class _FakeConnection:
    def __init__(self, features: frozenset[str]) -> None:
        self.features = features
        self.sent: list[Any] = []

    def request(self, message: Any) -> Any:
        self.sent.append(message)
        return succeed(None)


@pytest.mark.parametrize(("features", "delivered"), [(frozenset(), False), (frozenset({PRE_VOTE}), True)])
def test_pre_vote_never_reaches_a_peer_without_the_feature(features: frozenset[str], delivered: bool) -> None:
    peers = PeerConnections(Clock(), lambda _u: None, lambda _u: None)  # type: ignore[arg-type,return-value]
    peer = _Peer("tcp://127.0.0.1:28001", None)  # type: ignore[arg-type]
    connection = _FakeConnection(features)
    peer.connection = connection  # type: ignore[assignment]
    peers._peers[2] = peer
    failures: list[Any] = []
    d = peers.send(2, _vote(pre=True), "tcp://127.0.0.1:28001")
    d.addErrback(failures.append)
    assert (connection.sent != [], bool(failures)) == (delivered, not delivered)
    if failures:
        assert failures[0].check(NotConnected)
    peers.send(2, _vote(pre=False), "tcp://127.0.0.1:28001")  # a real vote always goes
    assert connection.sent[-1] == _vote(pre=False)
    assert is_pre_vote(_vote(True)) and not is_pre_vote(_vote(False))


def test_client_connection_reads_features_from_the_101() -> None:
    connection = ClientConnection(Clock(), client_config(), ChallengeCache(), None)  # type: ignore[arg-type]
    assert connection.features == frozenset()
    connection.upgraded = Upgraded((("garlicfarm-features", "pre-vote"),), b"")
    assert connection.features == {PRE_VOTE}
    connection.upgraded = Upgraded((("garlicfarm-leader", "1"),), b"")  # JRaft's bridge
    assert connection.features == frozenset()


@pytest.mark.parametrize(
    ("setting", "pre_vote", "negotiated"),
    [(None, True, True), ('"auto"', True, True), ('"on"', True, False), ('"off"', False, False)],
)
def test_raft_pre_vote_setting(setting: str | None, pre_vote: bool, negotiated: bool, tmp_path: Path) -> None:
    extra = "" if setting is None else f"[raft]\npre_vote = {setting}\n"
    config = parse_config(tomllib.loads(BASE_TOML + extra), tmp_path / "n.toml")
    assert (config.raft.pre_vote, config.raft.negotiated_pre_vote) == (pre_vote, negotiated)


def test_raft_pre_vote_setting_refuses_junk(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match='pre_vote must be "auto", "on" or "off"'):
        parse_config(tomllib.loads(BASE_TOML + '[raft]\npre_vote = "yes"\n'), tmp_path / "n.toml")
