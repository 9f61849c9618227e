"""The ``[metrics]`` listener of a node: a small HTTP site (HTTPS with Basic auth off loopback) serving
``/metrics``, ``/livez`` and ``/readyz``; one per node, each with its own registry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.application.service import Service
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import serverFromString, wrapServerTLS
from twisted.internet.interfaces import IListeningPort, IStreamServerEndpoint
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import http, server

from garlicfarm.admin.connections import LimitedSite
from garlicfarm.admin.site import AdminRequest
from garlicfarm.config import ConfigError
from garlicfarm.metrics.collector import node_registry
from garlicfarm.metrics.config import MetricsConfig
from garlicfarm.metrics.health import Check, live_checks, ready_checks
from garlicfarm.metrics.resource import metrics_root
from garlicfarm.metrics.snapshot import NodeSnapshot, read_node
from garlicfarm.net.budget import RateLimitedLog
from garlicfarm.process import listen_failed

if TYPE_CHECKING:
    from garlicfarm.service import GarlicFarmService

#: open connections to the endpoints (a scraper and a health checker or two need a few)
MAX_CONNECTIONS = 16
#: seconds a client has to send a whole request
REQUEST_DEADLINE = 10.0


class _QuietSite(server.Site):
    """No access log: Prometheus and health checkers poll every few seconds. Refused credentials are
    the exception (rate-limited lines)."""

    events: RateLimitedLog

    def log(self, request: http.Request) -> None:
        if request.code == 401 and request.getHeader("authorization") is not None:
            peer = request.getClientAddress()  # type: ignore[no-untyped-call]
            self.events.event(
                "credentials",
                "metrics: refused the credentials of a request from {peer}",
                peer=str(getattr(peer, "host", peer)),
            )


class MetricsService(Service):
    log = Logger()

    def __init__(self, node: GarlicFarmService, config: MetricsConfig) -> None:
        assert config.listen is not None
        self.node = node
        self.config = config
        self.listen = config.listen
        self.registry = node_registry(self.snapshot)
        password = config.password()
        credentials = None
        if config.username is not None and password is not None:
            credentials = (config.username, password)
        self.resource = metrics_root(self.registry, self._live, self._ready, credentials)
        self._port: Deferred[IListeningPort] | None = None

    def snapshot(self) -> NodeSnapshot:
        return read_node(self.node)

    def _live(self) -> list[Check]:
        return live_checks(self.snapshot())

    def _ready(self) -> list[Check]:
        return ready_checks(self.snapshot())

    def http_factory(self) -> LimitedSite:
        reactor = self.node.reactor
        site = _QuietSite(self.resource, reactor=reactor)  # type: ignore[no-untyped-call]
        site.requestFactory = AdminRequest  # bodies are not read; the request deadline needs its hooks
        site.displayTracebacks = False
        events = RateLimitedLog(reactor, self.log)
        site.events = events
        return LimitedSite(
            site, reactor, events, max_connections=MAX_CONNECTIONS, request_deadline=REQUEST_DEADLINE
        )

    def _endpoint(self) -> IStreamServerEndpoint:
        try:
            inner: IStreamServerEndpoint = serverFromString(self.node.reactor, self.listen)
        except (ValueError, KeyError, TypeError) as e:
            raise ConfigError(
                f"{self.config.source} listen {self.listen!r} is not a Twisted server endpoint string: {e}"
            ) from None
        if not self.config.tls:
            return inner
        tls = self.node.config.tls
        assert tls is not None  # metrics_config refuses off-loopback listening without [tls]
        from garlicfarm.tls.options import NodeTLS, own_certificate_options  # noqa: PLC0415 - heavy

        wrapped: IStreamServerEndpoint = wrapServerTLS(own_certificate_options(NodeTLS.load(tls)), inner)
        return wrapped

    def startService(self) -> None:
        port = self._endpoint().listen(self.http_factory())
        failed: list[Failure] = []
        port.addErrback(failed.append)
        if failed:  # a failed bind fails the start loudly (real reactors bind synchronously)
            raise listen_failed(self.listen, f"{self.config.source} listen", failed[0])
        self._port = port
        super().startService()  # type: ignore[no-untyped-call]
        self.log.info(
            "metrics and health checks of node {id} on {listen}{auth}",
            id=self.node.config.id,
            listen=self.listen,
            auth=" (HTTPS, Basic auth)" if self.config.tls else "",
        )

    def stopService(self) -> Deferred[None] | None:
        super().stopService()  # type: ignore[no-untyped-call]
        port, self._port = self._port, None
        if port is None:
            return None
        return port.addCallback(lambda p: p.stopListening())
