"""The console as part of a node: :class:`AdminService` registers the node's farm with the process's
:class:`~garlicfarm.admin.site.AdminSite` for its ``[admin] listen`` address (nodes of several farms
in one process that name the same address share one site and one port), and samples the farm's
health on an interval for the page's charts.

TLS is server-only here (browsers have no node certificate): the node's own certificate and key.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import attrs
from twisted.application.service import Service
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import serverFromString, wrapServerTLS
from twisted.internet.interfaces import IListeningPort, IStreamServerEndpoint
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from garlicfarm.admin.config import AdminConfig
from garlicfarm.admin.farm import FarmHandle
from garlicfarm.admin.site import AdminSite
from garlicfarm.config import ConfigError, TLSConfig
from garlicfarm.process import listen_failed

if TYPE_CHECKING:
    from garlicfarm.service import GarlicFarmService

_LOOPBACK = ("127.", "\\:\\:1", "localhost")


def admin_url(admin: AdminConfig, tls: TLSConfig | None) -> str | None:
    """The console's address: ``[admin] url``, else made from ``listen`` (loopback when it binds all)."""
    if admin.url is not None:
        return admin.url if admin.url.endswith("/") else admin.url + "/"
    if admin.listen is None:
        return None
    fields = [f.replace("\\:", ":") for f in re.split(r"(?<!\\):", admin.listen)]
    if fields[0] not in ("tcp", "tcp6") or len(fields) < 2 or not fields[1].isdigit():
        return None
    params = dict(f.split("=", 1) for f in fields[2:] if "=" in f)
    host = params.get("interface", "127.0.0.1")
    if host in ("0.0.0.0", "::"):  # noqa: S104 - a name for the address, not a bind
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"{'https' if tls else 'http'}://{host}:{fields[1]}/"


def server_endpoint(reactor: Any, listen: str, tls: TLSConfig | None) -> IStreamServerEndpoint:
    try:
        inner: IStreamServerEndpoint = serverFromString(reactor, listen)
    except (ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"[admin] listen {listen!r} is not a Twisted server endpoint string: {e}") from None
    if tls is None:
        if not any(f"interface={p}" in listen for p in _LOOPBACK):
            raise ConfigError("[admin] listen without [tls] must be on loopback (interface=127.0.0.1)")
        return inner
    from garlicfarm.tls.options import NodeTLS, own_certificate_options  # noqa: PLC0415 - pyOpenSSL is heavy

    options = own_certificate_options(NodeTLS.load(tls))
    wrapped: IStreamServerEndpoint = wrapServerTLS(options, inner)
    return wrapped


@attrs.define
class _Shared:
    site: AdminSite
    port: Deferred[IListeningPort]
    users: int = 0


#: one site per listen address in this process
_SITES: dict[str, _Shared] = {}


class AdminService(Service):
    log = Logger()

    def __init__(self, node: GarlicFarmService, admin: AdminConfig) -> None:
        assert admin.listen is not None
        self.node = node
        self.admin = admin
        self.listen = admin.listen
        self.url = admin_url(admin, node.config.tls)
        self.farm = FarmHandle(node, admin, self.url)
        self._sampler = LoopingCall(self._sample)
        self._sampler.clock = node.reactor

    def startService(self) -> None:
        shared = _SITES.get(self.listen)
        if shared is None:
            site = AdminSite(
                self.node.reactor,
                self.admin.origins,
                max_connections=self.admin.max_connections,
                request_deadline=self.admin.request_deadline,
            )
            endpoint = server_endpoint(self.node.reactor, self.listen, self.node.config.tls)
            port = endpoint.listen(site.http_factory())
            failed: list[Failure] = []
            port.addErrback(failed.append)
            if failed:  # a failed bind fails the start loudly (real reactors bind synchronously)
                raise listen_failed(self.listen, "[admin] listen", failed[0])
            shared = _SITES[self.listen] = _Shared(site, port)
        shared.site.register(self.farm)
        shared.users += 1
        super().startService()  # type: ignore[no-untyped-call]
        self._sampler.start(self.admin.sample_interval, now=False)
        self.log.info("admin console for farm {cluster} at {url}", cluster=self.farm.cluster, url=self.url)

    def stopService(self) -> Deferred[None] | None:
        super().stopService()  # type: ignore[no-untyped-call]
        if self._sampler.running:
            self._sampler.stop()
        shared = _SITES.get(self.listen)
        if shared is None:
            return None
        shared.site.unregister(self.farm.cluster)
        shared.users -= 1
        if shared.users > 0:
            return None
        del _SITES[self.listen]
        return shared.port.addCallback(lambda port: port.stopListening())

    def _sample(self) -> None:
        try:
            self.farm.sample(self.node.reactor.seconds())
        except Exception:
            self.log.failure("admin console: health sample failed")
