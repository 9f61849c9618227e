"""The node's metrics in Prometheus' terms, made from a :class:`NodeSnapshot` at each scrape.

Names follow Prometheus' rules and etcd's: the ``garlicfarm_`` prefix, base units (seconds, bytes),
``_total`` for counters. Labels take values from the configuration only (member ids, the cluster's
name, a fixed set of reasons and states): a flood from the network moves values, never the number
of series. docs/operations.md ("Monitoring") lists every metric.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import CollectorRegistry
from twisted.logger import Logger

from garlicfarm.metrics.snapshot import METALS_STATES, NodeSnapshot

PREFIX = "garlicfarm_"


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(PREFIX + name, doc, value=value)


class NodeCollector:
    """A prometheus_client collector (``collect``) over ``read``, which snapshots the node."""

    log = Logger()

    def __init__(self, read: Callable[[], NodeSnapshot]) -> None:
        self._read = read
        self.read_errors = 0

    def collect(self) -> Iterator[Metric]:
        try:
            snapshot = self._read()
            metrics = list(node_metrics(snapshot))
        except Exception:
            # A bug in reading the node must not fail the scrape (nor reach the reactor): the scrape
            # shows the error count, the log the traceback.
            self.read_errors += 1
            self.log.failure("metrics: reading the node's state failed")
            metrics = []
        yield from metrics
        yield _counter(
            "metrics_read_errors_total", "Scrapes whose reading of the node failed.", self.read_errors
        )


def node_registry(read: Callable[[], NodeSnapshot]) -> CollectorRegistry:
    """A registry of the node's own (never the process-global one: one process may run many nodes)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(read))
    return registry


def node_metrics(s: NodeSnapshot) -> Iterator[Metric]:
    info = GaugeMetricFamily(
        PREFIX + "node_info", "This node's server id and farm.", labels=["server_id", "cluster"]
    )
    info.add_metric([str(s.server_id), s.cluster], 1)
    yield info
    yield from _raft(s)
    yield from _proposals(s)
    yield from _storage(s)
    yield from _network(s)
    yield from _application(s)


def _raft(s: NodeSnapshot) -> Iterator[Metric]:
    yield _gauge("has_leader", "1 if this node knows a leader for its term.", int(s.leader is not None))
    yield _gauge("is_leader", "1 if this node is the leader.", int(s.role == "leader"))
    yield _counter("leader_changes_seen_total", "New leaders this node has seen.", s.leader_changes)
    yield _gauge("term", "This node's current Raft term.", s.term)
    yield _gauge("commit_index", "The highest log index this node knows committed.", s.commit_index)
    yield _gauge("applied_index", "The highest log index applied to the state machine.", s.applied_index)
    yield _gauge("last_log_index", "The index of the last entry in this node's log.", s.last_log_index)
    yield _gauge("snapshot_index", "The last log index the latest snapshot covers.", s.snapshot_index)
    yield _gauge("members", "Voting members in the committed configuration.", len(s.members))
    yield _gauge(
        "stopped",
        "1 if the node stopped on a failure (storage, a bug) and serves nothing.",
        int(s.stopped is not None),
    )
    lag = GaugeMetricFamily(
        PREFIX + "peer_match_lag_entries",
        "Leader only: log entries each member's log is known to be behind the leader's.",
        labels=["server_id"],
    )
    for peer, behind in sorted(s.peer_lag.items()):
        lag.add_metric([str(peer)], behind)
    yield lag


def _proposals(s: NodeSnapshot) -> Iterator[Metric]:
    yield _counter(
        "proposals_committed_total", "Proposals this node led that committed.", s.proposals_committed
    )
    yield _counter(
        "proposals_failed_total",
        "Proposals this node led that did not commit (leadership lost, timeout, stop).",
        s.proposals_failed,
    )
    yield _counter(
        "proposals_refused_total",
        "Client entries the leader refused before appending (the state machine would reject them).",
        s.proposals_refused,
    )
    yield _gauge("proposals_pending", "Requests waiting for their commit decision.", s.proposals_pending)


def _storage(s: NodeSnapshot) -> Iterator[Metric]:
    yield _gauge(
        "log_entries", "Entries in the log since the latest snapshot.", s.last_log_index - s.snapshot_index
    )
    if s.log_size_bytes is not None:
        yield _gauge(
            "log_size_bytes", "Size of the log store's files (with its write-ahead log).", s.log_size_bytes
        )
    if s.sync_durations is not None:
        h = s.sync_durations
        buckets: list[tuple[str, float]] = [(repr(bound), count) for bound, count in h.buckets]
        buckets.append(("+Inf", h.count))
        yield HistogramMetricFamily(
            PREFIX + "log_sync_duration_seconds",
            "Seconds each synced write of the log store took (its transaction and fsync).",
            buckets=buckets,
            sum_value=h.sum,
        )


def _network(s: NodeSnapshot) -> Iterator[Metric]:
    refusals = CounterMetricFamily(
        PREFIX + "connection_refusals",
        "Inbound connections refused or dropped, by reason (a fixed set).",
        labels=["reason"],
    )
    for reason, count in sorted(s.refusals.items()):
        refusals.add_metric([reason], count)
    yield refusals


def _application(s: NodeSnapshot) -> Iterator[Metric]:
    yield _gauge(
        "metals_publisher", "1 if this node is the farm's chosen Meta LS2 publisher.", int(s.publisher)
    )
    if s.metals_state is not None:
        state = GaugeMetricFamily(
            PREFIX + "metals_state",
            "The signing Meta LS2 publisher's state (1 for the current one).",
            labels=["state"],
        )
        for name in (*METALS_STATES, "other"):
            state.add_metric([name], int(name == s.metals_state))
        yield state
    if s.metals_expires_in is not None:
        yield _gauge(
            "metals_expiry_seconds",
            "Seconds until the Meta LS2 this node published expires.",
            s.metals_expires_in,
        )
    if s.offline_expires_in is not None:
        yield _gauge(
            "metals_offline_signature_expiry_seconds",
            "Seconds until the offline signature of this member's Meta LS2 key expires.",
            s.offline_expires_in,
        )
    ages = GaugeMetricFamily(
        PREFIX + "member_status_age_seconds",
        "Seconds since the date of each member's latest status report in the log (by this node's clock).",
        labels=["member"],
    )
    for member, age in sorted(s.report_ages.items()):
        ages.add_metric([str(member)], age)
    yield ages
    yield _gauge(
        "status_report_interval_seconds",
        "The members' status report interval ([app] interval).",
        s.report_interval,
    )
    yield _counter(
        "status_reports_committed_total", "This node's status reports that committed.", s.reports_committed
    )
    yield _counter(
        "status_report_failures_total", "This node's status reports that failed.", s.report_failures
    )
    if s.router_configured:
        yield _gauge(
            "router_up",
            "1 if the router answered this node's last status questions (I2PControl).",
            int(s.router_answered and s.router_error is None),
        )
