"""What the farm asks of the local I2P router (proposal 150, "Router Interface").

getLocalRouterStatus, getLocalLeafHash/Status, publishMetaLS, stopPublishingMetaLS: the first three
are read through I2PControl; the Meta LeaseSet goes through a :class:`MetaLSPublisher`: signed and
handed to the router over I2CP (garlicfarm.router.i2cp), written signed to a file
(garlicfarm.router.signed), or handed unsigned to a file, a command or a URL
(garlicfarm.router.publishers).
"""

from __future__ import annotations

from typing import Protocol

import attrs
from twisted.internet.defer import Deferred


@attrs.frozen
class RouterStatus:
    """The router's health, as the status schema's ``router`` section carries it. Unknown numbers are 0."""

    #: the router's own view: "OK", "TESTING", "FIREWALLED", "HIDDEN", "WARN_...", "ERROR_..." (I2PControl
    #: i2p.router.net.status, named)
    net_status: str
    uptime_ms: int
    #: job queue lag in ms (a saturated router lags)
    job_lag_ms: int = 0
    exploratory_tunnels: int = 0
    participating_tunnels: int = 0
    #: bytes/s the operator configured, and what the router moves now (in + out, 15 s average)
    bandwidth_configured: int = 0
    bandwidth_current: int = 0
    #: base64 of the last published RouterInfo, if known
    last_published_ri: str | None = None
    version: str | None = None

    @property
    def healthy(self) -> bool:
        """Failure is an ERROR_* status; i2pd says UNKNOWN in normal operation (see app/scoring.py)."""
        return not self.net_status.startswith("ERROR")


@attrs.frozen
class LeafStatus:
    """One local destination (a leaf of the Meta LeaseSet) and its tunnels and traffic."""

    destination: str  # base64
    uptime_ms: int = 0
    tunnels_configured: int = 0
    tunnels_current: int = 0
    bandwidth_configured: int = 0
    bandwidth_current: int = 0
    connections_configured: int = 0
    connections_current: int = 0
    blocklist: tuple[str, ...] = ()


class RouterUnavailable(Exception):
    """The router could not be asked (down, wrong password, refusing); the message says which."""


class RouterAPI(Protocol):
    def router_status(self) -> Deferred[RouterStatus]:
        """getLocalRouterStatus(); fails with RouterUnavailable."""

    def leaf_status(self) -> Deferred[list[LeafStatus]]:
        """getLocalLeafStatus() for the destinations this node serves in the farm."""


@attrs.frozen
class MetaLease:
    destination: str  # base64 leaf destination (or its hash)
    weight: int


class MetaLSPublisher(Protocol):
    def publish(self, master: str, contents: tuple[MetaLease, ...]) -> Deferred[None]:
        """publishMetaLS(masterHash, contents): hand the signed-ready contents to whatever signs them."""

    def stop(self, master: str) -> Deferred[None]:
        """stopPublishingMetaLS(masterHash)."""
