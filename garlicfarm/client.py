"""A client of a Garlic Farm for any Twisted program: submit entries, read status, change membership.

No node configuration is needed: give the farm's endpoints, its credentials and how to trust its
certificates. Requests go to the leader, following redirects and skipping nodes that cannot be
reached; concurrent submissions are coalesced into one ClientRequest (one round trip, one commit)::

    client = GarlicFarmClient(reactor, ClientSettings(
        endpoints=("tcp://127.0.0.1:22600", "tcp://127.0.0.1:22601"),
        username="farm", password="...",
        tls=TLSConfig(ca=Path("ca.pem"), cert=Path("client.pem"), key=Path("client.key")),
    ))
    index = await client.submit(b'{"hello": "farm"}')

See docs/client.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall

from garlicfarm.config import TLSConfig
from garlicfarm.net.client import AuthenticationRefused, ClientError, FarmClient
from garlicfarm.wire import (
    AddServerRequest,
    Application,
    ClientRequest,
    ClusterServer,
    LogEntry,
    RemoveServerRequest,
    Response,
)

__all__ = ["AuthenticationRefused", "ClientError", "ClientSettings", "GarlicFarmClient"]


def _as_tuple(endpoints: Iterable[str]) -> tuple[str, ...]:
    return tuple(endpoints)


@attrs.frozen
class ClientSettings:
    """Where the farm is and how to authenticate to it."""

    #: the farm's nodes (tcp://host:port, i2p://….b32.i2p, or the operator's Twisted strings); the
    #: first is asked first, the others when it cannot be reached; the leader's 101 names the rest
    endpoints: tuple[str, ...] = attrs.field(converter=_as_tuple)
    username: str
    password_text: str = attrs.field(repr=False, alias="password")
    cluster: str = "farm"
    #: the farm's CA or pins, and this client's certificate (nodes require one by default)
    tls: TLSConfig | None = None
    #: seconds to wait for a leader, a connection or an answer
    timeout: float = 30.0

    @endpoints.validator
    def _some(self, _attribute: Any, value: Sequence[str]) -> None:
        if not value:
            raise ValueError("ClientSettings needs at least one endpoint")

    # What FarmClient reads of a node's configuration:
    @property
    def endpoint(self) -> str:
        return self.endpoints[0]

    @property
    def peers(self) -> dict[int, str]:
        # Keys below 0 never name a server: these are only places to try, by order.
        return {-(i + 1): e for i, e in enumerate(self.endpoints)}

    def password(self) -> str:
        return self.password_text


class GarlicFarmClient:
    """Deferred-returning operations on a farm (see the module's docstring)."""

    #: entries per ClientRequest by default: enough to share a round trip and a commit, few enough
    #: that several requests are in flight and every node has work while the others do theirs
    MAX_BATCH = 100

    def __init__(self, reactor: Any, settings: ClientSettings, max_batch: int = MAX_BATCH) -> None:
        self.reactor = reactor
        self.settings = settings
        self.max_batch = max_batch
        self._farm = FarmClient(reactor, settings, timeout=settings.timeout)
        self._farm.keep_connections = True
        self._queue: list[tuple[bytes, Deferred[int]]] = []
        self._flush: IDelayedCall | None = None
        #: ClientRequests sent (each carrying one or more coalesced submissions)
        self.requests = 0

    @property
    def leader_features(self) -> frozenset[str]:
        """What the last leader that accepted a request offered (``commit-ack``: answers on commit)."""
        return self._farm.leader_features

    def submit(self, data: bytes) -> Deferred[int]:
        """Commit ``data`` as one Application entry; fires with its log index. Submissions made in the
        same reactor turn travel together in one ClientRequest."""
        d: Deferred[int] = Deferred()
        self._queue.append((bytes(data), d))
        if len(self._queue) >= self.max_batch:
            # a full batch leaves at once: the farm works on it while more are being submitted
            batch, self._queue = self._queue, []
            Deferred.fromCoroutine(self._send(batch))
        elif self._flush is None:
            self._flush = self.reactor.callLater(0, self._send_queued)
        return d

    def close(self) -> None:
        """Close the connections this client keeps open to the farm's nodes."""
        self._farm.close()

    def status(self, endpoint: str | None = None) -> Deferred[dict[str, Any]]:
        """The status JSON of a node (the first endpoint by default), from its handshake."""
        return Deferred.fromCoroutine(self._farm.status(endpoint))

    def add_server(self, server_id: int, endpoint: str) -> Deferred[None]:
        """Add a server (the leader catches it up first); fires once the change is done."""
        request = AddServerRequest(entries=(LogEntry(0, ClusterServer(server_id, endpoint)),))
        return Deferred.fromCoroutine(self._change(request, f"add server {server_id}"))

    def remove_server(self, server_id: int) -> Deferred[None]:
        request = RemoveServerRequest(entries=(LogEntry(0, ClusterServer(server_id)),))
        return Deferred.fromCoroutine(self._change(request, f"remove server {server_id}"))

    async def _change(self, request: AddServerRequest | RemoveServerRequest, what: str) -> None:
        await self._farm.request_leader(request, what)

    def _send_queued(self) -> None:
        self._flush = None
        while self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            Deferred.fromCoroutine(self._send(batch))

    async def _send(self, batch: list[tuple[bytes, Deferred[int]]]) -> None:
        request = ClientRequest(entries=tuple(LogEntry(0, Application(data)) for data, _ in batch))
        self.requests += 1
        try:
            response: Response = await self._farm.request_leader(request, "submit")
        except ClientError as e:
            if len(batch) > 1 and "refused by the leader" in str(e):
                # The leader takes or refuses a request whole: one bad entry must not fail the
                # others submitted beside it, so each is sent again on its own.
                for item in batch:
                    Deferred.fromCoroutine(self._send([item]))
                return
            for _, d in batch:
                d.errback(type(e)(str(e)))
            return
        except Exception as e:
            for _, d in batch:
                d.errback(e)
            return
        last = response.next_index - 1
        for i, (_, d) in enumerate(batch):
            d.callback(last - (len(batch) - 1 - i))
