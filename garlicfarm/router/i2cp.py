"""Publishing the Meta LS2 through the local router's I2CP (``[publisher] kind = "i2cp"``).

One connection and one session under the master destination while this member is the publisher:
protocol byte and GetDate, CreateSession, then CreateLeaseSet2 of store type 7 on each publish and
again before the Meta LS2 expires (each ``published`` at least a second after the last). ``stop`` —
another member took over — sends DestroySession and closes the connection. A router that is gone or
refuses the session is logged once per kind of failure and retried with backoff; nothing here raises
into the reactor.

The session config: signed by the master key when this member holds it; for an offline-signed member,
signed by the transient key with the offline block in its options (Java I2P), unless a config the
master signed ahead of time is given (``garlicfarm keys session``): i2pd checks a session config only
against the destination's own key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred, DeferredLock, succeed
from twisted.internet.defer import TimeoutError as DeferredTimeout
from twisted.internet.endpoints import connectProtocol
from twisted.internet.error import ConnectError
from twisted.internet.interfaces import IDelayedCall, IStreamClientEndpoint
from twisted.internet.protocol import Protocol, connectionDone
from twisted.logger import Logger
from twisted.python.failure import Failure

from garlicfarm.i2p import i2cp
from garlicfarm.i2p.build import OfflineExpired
from garlicfarm.i2p.errors import I2PFormatError
from garlicfarm.i2p.keys import PrivateKeyFile
from garlicfarm.i2p.mapping import Pairs
from garlicfarm.router.interface import MetaLease
from garlicfarm.router.publishers import PublishError
from garlicfarm.router.signed import RENEW_AT, MetaLSSigner

_log = Logger()
#: retry delays after a failure: doubling from the first to the last
BACKOFF = (1.0, 60.0)
#: and, on a new session, again after these many seconds (each after the one before)
EARLY_RESENDS = (30.0, 60.0, 120.0)


class RouterGone(Exception):
    pass


class I2CPConnection(Protocol):
    """One I2CP connection, client side: answers are matched to waiters by message type."""

    def __init__(self, auth: Pairs | None, on_request: Callable[[], None]) -> None:
        self._framer = i2cp.Framer()
        self._auth = auth
        self._on_request = on_request
        self._waiters: dict[int, list[Deferred[i2cp.Message]]] = {}
        self.reason: str | None = None
        self.lost: Deferred[None] = Deferred()

    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.write(i2cp.PROTOCOL_BYTE + i2cp.get_date(self._auth))

    def wait(self, kind: int) -> Deferred[i2cp.Message]:
        d: Deferred[i2cp.Message] = Deferred()
        self._waiters.setdefault(kind, []).append(d)
        return d

    def send(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.loseConnection()

    def dataReceived(self, data: bytes) -> None:
        try:
            for kind, payload in self._framer.feed(data):
                self._dispatch(kind, i2cp.parse(kind, payload))
        except I2PFormatError as e:
            self.reason = f"the router sent malformed I2CP: {e}"
            self.close()

    def _dispatch(self, kind: int, message: i2cp.Message) -> None:
        if isinstance(message, i2cp.Disconnect):
            self.reason = f"the router disconnected: {message.reason or 'no reason given'}"
            self.close()
        elif isinstance(message, i2cp.RequestLeaseSet):
            self._on_request()
        waiters = self._waiters.get(kind)
        if waiters:
            waiters.pop(0).callback(message)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        why = self.reason or f"connection lost: {reason.getErrorMessage()}"
        waiters, self._waiters = self._waiters, {}
        for pending in waiters.values():
            for d in pending:
                d.errback(RouterGone(why))
        self.lost.callback(None)


class I2CPPublisher:
    """:class:`MetaLSPublisher` over I2CP. ``endpoint`` reaches the router's I2CP port."""

    def __init__(
        self,
        reactor: Any,
        endpoint: IStreamClientEndpoint,
        keys: PrivateKeyFile,
        *,
        expires: int = 3600,
        session_config: i2cp.SessionConfig | None = None,
        auth: Pairs | None = None,
        timeout: float = 30.0,
        where: str = "I2CP",
    ) -> None:
        self.reactor = reactor
        self.endpoint = endpoint
        self.signer = MetaLSSigner(keys, expires, reactor.seconds)
        self.keys = keys
        self.session_config = session_config
        self.auth = auth
        self.timeout = timeout
        self.where = where
        self.state = "idle"
        self.last_error: str | None = None
        self._lock = DeferredLock()
        self._conn: I2CPConnection | None = None
        self._session: int | None = None
        self._contents: tuple[MetaLease, ...] | None = None
        self._timer: IDelayedCall | None = None
        self._delay = BACKOFF[0]
        self._sends = 0
        if session_config is not None and session_config.destination != keys.destination:
            raise ValueError("the session config is not for this key file's destination")

    # -- MetaLSPublisher
    def publish(self, master: str, contents: tuple[MetaLease, ...]) -> Deferred[None]:
        self._contents = contents
        return self._lock.run(self._publish_now)

    def stop(self, master: str) -> Deferred[None]:
        self._contents = None
        return self._lock.run(self._stop_now)

    def status(self) -> dict[str, Any]:
        return {"state": self.state, "router": self.where, "error": self.last_error, **self.signer.status()}

    # -- inside
    def _publish_now(self) -> Deferred[None]:
        return Deferred.fromCoroutine(self._publish())

    async def _publish(self) -> None:
        self._cancel_timer()
        if self._contents is None:
            return
        try:
            session = await self._ensure_session()
            if self._stopped():  # while the session was made: stop destroys it next
                return
            metals = self.signer.sign(self._contents)
            assert self._conn is not None
            self._conn.send(i2cp.create_leaseset2(session, metals))
            self.signer.published(metals)
        except (OfflineExpired, RouterGone, OSError) as e:
            self._failed(e)
            self._retry()
            raise PublishError(f"{self.where}: {self.last_error}") from None
        except Exception as e:
            # A bug, not the router: a traceback once, and the publisher keeps trying (no dead timer).
            _log.failure("Meta LS2: publishing over I2CP failed unexpectedly")
            self._failed(e)
            self._retry()
            raise PublishError(f"{self.where}: {self.last_error}") from None
        self.state = "published"
        self.last_error = None
        self._delay = BACKOFF[0]
        # Sent again soon at first: a router may ask for it before its tunnels are up, fail to publish
        # ("not ready") and not try again by itself (seen with i2pd); then at half its lifetime.
        early = EARLY_RESENDS[self._sends] if self._sends < len(EARLY_RESENDS) else None
        self._sends += 1
        renew = max(1.0, metals.expires * RENEW_AT)
        self._schedule(min(renew, early) if early is not None else renew, "renew")
        _log.info(
            "Meta LS2 of {master} sent to the router over I2CP: {n} leases, published {published}, "
            "expires {expires}",
            master=self.keys.destination.b32,
            n=len(metals.leases),
            published=metals.published,
            expires=metals.expires_at,
        )

    async def _ensure_session(self) -> int:
        if self._conn is not None and self._session is not None:
            return self._session
        self.state = "connecting"
        conn = I2CPConnection(self.auth, self._router_asks)
        try:
            await self._timed(connectProtocol(self.endpoint, conn), "connect")
        except ConnectError as e:
            raise RouterGone(
                f"cannot connect: {e} (is the router running, with I2CP on that port?)"
            ) from None
        self._conn = conn
        conn.lost.addCallback(self._connection_lost, conn)
        await self._timed(conn.wait(i2cp.SET_DATE), "GetDate")
        status = conn.wait(i2cp.SESSION_STATUS)
        conn.send(i2cp.create_session(self._session_config()))
        answer = await self._timed(status, "CreateSession")
        assert isinstance(answer, i2cp.SessionStatus)
        if answer.name != "created":
            conn.close()
            raise RouterGone(f"the router answered CreateSession with '{answer.name}'")
        self._session = answer.session_id
        self._sends = 0
        return answer.session_id

    def _session_config(self) -> i2cp.SessionConfig:
        if self.session_config is not None:
            return self.session_config
        date_ms = int(self.reactor.seconds() * 1000)
        return i2cp.SessionConfig.create(
            self.keys.destination, self.keys.signer, date_ms, i2cp.SESSION_OPTIONS, self.keys.offline
        )

    async def _timed(self, d: Deferred[Any], what: str) -> Any:
        d.addTimeout(self.timeout, self.reactor)
        try:
            return await d
        except DeferredTimeout:
            raise RouterGone(f"no answer to {what} within {self.timeout:g} s") from None

    def _router_asks(self) -> None:
        """RequestVariableLeaseSet: the router wants a leaseset for the session; it gets the Meta LS2."""
        if self._contents is not None and not self._lock.locked:
            self._lock.run(self._publish_now).addErrback(self._after_timer, "answer to the router")

    def _stopped(self) -> bool:
        """``stop`` came after the last ``publish`` (a method: mypy keeps attributes narrowed over awaits)."""
        return self._contents is None

    def _stop_now(self) -> Deferred[None]:
        self._cancel_timer()
        conn, session = self._conn, self._session
        self._conn = self._session = None
        self.signer.withdraw()
        self.state = "stopped"
        if conn is not None:
            if session is not None:
                conn.send(i2cp.destroy_session(session))
            conn.close()
            _log.info("Meta LS2 of {master}: I2CP session closed", master=self.keys.destination.b32)
        return succeed(None)

    def _connection_lost(self, _: None, conn: I2CPConnection) -> None:
        if conn is not self._conn:
            return
        self._conn = self._session = None
        if self._contents is not None:
            self._failed(RouterGone(conn.reason or "the router closed the I2CP connection"))
            self._retry()

    def _failed(self, error: Exception) -> None:
        message = str(error) or type(error).__name__
        if message != self.last_error:  # once per kind of failure, not once per retry
            _log.error("Meta LS2 of {master}: {error}", master=self.keys.destination.b32, error=message)
        self.last_error = message
        self.state = "failing"
        if self._conn is not None:
            self._conn.close()
        self._conn = self._session = None

    def _retry(self) -> None:
        self._schedule(self._delay, "retry")
        self._delay = min(self._delay * 2, BACKOFF[1])

    def _schedule(self, delay: float, why: str) -> None:
        self._cancel_timer()
        self._timer = self.reactor.callLater(delay, self._fire, why)

    def _fire(self, why: str) -> None:
        self._timer = None
        if self._contents is not None:
            self._lock.run(self._publish_now).addErrback(self._after_timer, why)

    def _after_timer(self, failure: Failure, why: str) -> None:
        # A PublishError was logged (once per kind) and the next try scheduled; anything else is a bug
        # worth a traceback, and the node keeps running.
        if not failure.check(PublishError):
            _log.failure("Meta LS2: the I2CP {why} failed", failure, why=why)

    def _cancel_timer(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
