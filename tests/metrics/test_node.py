"""The endpoints of a real node (a single-node farm on a MemoryReactorClock), through twisted.web's
resource tree: what they read of the node, Basic auth, and a flood of refused connections that moves
counts but never the number of series."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet.address import IPv4Address
from twisted.internet.testing import MemoryReactorClock, StringTransport

from garlicfarm.config import ConfigError
from garlicfarm.net.connection import ServerConnection
from garlicfarm.net.refusals import Refusal
from tests.metrics.nodes import basic, get, make_node, metrics_of


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_the_snapshot_reads_the_node(tmp_path: Path) -> None:
    clock = MemoryReactorClock()
    node = make_node(tmp_path, clock)
    s = metrics_of(node).snapshot()
    assert (s.server_id, s.role, s.leader, s.members) == (1, "leader", 1, (1,))
    assert s.commit_index >= 2 and s.applied_index == s.commit_index
    assert s.leader_changes == 1
    assert s.proposals_committed >= 1  # the first status report, through this leader's driver
    assert s.sync_durations is not None and s.sync_durations.count >= 1
    assert s.log_size_bytes is not None and s.log_size_bytes > 0
    assert set(s.refusals) == {str(r) for r in Refusal} and not any(s.refusals.values())
    assert set(s.report_ages) == {1}
    assert s.peer_lag == {}  # no other member
    assert not s.router_configured and s.storage_error is None and s.stopped is None


def test_endpoints(tmp_path: Path) -> None:
    clock = MemoryReactorClock()
    node = make_node(tmp_path, clock)
    root = metrics_of(node).resource
    answer = get(root, "/metrics")
    assert answer.code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    values = samples(answer.text)
    assert values["garlicfarm_has_leader", ()] == 1
    assert values["garlicfarm_is_leader", ()] == 1
    assert values["garlicfarm_leader_changes_seen_total", ()] == 1
    openmetrics = get(root, "/metrics", {"Accept": "application/openmetrics-text;version=1.0.0"})
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
    assert openmetrics.text.endswith("# EOF\n")
    assert get(root, "/livez").text == "ok\n"
    ready = get(root, "/readyz?verbose")
    assert ready.code == 200
    assert ready.text.splitlines()[-1] == "readyz check passed"
    assert "[+]leader ok" in ready.text


def test_a_stopped_node_is_not_ready(tmp_path: Path) -> None:
    clock = MemoryReactorClock()
    node = make_node(tmp_path, clock)
    root = metrics_of(node).resource
    node.driver.stop()
    answer = get(root, "/readyz")
    assert answer.code == 503
    assert "[-]running failed: the node is not running" in answer.text


def test_basic_auth(tmp_path: Path) -> None:
    (tmp_path / "metrics-credentials").write_text("scrape-me\n")
    clock = MemoryReactorClock()
    node = make_node(
        tmp_path, clock, {"listen": 9201, "username": "prom", "password_file": "metrics-credentials"}
    )
    root = metrics_of(node).resource
    for headers in ({}, basic("prom", "wrong"), basic("other", "scrape-me"), {"Authorization": "Basic !!"}):
        answer = get(root, "/metrics", headers)
        assert answer.code == 401
        assert answer.headers["www-authenticate"].startswith('Basic realm="garlicfarm metrics"')
        assert b"garlicfarm_" not in answer.body
    assert get(root, "/readyz", {}).code == 401
    assert get(root, "/metrics", basic("prom", "scrape-me")).code == 200
    assert get(root, "/readyz", basic("prom", "scrape-me")).code == 200


def test_a_bad_endpoint_string_fails_the_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[metrics\] listen .* is not a Twisted server endpoint string"):
        make_node(tmp_path, MemoryReactorClock(), {"listen": "tcp:port:interface=127.0.0.1"})


def test_a_flood_of_refused_connections_keeps_the_series_fixed(tmp_path: Path) -> None:
    """Thousands of connections from as many addresses, with odd user names, timeouts and garbage:
    the refusal counters rise, the set of series does not change."""
    clock = MemoryReactorClock()
    node = make_node(tmp_path, clock)
    root = metrics_of(node).resource
    before = samples(get(root, "/metrics").text)
    transports = []
    for i in range(2000):
        address = IPv4Address("TCP", f"198.51.{i // 250}.{i % 250}", 40000 + i)
        server = node.inbound.buildProtocol(address)
        assert isinstance(server, ServerConnection)
        transport = StringTransport(peerAddress=address)
        server.makeConnection(transport)
        transports.append(transport)
        if i % 2:
            user = f"user-{i}"
            server.dataReceived(
                b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: garlicfarm\r\nConnection: Upgrade\r\n"
                + f'Authorization: Digest username="{user}", realm="farm", nonce="{i}", uri="/", '
                f'response="00", algorithm=SHA-256, qop=auth, nc=00000001, cnonce="ab"\r\n\r\n'.encode()
            )
    clock.advance(30)  # the handshake deadlines of those still waiting
    after = samples(get(root, "/metrics").text)
    assert set(after) == set(before)
    refusals = {labels[0][1]: v for (name, labels), v in after.items() if name.endswith("refusals_total")}
    assert refusals["evicted"] > 1000
    assert refusals["handshake"] + refusals["handshake_timeout"] > 0
    assert sum(refusals.values()) >= 1990
