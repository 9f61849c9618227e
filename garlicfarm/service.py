"""GarlicFarmService: one node — its Raft driver, storage, peer links and listening port — as a
Twisted ``MultiService`` that ``twistd garlicfarm`` runs and other Twisted programs can embed."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from twisted.application.internet import StreamServerEndpointService
from twisted.application.service import MultiService
from twisted.internet.defer import Deferred, succeed
from twisted.internet.endpoints import serverFromString
from twisted.internet.interfaces import IReactorCore, IReactorTCP, IReactorTime
from twisted.internet.task import LoopingCall, deferLater
from twisted.logger import Logger
from twisted.python.failure import Failure

from garlicfarm.admin.config import admin_config
from garlicfarm.app.config import app_config
from garlicfarm.app.liveness import Liveness, skew_threshold
from garlicfarm.app.members import member_details
from garlicfarm.app.node import NodeApp
from garlicfarm.app.state import FarmState
from garlicfarm.config import ConfigError, NodeConfig, TLSConfig
from garlicfarm.handshake import (
    FEATURES_HEADER,
    OUR_FEATURES,
    PRE_VOTE,
    TRANSFER,
    ClientConfig,
    NonceRegistry,
    ServerConfig,
    format_features,
)
from garlicfarm.metrics.config import metrics_config
from garlicfarm.metrics.snapshot import health_inputs
from garlicfarm.net.connection import ConnectionLimits, ServerConnection
from garlicfarm.net.endpoints import EndpointRefused, client_endpoint, parse_endpoint, parse_network_endpoint
from garlicfarm.net.identity import certificate_file_name, server_of_name
from garlicfarm.net.inbound import InboundFactory
from garlicfarm.net.peers import PeerConnections
from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import RaftDriver
from garlicfarm.raft.writers import InlineWriter, ThreadWriter, Writer
from garlicfarm.storage.datadir import prepare_data_dir
from garlicfarm.storage.snapshots import FileSnapshotStore, recover
from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire import (
    AddServerRequest,
    AddServerResponse,
    ClientRequest,
    ClusterServer,
    Configuration,
    Limits,
    Request,
    Response,
)
from garlicfarm.wire.types import NO_LEADER

if TYPE_CHECKING:  # imported when configured: the console and /metrics bring twisted.web and more
    from garlicfarm.admin.service import AdminService
    from garlicfarm.metrics.service import MetricsService

LEADER_HEADER = "GarlicFarm-Leader"
#: how often a node checks its peer links (the links to the voters up, none to a server gone)
TEND_SECONDS = 5.0
MEMBERS_HEADER = "GarlicFarm-Members"
STATUS_HEADER = "GarlicFarm-Status"


class GarlicFarmService(MultiService):
    log = Logger()

    def __init__(
        self,
        config: NodeConfig,
        reactor: Any = None,
        limits: ConnectionLimits | None = None,
        exit_on_failure: bool = False,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        #: stop the reactor when the node fails (a process of its own: `garlicfarm run`, twistd);
        #: an embedding program watches ``failure`` / ``driver.on_failure`` instead
        self.exit_on_failure = exit_on_failure
        self.failure: Failure | None = None
        if reactor is None:
            from twisted.internet import reactor as default_reactor  # noqa: PLC0415

            reactor = default_reactor
        self.reactor: IReactorTime & IReactorTCP & IReactorCore = reactor  # type: ignore[valid-type]
        self.config = config
        self.limits = limits or ConnectionLimits(
            handshake_timeout=config.handshake_timeout,
            idle_timeout=config.idle_timeout,
            wire=Limits(max_entries_size=config.max_entries_size),
            # a request waits up to commit_timeout for its answer: the connection waits longer
            response_timeout=max(30.0, config.commit_timeout + 10.0),
        )
        password = config.password()
        self._password = password
        self.app_config = app_config(config)
        self.state = FarmState(config.cluster)
        #: a clock that never jumps, for how long ago members reported (tests pass their Clock's)
        self.monotonic = monotonic
        self.liveness = Liveness(config.id)
        self.state.on_record.append(self._heard)
        prepare_data_dir(config.data_dir)  # a read-only one: one line naming it, not SQLite's I/O error
        self.store = SQLiteLogStore(config.data_dir / "log.db", fsync=config.fsync)
        if not config.fsync:
            self.log.warn("[storage] fsync = false: a crash may lose acknowledged entries (benchmarks only)")
        self.snapshots = FileSnapshotStore(config.data_dir / "snapshot")
        #: the store's writes run on a thread of their own, so that an fsync never holds the reactor
        threads = config.writer == "thread" and ThreadWriter.usable(self.reactor)
        self.writer: Writer = ThreadWriter(self.reactor) if threads else InlineWriter()
        stored = self.store.load()
        data = recover(stored.snapshot, self.snapshots)
        if stored.snapshot is not None:
            problem = self.state.check_snapshot(data)
            if problem is not None:
                where = f"{config.data_dir}: the snapshot at index {stored.snapshot.last_index}"
                raise ConfigError(f"{where}: {problem}")
            self.state.restore(data)
            self.liveness.observe(self.state.now, self.monotonic())
        bootstrap = self._bootstrap()
        rng = random.Random(os.urandom(16))  # noqa: S311 - election timeouts need spread, not secrecy
        core = RaftCore(config.id, stored, rng, bootstrap, config.raft, data)
        self.peers = PeerConnections(
            self.reactor,
            self._endpoint_for,
            self._client_config_for,
            self.limits,
            self._lookup,
            on_features=self._peer_features,
        )
        self.driver = RaftDriver(
            core,
            self.store,
            self.reactor,
            self.peers,
            config.tick_seconds,
            state_machine=self.state,
            snapshots=self.snapshots,
            snapshot_every=config.snapshot_every,
            group_commit=True,
            submit_timeout=config.commit_timeout,
            writer=self.writer,
        )
        self.driver.on_failure.append(self._failed)
        #: keep a link to every other voter (whoever leads next has them when it needs them), and
        #: stop dialling servers that are neither members nor joining (a refused join, a removal)
        self._pruner = LoopingCall(self._tend_peers)
        self._pruner.clock = self.reactor
        self.app = NodeApp.build(
            config, self.app_config, self.state, self.reactor, self.driver, self._to_leader
        )
        self.nonces = NonceRegistry(os.urandom)
        self.server_config = ServerConfig(
            credentials={config.username: password}, cluster=config.cluster, realm=config.cluster
        )
        self.inbound = InboundFactory(
            self._make_connection,
            config.max_inbound,
            self.reactor,
            max_unauthenticated=config.max_unauthenticated,
            max_buffered=config.max_buffered,
        )
        self.listener = StreamServerEndpointService(self._server_endpoint(), self.inbound)
        self.listener._raiseSynchronously = True  # a failed bind fails loudly at start, never spins
        self.listener.setServiceParent(self)
        self.admin = self._admin_service()
        self.metrics = self._metrics_service()

    # ------------------------------------------------------------------------------------------ wiring

    def _admin_service(self) -> AdminService | None:
        """The admin console, when the node's TOML has ``[admin] listen`` (see docs/admin.md)."""
        admin = admin_config(self.config)
        if admin.listen is None:
            return None
        from garlicfarm.admin.service import AdminService  # noqa: PLC0415 - only when configured

        service = AdminService(self, admin)
        service.setServiceParent(self)  # type: ignore[no-untyped-call]
        return service

    def _metrics_service(self) -> MetricsService | None:
        """/metrics, /livez and /readyz, when the node's TOML has ``[metrics] listen``."""
        config = metrics_config(self.config)
        if config.listen is None:
            return None
        from garlicfarm.metrics.service import MetricsService  # noqa: PLC0415 - only when configured

        service = MetricsService(self, config)
        service.setServiceParent(self)  # type: ignore[no-untyped-call]
        return service

    def _bootstrap(self) -> Configuration:
        if self.config.id not in self.config.peers:
            return Configuration(0, 0, ())  # not a founding member: wait to be invited
        servers = tuple(ClusterServer(i, e) for i, e in sorted(self.config.peers.items()))
        return Configuration(0, 0, servers)

    def _lookup(self, server_id: int) -> str | None:
        # The operator's [peers] entry wins over the endpoint the log advertises: it is how this node
        # reaches that server from where it stands (NAT, a tunnel, a proxy — the chaos test's proxy).
        core = self.driver.core
        return (
            self.config.peers.get(server_id)
            or core.config.endpoint_of(server_id)
            or (core.join_config.endpoint_of(server_id) if core.join_config else None)
        )

    def _endpoint_for(self, uri: str) -> Any:
        # Only the operator's own [peers] entries may be Twisted endpoint strings (local files,
        # sockets, proxies); every endpoint learnt from the network must be a protocol form.
        trusted = uri in self.config.peers.values()
        return client_endpoint(self.reactor, uri, self.config.tls, trusted=trusted)

    def _client_config_for(self, uri: str) -> ClientConfig:
        address = parse_endpoint(uri)
        return ClientConfig(
            host=address.host_header,
            username=self.config.username,
            password=self._password,
            cluster=self.config.cluster,
            features=OUR_FEATURES,
        )

    def _peer_features(self, peer_id: int, features: frozenset[str]) -> None:
        """A link to ``peer_id`` came up, speaking ``features``."""
        self.driver.set_pre_vote_support(peer_id, PRE_VOTE in features)
        self.driver.set_transfer_support(peer_id, TRANSFER in features)
        self.driver.link_up(peer_id)

    def _server_endpoint(self) -> Any:
        if self.config.tls is not None:
            from garlicfarm.tls import server_endpoint  # noqa: PLC0415 - pyOpenSSL is heavy

            self._check_identity(self.config.tls)
            return server_endpoint(self.reactor, self.config.listen, self.config.tls)
        if "interface=127." not in self.config.listen and "interface=\\:\\:1" not in self.config.listen:
            raise ConfigError(
                f"{self.config.path}: [node] listen without [tls] must be on loopback (interface=127.0.0.1)"
            )
        self.log.warn(
            "listening in cleartext on loopback: no [tls] configured, so no member's identity is bound"
            " (any holder of the farm's credentials may speak as any member; docs/security.md)"
        )
        return serverFromString(self.reactor, self.config.listen)

    def _check_identity(self, tls: TLSConfig) -> None:
        """Say so when this member's certificate does not name it: its peers then bind its
        connections to no server (the choice of a farm with its own naming; docs/security.md)."""
        name = certificate_file_name(tls.cert)
        if server_of_name(name) != self.config.id:
            self.log.warn(
                "[tls] cert {cert} is named {name!r}, not node-{id}: peers cannot bind this member's"
                " connections to server {id} (any holder of the farm's credentials may speak as it)",
                cert=tls.cert,
                name=name,
                id=self.config.id,
            )

    def _make_connection(self, admission: InboundFactory) -> ServerConnection:
        return ServerConnection(
            self.reactor,
            self.server_config,
            self.nonces,
            self._handle,
            self.limits,
            self._upgrade_headers,
            admission=admission,
        )

    def _to_leader(self, leader: int, request: ClientRequest) -> Deferred[Response]:
        return self.peers.send(leader, request)

    def _failed(self, failure: Failure) -> None:
        """The node stopped on a failure: say so once, loudly, and end the process if it is ours."""
        self.failure = failure
        self.log.critical(
            "node {id} has STOPPED: {why}. It serves no request and claims no role until restarted{end}",
            id=self.config.id,
            why=failure.getErrorMessage(),
            end="; exiting with status 1" if self.exit_on_failure else "",
        )
        if self.exit_on_failure:
            self.reactor.callLater(0, self.reactor.stop)

    def _handle(self, request: Request) -> Deferred[Response]:
        if isinstance(request, AddServerRequest):
            server = request.entries[0].value
            assert isinstance(server, ClusterServer) and server.endpoint is not None
            try:
                parse_network_endpoint(server.endpoint)
            except EndpointRefused as e:
                self.log.warn("refused to add server {id}: {why}", id=server.id, why=e)
                core = self.driver.core
                core.change_refused = (server.id, f"its endpoint is refused: {e}")
                leader = NO_LEADER if core.leader_id is None else core.leader_id
                return succeed(AddServerResponse(source=core.id, destination=leader, term=core.term))
        return self.driver.handle_request(request)

    def _upgrade_headers(self) -> Sequence[tuple[str, str]]:
        """Extra headers on the 101: who leads, who is in the farm, and this node's status."""
        core = self.driver.core
        members = ", ".join(f"{s.id}={s.endpoint}" for s in core.config.servers)
        headers = [
            (MEMBERS_HEADER, members),
            (STATUS_HEADER, json.dumps(self.status(), separators=(",", ":"))),
            (FEATURES_HEADER, format_features(OUR_FEATURES)),
        ]
        if core.leader_id is not None:
            headers.insert(0, (LEADER_HEADER, str(core.leader_id)))
        return headers

    def _heard(self, index: int, record: Any) -> None:
        self.liveness.heard(record.id, record.date, self.state.now, self.monotonic())

    def clock_skew(self) -> tuple[float | None, str | None]:
        """This node's clock minus the farm's time (s; None: not known yet), and a warning when it is
        off by more than the threshold."""
        skew = self.liveness.clock_skew_s()
        if skew is None or abs(skew) <= skew_threshold(self.app_config.interval):
            return skew, None
        way = "ahead of" if skew > 0 else "behind"
        return skew, (
            f"this node's clock is {_duration(abs(skew))} {way} the farm's time: its status reports are "
            "misdated (fix its clock: NTP)"
        )

    def status(self) -> dict[str, Any]:
        status = self.driver.status()
        details = member_details(self, status)
        status["members"] = [{**m, **details.get(int(m["id"]), {})} for m in status["members"]]
        status["cluster"] = self.config.cluster
        status["endpoint"] = self.config.endpoint
        status["admin_url"] = self.admin.url if self.admin is not None else None
        status["connected"] = {str(k): v for k, v in sorted(self.peers.connected().items())}
        status.update(self.state.status())
        status["clock_skew_s"], status["clock_warning"] = self.clock_skew()
        status["app"] = {
            "applied_index": self.state.index,
            "reports_committed": self.app.reporter.submitted,
            "report_failures": self.app.reporter.failures,
            "rejected_entries": self.state.rejected,
            "publishing": self.app.role.active,
            "metals": self.app.metals_status(),
        }
        status["health"] = health_inputs(self)
        return status

    # ------------------------------------------------------------------------------------------ life

    def startService(self) -> None:
        super().startService()  # type: ignore[no-untyped-call]
        self.driver.start()
        self.app.reporter.start()
        self._pruner.start(TEND_SECONDS)
        self.log.info(
            "garlicfarm node {id} of farm {cluster} listening on {listen}",
            id=self.config.id,
            cluster=self.config.cluster,
            listen=self.config.listen,
        )

    def _tend_peers(self) -> None:
        try:
            core = self.driver.core
            self.peers.retain(core.contacts())
            self.peers.dial(core.voters() - {core.id})
        except Exception:
            self.log.failure("could not tend the peer links (will try again)")

    def stopService(self) -> Deferred[None]:
        if self._pruner.running:
            self._pruner.stop()
        self.app.reporter.stop()
        # A leader hands over first (SIGTERM, a rolling restart): the farm is not left leaderless for
        # an election timeout. Bounded: the core gives up after one, and leads on until we stop.
        handover = Deferred.fromCoroutine(self._hand_over())
        return handover.addBoth(self._stop_after_handover)

    async def _hand_over(self) -> None:
        """Give the leadership away, then let the requests this node took get their answers (the new
        leader commits them; we learn it within a heartbeat) rather than fail them on the way out."""
        if await self.driver.transfer_leadership() is None:
            return
        deadline = self.reactor.seconds() + self.driver.tick_seconds * self.config.raft.election_ticks
        while self.driver.waiting() and self.reactor.seconds() < deadline:
            await deferLater(self.reactor, self.driver.tick_seconds)

    def _stop_after_handover(self, _: object) -> Deferred[None]:
        self.driver.stop()
        d: Deferred[Any] = self.peers.stop()
        d.addCallback(self._stop_children)
        d.addBoth(self._close_store)
        return d

    def _stop_children(self, _: object) -> Deferred[None]:
        result: Deferred[None] = super().stopService()  # type: ignore[no-untyped-call]
        return result

    def _close_store(self, result: object) -> object:
        self.writer.stop()  # the writes already given end first
        self.store.close()
        return result


def _duration(seconds: float) -> str:
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
