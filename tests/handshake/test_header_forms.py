"""The headers as they go on the wire, byte for byte (RFC 7616's form: the quoted parameters quoted,
lower-case names, in the order peers have seen from JRaft's bridge), nonces that need no quoting or
padding, and a path segment of '.' refused as a cluster name."""

from __future__ import annotations

import re

import pytest

from garlicfarm.handshake import (
    Algorithm,
    Challenge,
    ConfigError,
    DigestCredentials,
    NonceRegistry,
)
from tests.handshake.helpers import client_config, rng


def test_credentials_are_written_in_rfc_7616s_form() -> None:
    credentials = DigestCredentials(
        username="alice",
        realm="farm",
        nonce="n1",
        uri="/GarlicFarm/farm/1/websocket",
        algorithm=Algorithm.SHA256,
        nc="00000001",
        cnonce="c1",
        response="abc123",
        opaque="op",
    )
    assert credentials.to_header() == (
        'Digest username="alice", realm="farm", uri="/GarlicFarm/farm/1/websocket", '
        'algorithm=SHA-256, nonce="n1", nc=00000001, cnonce="c1", qop=auth, response="abc123", '
        'opaque="op"'
    )


def test_a_challenge_is_written_in_rfc_7616s_form() -> None:
    challenge = Challenge("farm", "n1", Algorithm.MD5, "op", stale=True)
    assert (
        challenge.to_header()
        == 'Digest realm="farm", qop="auth", algorithm=MD5, nonce="n1", opaque="op", stale=true'
    )


def test_nonces_need_neither_quoting_nor_padding() -> None:
    registry = NonceRegistry(rng(5))
    for now in (0.0, 1.5, 1_700_000_000.25):
        nonce = registry.issue(now)
        assert re.fullmatch(r"[A-Za-z0-9_-]+", nonce), nonce
        assert registry.issued_at(nonce) == now
    assert re.fullmatch(r"[A-Za-z0-9_-]+", registry.opaque)


@pytest.mark.parametrize("segment", [".", ".."])
def test_a_dot_segment_is_no_cluster_name(segment: str) -> None:
    with pytest.raises(ConfigError, match="must be letters, digits or '._~-'"):
        client_config(cluster=segment)
