"""The collector: names, types and values from a NodeSnapshot, in Prometheus' text format."""

from __future__ import annotations

import re

import attrs
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from garlicfarm.metrics.collector import node_registry
from garlicfarm.metrics.snapshot import Histogram, NodeSnapshot

LEADER = NodeSnapshot(
    server_id=1,
    cluster="farm",
    role="leader",
    term=7,
    leader=1,
    commit_index=120,
    applied_index=118,
    last_log_index=125,
    snapshot_index=100,
    members=(1, 2, 3),
    peer_lag={2: 0, 3: 25},
    leader_changes=3,
    proposals_committed=40,
    proposals_failed=2,
    proposals_refused=1,
    proposals_pending=4,
    sync_durations=Histogram(((0.001, 5), (0.002, 9), (0.004, 10)), count=11, sum=0.05),
    log_size_bytes=65536,
    refusals={"handshake": 4, "tls": 0},
    publisher=True,
    metals_state="published",
    metals_expires_in=1800.0,
    offline_expires_in=86400.0 * 30,
    report_ages={1: 2.5, 2: 61.0},
    report_interval=60.0,
    reports_committed=12,
    report_failures=1,
    router_configured=True,
    router_answered=True,
)


def scrape(snapshot: NodeSnapshot) -> dict[str, tuple[str, list[Sample]]]:
    text = generate_latest(node_registry(lambda: snapshot)).decode()
    return {f.name: (f.type, f.samples) for f in text_string_to_metric_families(text)}


def value(families: dict[str, tuple[str, list[Sample]]], sample: str, **labels: str) -> float:
    for _type, samples in families.values():
        for s in samples:
            if s.name == sample and s.labels == labels:
                return s.value
    raise AssertionError(f"no sample {sample} {labels}")


def test_names_follow_prometheus_rules() -> None:
    families = scrape(LEADER)
    for name, (kind, samples) in families.items():
        assert name.startswith("garlicfarm_"), name
        assert re.fullmatch(r"[a-z_]+", name), name
        if kind == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in samples), name
        else:
            assert not name.endswith("_total"), name
        assert not re.search(r"_(milliseconds|ms|kilobytes|kb)\b", name), name


def test_types() -> None:
    families = scrape(LEADER)
    kinds = {name: kind for name, (kind, _) in families.items()}
    assert kinds["garlicfarm_has_leader"] == "gauge"
    assert kinds["garlicfarm_is_leader"] == "gauge"
    assert kinds["garlicfarm_leader_changes_seen"] == "counter"
    assert kinds["garlicfarm_proposals_committed"] == "counter"
    assert kinds["garlicfarm_proposals_failed"] == "counter"
    assert kinds["garlicfarm_proposals_pending"] == "gauge"
    assert kinds["garlicfarm_log_sync_duration_seconds"] == "histogram"
    assert kinds["garlicfarm_connection_refusals"] == "counter"
    assert kinds["garlicfarm_member_status_age_seconds"] == "gauge"


def test_values_of_a_leader() -> None:
    f = scrape(LEADER)
    assert value(f, "garlicfarm_has_leader") == 1
    assert value(f, "garlicfarm_is_leader") == 1
    assert value(f, "garlicfarm_leader_changes_seen_total") == 3
    assert value(f, "garlicfarm_term") == 7
    assert value(f, "garlicfarm_commit_index") == 120
    assert value(f, "garlicfarm_applied_index") == 118
    assert value(f, "garlicfarm_log_entries") == 25
    assert value(f, "garlicfarm_log_size_bytes") == 65536
    assert value(f, "garlicfarm_members") == 3
    assert value(f, "garlicfarm_proposals_committed_total") == 40
    assert value(f, "garlicfarm_proposals_failed_total") == 2
    assert value(f, "garlicfarm_proposals_refused_total") == 1
    assert value(f, "garlicfarm_proposals_pending") == 4
    assert value(f, "garlicfarm_peer_match_lag_entries", server_id="3") == 25
    assert value(f, "garlicfarm_peer_match_lag_entries", server_id="2") == 0
    assert value(f, "garlicfarm_connection_refusals_total", reason="handshake") == 4
    assert value(f, "garlicfarm_metals_publisher") == 1
    assert value(f, "garlicfarm_metals_state", state="published") == 1
    assert value(f, "garlicfarm_metals_state", state="failing") == 0
    assert value(f, "garlicfarm_metals_expiry_seconds") == 1800
    assert value(f, "garlicfarm_metals_offline_signature_expiry_seconds") == 86400 * 30
    assert value(f, "garlicfarm_member_status_age_seconds", member="2") == 61
    assert value(f, "garlicfarm_status_report_interval_seconds") == 60
    assert value(f, "garlicfarm_router_up") == 1
    assert value(f, "garlicfarm_node_info", server_id="1", cluster="farm") == 1


def test_the_sync_histogram_is_cumulative_with_inf() -> None:
    f = scrape(LEADER)
    assert value(f, "garlicfarm_log_sync_duration_seconds_bucket", le="0.001") == 5
    assert value(f, "garlicfarm_log_sync_duration_seconds_bucket", le="0.004") == 10
    assert value(f, "garlicfarm_log_sync_duration_seconds_bucket", le="+Inf") == 11
    assert value(f, "garlicfarm_log_sync_duration_seconds_count") == 11
    assert value(f, "garlicfarm_log_sync_duration_seconds_sum") == 0.05


def test_a_follower_without_leader_or_signing_publisher() -> None:
    follower = attrs.evolve(
        LEADER,
        role="candidate",
        leader=None,
        peer_lag={},
        publisher=False,
        metals_state=None,
        metals_expires_in=None,
        offline_expires_in=None,
        router_configured=False,
        sync_durations=None,
        log_size_bytes=None,
    )
    f = scrape(follower)
    assert value(f, "garlicfarm_has_leader") == 0
    assert value(f, "garlicfarm_is_leader") == 0
    assert not f["garlicfarm_peer_match_lag_entries"][1]  # a follower knows no one's progress
    for absent in (
        "garlicfarm_metals_state",
        "garlicfarm_metals_expiry_seconds",
        "garlicfarm_metals_offline_signature_expiry_seconds",
        "garlicfarm_router_up",
        "garlicfarm_log_sync_duration_seconds",
        "garlicfarm_log_size_bytes",
    ):
        assert absent not in f


def test_a_failing_read_is_counted_not_raised() -> None:
    def broken() -> NodeSnapshot:
        raise RuntimeError("a bug")

    registry = node_registry(broken)
    for expected in (1, 2):
        text = generate_latest(registry).decode()
        assert f"garlicfarm_metrics_read_errors_total {expected}.0" in text
        assert "garlicfarm_has_leader" not in text


def test_each_registry_is_the_nodes_own() -> None:
    """Two nodes in one process: each registry shows its own node only (not the global registry)."""
    other = attrs.evolve(LEADER, server_id=2, term=9)
    assert value(scrape(LEADER), "garlicfarm_term") == 7
    assert value(scrape(other), "garlicfarm_term") == 9
    text = generate_latest(node_registry(lambda: LEADER)).decode()
    assert "python_gc" not in text and "process_cpu" not in text
