"""A Garlic Farm client: connect to a node, authenticate, send requests, follow the leader.

Used by ``garlicfarm status/submit/add-server/remove-server``. It speaks the same protocol as the
peers: the HTTP upgrade handshake (a challenge costs one extra connection, then it is cached), then
ClientRequest / AddServerRequest / RemoveServerRequest, whose answers name the leader.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.defer import TimeoutError as OutOfTime
from twisted.internet.interfaces import IReactorTCP, IReactorTime
from twisted.internet.protocol import Factory
from twisted.internet.task import deferLater
from twisted.logger import Logger, LogLevel
from twisted.python.failure import Failure

from garlicfarm.config import TLSConfig
from garlicfarm.handshake import ChallengeCache, ClientConfig
from garlicfarm.handshake.events import Failure as HandshakeFailure
from garlicfarm.net.connection import ClientConnection, ConnectionClosed, ConnectionLimits, RequestTimeout
from garlicfarm.net.endpoints import client_endpoint, parse_endpoint
from garlicfarm.wire import NO_LEADER, AddServerRequest, RemoveServerRequest, Request, Response


class ClientError(Exception):
    """The farm could not do what was asked; the message says why."""


class AuthenticationRefused(ClientError):
    """A node answered 401 to our credentials: no retry, nor any other node, can help."""


class FarmAccess(Protocol):
    """What a client needs of a farm: a node's configuration has it, and so has
    :class:`garlicfarm.client.ClientSettings`."""

    @property
    def endpoint(self) -> str: ...
    @property
    def username(self) -> str: ...
    @property
    def cluster(self) -> str: ...
    @property
    def tls(self) -> TLSConfig | None: ...
    @property
    def peers(self) -> Mapping[int, str]: ...
    def password(self) -> str: ...


class FarmClient:
    log = Logger()

    def __init__(self, reactor: Any, config: FarmAccess, timeout: float = 30.0) -> None:
        self.reactor: IReactorTime & IReactorTCP = reactor  # type: ignore[valid-type]
        self.config = config
        self.timeout = timeout
        self.cache = ChallengeCache()
        self.endpoints: dict[int, str] = dict(config.peers)
        #: what the node that accepted the last request offered in its 101 (JRaft's bridge: nothing)
        self.leader_features: frozenset[str] = frozenset()
        self._last_leader: str | None = None
        #: the leader the last redirect named (logged at info only when it changes)
        self._announced_leader: int | None = None
        #: keep connections open between requests (GarlicFarmClient does): a request then costs no
        #: TLS handshake and Digest challenge, and concurrent requests share one connection
        self.keep_connections = False
        self._open: dict[str, ClientConnection] = {}
        #: requests waiting for the connection being made to a node (one handshake, not one each)
        self._connecting: dict[str, list[Deferred[ClientConnection]]] = {}

    def handshake_config(self, uri: str) -> ClientConfig:
        """What the HTTP upgrade to ``uri`` says: its Host, this client's credentials and farm."""
        return ClientConfig(
            host=parse_endpoint(uri).host_header,
            username=self.config.username,
            password=self.config.password(),
            cluster=self.config.cluster,
        )

    async def connect(self, uri: str) -> ClientConnection:
        """An authenticated connection to ``uri`` (reconnecting once after the Digest challenge),
        within ``timeout`` seconds however many connections and handshakes that takes."""
        attempt = Deferred.fromCoroutine(self._connect(uri))
        attempt.addTimeout(self.timeout, self.reactor)
        try:
            return await attempt
        except OutOfTime:
            raise ClientError(
                f"cannot connect to {uri}: no authenticated connection within {self.timeout:g} s"
            ) from None

    async def _connect(self, uri: str) -> ClientConnection:
        client_config = self.handshake_config(uri)
        for _attempt in range(3):
            connection = ClientConnection(self.reactor, client_config, self.cache, ConnectionLimits())
            endpoint = client_endpoint(self.reactor, uri, self.config.tls)
            try:
                factory = Factory.forProtocol(lambda c=connection: c)  # type: ignore[misc]
                factory.noisy = False
                await endpoint.connect(factory)
            except CancelledError:
                raise
            except Exception as e:
                raise ClientError(f"cannot connect to {uri}: {plain_reason(e)}") from None
            try:
                await connection.ready
            except CancelledError:  # out of time: the half-made connection goes too
                if connection.transport is not None:
                    connection.transport.abortConnection()  # type: ignore[attr-defined]
                raise
            except ConnectionClosed as e:
                if "reconnecting" in str(e):
                    continue  # the challenge is cached now: the next connection goes straight in
                refused = connection.handshake_failure
                if refused is not None and refused.reason is HandshakeFailure.AUTH_FAILED:
                    raise AuthenticationRefused(
                        f"{uri}: authentication refused (HTTP 401 to user {client_config.username!r}: "
                        "check the username and password)"
                    ) from None
                raise ClientError(f"{uri}: {e}") from None
            assert connection.upgraded is not None
            self._learn_members(connection.upgraded.header("GarlicFarm-Members"))
            return connection
        raise ClientError(f"{uri}: the handshake did not complete")

    async def _connection(self, uri: str) -> ClientConnection:
        kept = self._open.get(uri)
        if kept is not None and not kept.lost:
            return kept
        if not self.keep_connections:
            return await self.connect(uri)
        waiting = self._connecting.get(uri)
        if waiting is not None:  # a request is connecting already: share its connection
            shared: Deferred[ClientConnection] = Deferred()
            waiting.append(shared)
            return await shared
        # Concurrent handshakes each took the next nc of the cached challenge and could reach the
        # node out of order; one handshake for a burst of requests is cheaper anyway.
        self._connecting[uri] = waiting = []
        try:
            connection = await self.connect(uri)
        except Exception:
            failure = Failure()
            del self._connecting[uri]
            for d in waiting:
                d.errback(failure)
            raise
        del self._connecting[uri]
        self._open[uri] = connection
        for d in waiting:
            d.callback(connection)
        return connection

    def _done_with(self, uri: str, connection: ClientConnection, failed: bool) -> None:
        if not self.keep_connections:
            connection.transport.loseConnection()  # type: ignore[union-attr]
        elif failed and self._open.get(uri) is connection:
            del self._open[uri]
            connection.transport.loseConnection()  # type: ignore[union-attr]

    def close(self) -> None:
        """Close the connections kept open between requests."""
        kept, self._open = self._open, {}
        for connection in kept.values():
            connection.transport.loseConnection()  # type: ignore[union-attr]

    def _learn_members(self, header: str | None) -> None:
        for item in (header or "").split(","):
            if "=" in item:
                key, _, value = item.strip().partition("=")
                if key.isdigit():
                    self.endpoints[int(key)] = value

    async def status(self, uri: str | None = None) -> dict[str, Any]:
        connection = await self.connect(uri or self.config.endpoint)
        try:
            assert connection.upgraded is not None
            raw = connection.upgraded.header("GarlicFarm-Status")
            if raw is None:
                raise ClientError("the node sent no status (not a garlicfarm node?)")
            status: dict[str, Any] = json.loads(raw)
            return status
        finally:
            connection.transport.loseConnection()  # type: ignore[union-attr]

    async def request_leader(self, request: Request, what: str) -> Response:
        """Send ``request`` to the leader, following redirects; waits for a leader for ``timeout``.
        Errors start with ``what: `` (nothing when ``what`` is empty).
        A node that cannot be reached is skipped for the next one the client knows of."""
        # the node that took the last request: usually still the leader, which spares a redirect
        target = self._last_leader or self.config.endpoint
        waited = 0.0
        delay = 0.2
        tried: set[str] = set()
        unreachable: dict[str, str] = {}
        while True:
            response: Response | None = None
            try:
                connection = await self._connection(target)
                failed = True
                try:
                    response = await connection.request(request, timeout=self.timeout)
                    failed = False
                finally:
                    self._done_with(target, connection, failed)
            except AuthenticationRefused as e:
                raise AuthenticationRefused(f"{_prefix(what)}{e}") from None  # waiting would not help
            except (ClientError, ConnectionClosed, RequestTimeout) as e:
                unreachable[target] = str(e)
                self._last_leader = None
            if response is not None:
                if response.accepted:
                    self.leader_features = connection.features
                    self._last_leader = target
                    return response
                unreachable.pop(target, None)
                leader = response.destination
                named = self.endpoints.get(leader)
                # a follower that has not noticed yet still names a leader we just failed to reach
                if (
                    leader not in (NO_LEADER, response.source)
                    and named is not None
                    and named not in unreachable
                ):
                    # once per leader: a thousand callers redirected at once are one event
                    level = LogLevel.info if leader != self._announced_leader else LogLevel.debug
                    self._announced_leader = leader
                    self.log.emit(level, "redirected to the leader, server {id}", id=leader)
                    tried.add(target)
                    target = named
                    continue
                if leader == response.source:
                    cause = await self.change_cause(target, request)
                    raise ClientError(f"{_prefix(what)}refused by the leader (server {leader}){cause}")
            tried.add(target)
            if waited >= self.timeout:
                raise ClientError(self._no_leader(what, waited, unreachable))
            await deferLater(self.reactor, delay, lambda: None)
            waited += delay
            delay = min(delay * 2, 2.0)
            target = self._next_target(tried)

    async def change_cause(self, uri: str, request: Request) -> str:
        """``: why`` the leader at ``uri`` refused the membership change ``request`` (its status keeps
        the last cause: the protocol's answer has no room for one); empty for other requests."""
        if not isinstance(request, AddServerRequest | RemoveServerRequest) or not request.entries:
            return ""
        try:
            refused = (await self.status(uri)).get("change_refused") or {}
        except Exception:
            return ""
        if refused.get("server") != getattr(request.entries[0].value, "id", None):
            return ""
        return f": {refused.get('why')}"

    def _no_leader(self, what: str, waited: float, unreachable: dict[str, str]) -> str:
        known = len(set(self.endpoints.values()) | {self.config.endpoint})
        message = f"{_prefix(what)}no leader after {waited:.0f}s"
        if unreachable:
            message += f"; {len(unreachable)} of {known} servers unreachable"
            if len(unreachable) * 2 >= known:
                message += " (fewer than a majority up: the farm has no quorum)"
            message += " — " + "; ".join(sorted(unreachable.values()))[:400]
        return message

    def _next_target(self, tried: set[str]) -> str:
        for endpoint in self.endpoints.values():
            if endpoint not in tried:
                return endpoint
        tried.clear()
        return self.config.endpoint


def _prefix(what: str) -> str:
    """``what: `` before a message; nothing for an empty ``what`` (the caller names it already)."""
    return f"{what}: " if what else ""


def plain_reason(error: BaseException) -> str:
    """One line a person can read for a connection failure (never a Failure's or a list's repr)."""
    from twisted.internet import error as neterror  # noqa: PLC0415
    from twisted.internet.defer import CancelledError  # noqa: PLC0415

    if isinstance(error, neterror.ConnectionRefusedError):
        return "connection refused (is the node running and listening there?)"
    if isinstance(error, neterror.DNSLookupError):
        return f"cannot resolve the host name ({error.args[0] if error.args else ''})".replace(" ()", "")
    if isinstance(error, neterror.TimeoutError | neterror.ConnectingCancelledError | CancelledError):
        return "timed out"
    text = str(error)
    for known in ("certificate verify failed", "tlsv1 alert unknown ca", "no peer certificate"):
        if known in text:
            return f"TLS refused: {known} (check [tls] ca and the peer's certificate)"
    if "Failure" in text or text.startswith("["):
        return type(error).__name__
    return text or type(error).__name__
