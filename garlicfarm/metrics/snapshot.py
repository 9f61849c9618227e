"""What the metrics and the health checks know of a node: read from the live node at scrape time.

:func:`read_node` reuses the node's status (what ``garlicfarm status`` and the console show) and adds
the counters kept for monitoring. Reading is cheap (a few ``stat`` calls, no log reads, no timers),
and everything in a :class:`NodeSnapshot` is a plain value, so the collector and the health checks
are pure functions of it. Every keyed field is keyed by configuration (members, a fixed set of
reasons), never by what the network sent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from garlicfarm.service import GarlicFarmService


@attrs.frozen
class Histogram:
    #: (upper bound in seconds, observations up to it), cumulative
    buckets: tuple[tuple[float, int], ...]
    count: int
    sum: float


@attrs.frozen
class NodeSnapshot:
    server_id: int
    cluster: str
    role: str
    term: int
    leader: int | None
    commit_index: int
    applied_index: int
    last_log_index: int
    snapshot_index: int
    #: voting members' ids, from the committed configuration
    members: tuple[int, ...] = ()
    #: leader only: member id -> entries it is behind this leader's log
    peer_lag: Mapping[int, int] = attrs.field(factory=dict)
    leader_changes: int = 0
    proposals_committed: int = 0
    proposals_failed: int = 0
    proposals_refused: int = 0
    proposals_pending: int = 0
    sync_durations: Histogram | None = None
    log_size_bytes: int | None = None
    #: refusal reason (a fixed set) -> inbound connections refused for it
    refusals: Mapping[str, int] = attrs.field(factory=dict)
    #: this node is the farm's chosen Meta LS2 publisher
    publisher: bool = False
    #: a signing publisher's state ("idle", "connecting", "published", ...); None: not signing here
    metals_state: str | None = None
    metals_expires_in: float | None = None
    offline_expires_in: float | None = None
    #: member id -> seconds since the date of its latest status report in the log
    report_ages: Mapping[int, float] = attrs.field(factory=dict)
    report_interval: float = 60.0
    reports_committed: int = 0
    report_failures: int = 0
    #: the router is one to ask ([router] kind = "i2pcontrol"), whether it answered, why it did not
    router_configured: bool = False
    router_answered: bool = False
    router_error: str | None = None
    #: why the node stopped (fail-stop), or None while it runs
    stopped: str | None = None
    running: bool = True
    #: a restarted node replaying its log before it acts on the state
    replaying: bool = False
    storage_error: str | None = None
    #: seconds since the last Raft tick (None before the first), and the tick's period
    tick_age: float | None = None
    tick_seconds: float = 0.05
    #: the reactor's clock when this was read
    now: float = 0.0


#: a signing publisher's states (garlicfarm.router.i2cp, .signed); anything else reads as "other"
METALS_STATES = ("idle", "connecting", "published", "failing", "stopped")


def _sync_histogram(node: GarlicFarmService) -> Histogram | None:
    durations = getattr(node.store, "sync_durations", None)
    if durations is None:
        return None
    buckets, count, total = durations.read()
    return Histogram(tuple(buckets), count, total)


def _log_size(path: str) -> int | None:
    """The log file and its write-ahead log, in bytes (None if the file cannot be read)."""
    size = 0
    for name in (path, path + "-wal"):
        try:
            size += os.stat(name).st_size
        except FileNotFoundError:
            continue
        except OSError:
            return None
    return size


def _storage_error(node: GarlicFarmService) -> str | None:
    error: str | None = getattr(node.store, "write_error", None)
    if error is not None:
        return error
    directory = node.config.data_dir
    if not os.access(directory, os.W_OK):
        return f"{directory} is not writable"
    return None


def _metals(node: GarlicFarmService, now: float) -> tuple[str | None, float | None, float | None]:
    metals: Mapping[str, Any] | None = node.app.metals_status()
    if metals is None:
        return None, None, None
    hook: Any = node.app.role.hook
    state = str(hook.status().get("state", "other")) if hasattr(hook, "status") else "other"
    if state not in METALS_STATES:
        state = "other"
    expires = metals.get("expires")
    offline = metals.get("offlineExpires")
    return (
        state,
        float(expires) - now if isinstance(expires, int | float) else None,
        float(offline) - now if isinstance(offline, int | float) else None,
    )


def health_inputs(node: GarlicFarmService) -> dict[str, Any]:
    """What the health checks read beyond the Raft status, for the node's status (``garlicfarm
    health`` judges readiness from it, with no metrics listener): small, plain values."""
    driver, reporter = node.driver, node.app.reporter
    now = node.reactor.seconds()
    return {
        "running": driver.running,
        "replaying": not node.app.role.live,
        "storage_error": _storage_error(node),
        "tick_age_s": None if driver.last_tick is None else round(now - driver.last_tick, 3),
        "tick_s": driver.tick_seconds,
        "router_configured": node.app_config.router_kind == "i2pcontrol",
        "router_answered": reporter.router_answered,
        "router_error": reporter.router_error,
    }


def from_status(status: Mapping[str, Any]) -> NodeSnapshot:
    """What the health checks need, from a node's status JSON (``GarlicFarmService.status``, as
    ``garlicfarm status`` prints it); raises KeyError or TypeError when a field is missing or wrong."""
    health: Mapping[str, Any] = status["health"]
    stopped = status.get("stopped_by")
    return NodeSnapshot(
        server_id=int(status["id"]),
        cluster=str(status.get("cluster", "")),
        role=str(status["role"]),
        term=int(status["term"]),
        leader=None if status["leader"] is None else int(status["leader"]),
        commit_index=int(status["commit_index"]),
        applied_index=int(status["applied_index"]),
        last_log_index=int(status["last_log_index"]),
        snapshot_index=int(status.get("snapshot_index", 0)),
        members=tuple(int(m["id"]) for m in status["members"]),
        stopped=None if stopped is None else str(stopped),
        running=bool(health["running"]),
        replaying=bool(health["replaying"]),
        storage_error=health["storage_error"],
        tick_age=health["tick_age_s"],
        tick_seconds=float(health["tick_s"]),
        router_configured=bool(health["router_configured"]),
        router_answered=bool(health["router_answered"]),
        router_error=health["router_error"],
    )


def read_node(node: GarlicFarmService) -> NodeSnapshot:
    status = node.status()
    driver, state, reporter = node.driver, node.state, node.app.reporter
    now = node.reactor.seconds()
    members = tuple(int(m["id"]) for m in status["members"])
    last = int(status["last_log_index"])
    peer_lag: dict[int, int] = {}
    if status["role"] == "leader":
        for peer, progress in status["progress"].items():
            if int(peer) in members:
                peer_lag[int(peer)] = max(0, last - int(progress["match"]))
    ages = {m: now - state.latest[m].date / 1000 for m in members if m in state.latest}
    metals_state, metals_left, offline_left = _metals(node, now)
    stopped = status.get("stopped_by")
    return NodeSnapshot(
        server_id=int(status["id"]),
        cluster=node.config.cluster,
        role=str(status["role"]),
        term=int(status["term"]),
        leader=status["leader"],
        commit_index=int(status["commit_index"]),
        applied_index=int(status["applied_index"]),
        last_log_index=last,
        snapshot_index=int(status["snapshot_index"]),
        members=members,
        peer_lag=peer_lag,
        leader_changes=driver.leader_changes,
        proposals_committed=driver.proposals.committed,
        proposals_failed=driver.proposals.failed,
        proposals_refused=driver.proposals.refused,
        proposals_pending=driver.waiting(),
        sync_durations=_sync_histogram(node),
        log_size_bytes=_log_size(node.store.path),
        refusals=node.inbound.refusals.read(),
        publisher=bool(status["app"]["publishing"]),
        metals_state=metals_state,
        metals_expires_in=metals_left,
        offline_expires_in=offline_left,
        report_ages=ages,
        report_interval=reporter.interval,
        reports_committed=reporter.submitted,
        report_failures=reporter.failures,
        router_configured=node.app_config.router_kind == "i2pcontrol",
        router_answered=reporter.router_answered,
        router_error=reporter.router_error,
        stopped=None if stopped is None else str(stopped),
        running=driver.running,
        replaying=not node.app.role.live,
        storage_error=_storage_error(node),
        tick_age=None if driver.last_tick is None else now - driver.last_tick,
        tick_seconds=driver.tick_seconds,
        now=now,
    )
