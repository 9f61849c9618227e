"""Every member commits its status on an interval; the chosen member publishes the Meta LS2.

``StatusReporter`` asks the router, builds a schema-v1 record and submits it through the leader
(itself, or the leader over the peer link, following one redirect). One submission at a time: when
the farm has no leader the next attempt waits with exponential backoff instead of piling up.

``MetaLSRole`` watches the replicated state: when this node becomes the publisher it hands the Meta
LS2 contents to the publisher hook, again whenever they change, and stops when it loses the role.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure

from garlicfarm.app.schema import SCHEMA_VERSION, LogMark
from garlicfarm.app.scoring import Lease
from garlicfarm.raft.driver import RaftDriver
from garlicfarm.router.interface import LeafStatus, MetaLease, MetaLSPublisher, RouterAPI, RouterStatus
from garlicfarm.wire import NO_LEADER, Application, ClientRequest, LogEntry, Response


def status_record(
    cluster: str,
    server_id: int,
    date_ms: int,
    router: RouterStatus,
    leaves: list[LeafStatus],
    publish_config: str = "auto",
    publishing: bool = False,
    master: str | None = None,
    last_published_ms: int = 0,
    log_mark: LogMark | None = None,
) -> dict[str, Any]:
    """A schema-v1 status record (docs/protocol.md, "Application layer")."""
    record = {
        "version": SCHEMA_VERSION,
        "cluster": cluster,
        "date": date_ms,
        "id": server_id,
        "config": {},
        "meta": {
            "destination": master,
            "lastPublishedTime": last_published_ms,
            "publishConfig": publish_config,
            "publishing": publishing,
        },
        "router": {
            "uptime": router.uptime_ms,
            "netStatus": router.net_status,
            "jobLag": router.job_lag_ms,
            "exploratoryTunnels": router.exploratory_tunnels,
            "participatingTunnels": router.participating_tunnels,
            "bandwidthConfigured": router.bandwidth_configured,
            "bandwidthCurrent": router.bandwidth_current,
            "lastPublishedRI": router.last_published_ri,
        },
        "destinations": [
            {
                "destination": leaf.destination,
                "uptime": leaf.uptime_ms,
                "tunnelsConfigured": leaf.tunnels_configured,
                "tunnelsCurrent": leaf.tunnels_current,
                "bandwidthConfigured": leaf.bandwidth_configured,
                "bandwidthCurrent": leaf.bandwidth_current,
                "connectionsConfigured": leaf.connections_configured,
                "connectionsCurrent": leaf.connections_current,
                "blocklist": list(leaf.blocklist),
            }
            for leaf in leaves
        ],
    }
    if log_mark is not None:
        record["log"] = {"index": log_mark.index, "digest": log_mark.digest}
    return record


#: the first retry of a failed status report, in seconds (doubling up to ``max_backoff``)
RETRY_FIRST = 0.5
#: failed reports in a row logged at debug before they are worth an info line (about 15 s)
QUIET_FAILURES = 4


class StatusReporter:
    log = Logger()

    def __init__(
        self,
        reactor: IReactorTime,
        driver: RaftDriver,
        send_to_leader: Callable[[int, ClientRequest], Deferred[Response]],
        router: RouterAPI,
        cluster: str,
        interval: float = 60.0,
        wall_clock_ms: Callable[[], int] | None = None,
        publish_config: str = "auto",
        master: str | None = None,
        max_backoff: float = 15.0,
        rng: random.Random | None = None,
        log_mark: Callable[[], LogMark | None] | None = None,
    ) -> None:
        self.reactor = reactor
        self.driver = driver
        self._send_to_leader = send_to_leader
        self.router = router
        self.cluster = cluster
        self.interval = interval
        self._clock = wall_clock_ms or (lambda: int(reactor.seconds() * 1000))
        self.publish_config = publish_config
        self.master = master
        self.publishing = False
        self.last_published_ms = 0
        #: this member's digest of its applied log, for the cross-member consistency check
        self.log_mark = log_mark or (lambda: None)
        #: failed reports are retried after 0.5 s, 1 s, 2 s ... (jittered), at most this long (and
        #: at most the interval): a fresh or restarted member must not wait minutes to be seen
        self.max_backoff = max_backoff
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not secrecy
        self._delay = RETRY_FIRST
        self._again = False
        self._call: IDelayedCall | None = None
        self._busy = False
        self.submitted = 0
        self.failures = 0
        self.failures_in_a_row = 0
        #: whether the router has answered a report's questions yet, and why the last ones failed
        self.router_answered = False
        self.router_error: str | None = None
        self.running = False

    def start(self, first_delay: float = 0.0) -> None:
        """Report at once (a report before a leader is known fails and is retried quickly)."""
        self.running = True
        self._cancel_call()  # started twice: one chain of reports, not two
        self._call = self.reactor.callLater(first_delay, self._tick)

    def leader_changed(self) -> None:
        """A new leader: report now, so the farm sees this member without waiting an interval."""
        if not self.running:
            return
        if self._busy:
            self._again = True  # right after the report in flight
            return
        self._cancel_call()
        self._call = self.reactor.callLater(0, self._tick)

    def stop(self) -> None:
        self.running = False
        self._cancel_call()

    def _cancel_call(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()

    def _tick(self) -> None:
        if not self.running:
            return
        if self._busy:
            # Started again while a report is in flight: its end schedules the next one (right
            # after it), so that one chain of reports runs, not two.
            self._again = True
            return
        self._busy = True
        d = Deferred.fromCoroutine(self.report_once())
        d.addCallbacks(self._succeeded, self._failed)

    def _schedule(self, delay: float) -> None:
        if self.running:
            self._call = self.reactor.callLater(delay, self._tick)

    def _succeeded(self, index: int) -> None:
        self._busy = False
        self.submitted += 1
        self.failures_in_a_row = 0
        self._delay = RETRY_FIRST
        self._schedule(0 if self._take_again() else self.interval)

    def _failed(self, failure: Failure) -> None:
        self._busy = False
        self.failures += 1
        self.failures_in_a_row += 1
        # jittered by 0.5x to 1.5x, but never past the bound: at the bound the jitter only shortens it
        bound = min(self.max_backoff, self.interval)
        delay = min(min(self._delay, bound) * (0.5 + self._rng.random()), bound)
        self._delay = min(self._delay * 2, self.max_backoff)
        # A farm electing its first leader fails a report or two: say so only when it lasts.
        emit = self.log.info if self.failures_in_a_row >= QUIET_FAILURES else self.log.debug
        emit(
            "status report not committed ({why}); next try in {delay:.1f}s",
            why=failure.getErrorMessage(),
            delay=delay,
        )
        self._schedule(0 if self._take_again() else delay)

    def _take_again(self) -> bool:
        again, self._again = self._again, False
        return again

    async def report_once(self) -> int:
        try:
            router = await self.router.router_status()
            leaves = await self.router.leaf_status()
        except Exception as e:
            self.router_error = f"{type(e).__name__}: {e}"[:200]
            raise
        self.router_error = None
        self.router_answered = True
        record = status_record(
            self.cluster,
            self.driver.core.id,
            self._clock(),
            router,
            leaves,
            self.publish_config,
            self.publishing,
            self.master,
            self.last_published_ms,
            self.log_mark(),
        )
        data = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()
        return await self.submit(data)

    async def submit(self, data: bytes) -> int:
        """Commit ``data`` through whoever leads: ourselves, or the leader over the peer link."""
        core = self.driver.core
        if core.is_leader():
            return await self.driver.submit(data)
        request = ClientRequest(entries=(LogEntry(0, Application(data)),))
        for _hop in range(2):
            leader = core.leader_id
            if leader is None:
                raise NoLeader("no leader known")
            response = await self._send_to_leader(leader, request)
            if response.accepted:
                return response.next_index - 1
            if response.destination in (NO_LEADER, leader):
                break
        raise NoLeader("the leader did not take the report")


class NoLeader(Exception):
    """The farm has no reachable leader right now."""


class MetaLSRole:
    """Publishes the Meta LS2 while this node is the chosen publisher."""

    log = Logger()

    def __init__(
        self, server_id: int, master: str, hook: MetaLSPublisher, reporter: StatusReporter | None = None
    ):
        self.server_id = server_id
        self.master = master
        self.hook = hook
        self.reporter = reporter
        self.active = False
        self.published: tuple[Lease, ...] | None = None
        #: False while a restarting node replays its log: decisions from the past are not acted on
        #: (a hook fired for each would publish stale contents again and again); ``go_live`` then acts
        #: once on the state as it stands
        self.live = True
        self._latest: tuple[int | None, tuple[Lease, ...]] | None = None

    def go_live(self) -> None:
        if self.live:
            return
        self.live = True
        if self._latest is not None:
            self.changed(*self._latest)

    def changed(self, publisher: int | None, leases: tuple[Lease, ...]) -> None:
        if not self.live:
            self._latest = (publisher, leases)
            return
        if publisher == self.server_id:
            if not self.active or leases != self.published:
                self._publish(leases)
        elif self.active:
            self.active = False
            self.published = None
            if self.reporter is not None:
                self.reporter.publishing = False
            self.log.info("no longer the Meta LS publisher")
            self.hook.stop(self.master).addErrback(self._hook_failed, "stop")

    def republish(self) -> Deferred[None] | None:
        """Publish again now (the admin console's "force publishing"); None if not the publisher."""
        if not self.active or self.published is None:
            return None
        return self._publish(self.published)

    def _publish(self, leases: tuple[Lease, ...]) -> Deferred[None]:
        self.active = True
        self.published = leases
        if self.reporter is not None:
            self.reporter.publishing = True
        self.log.info("publishing the Meta LS with {n} leases", n=len(leases))
        contents = tuple(MetaLease(lease.destination, lease.weight) for lease in leases)
        d = self.hook.publish(self.master, contents)
        d.addCallback(self._published)
        d.addErrback(self._hook_failed, "publish")
        return d

    def _published(self, _: object) -> None:
        if self.reporter is not None:
            self.reporter.last_published_ms = int(self.reporter.reactor.seconds() * 1000)

    def _hook_failed(self, failure: Failure, what: str) -> None:
        self.log.failure("the Meta LS publisher hook failed to {what}", failure, what=what)
