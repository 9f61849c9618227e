"""Garlic Farm connections: the HTTP upgrade handshake, then the binary protocol.

Server side: every request gets exactly one response, written in the order the requests came (FIFO),
however the answers complete. Client side: requests are pipelined and responses matched first-in
first-out; a request that times out breaks that matching, so the connection is dropped.

Limits (handshake deadline, idle timeout, pipelined requests, buffered bytes) drop the connection
with a logged reason; the node carries on.
"""

from __future__ import annotations

import contextlib
import os
import sys
import typing
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IHandshakeListener, IReactorTime
from twisted.internet.protocol import Protocol
from twisted.logger import Logger, LogLevel
from twisted.python.failure import Failure
from zope.interface import implementer

from garlicfarm.handshake import (
    FEATURES_HEADER,
    Authenticated,
    ChallengeCache,
    ClientConfig,
    ClientHandshake,
    Close,
    Failed,
    NonceRegistry,
    Reconnect,
    Reject,
    Rejected,
    SendBytes,
    ServerConfig,
    ServerHandshake,
    Upgraded,
    parse_features,
)
from garlicfarm.net.budget import BufferBudget, RateLimitedLog
from garlicfarm.net.identity import PEER_REQUESTS, certificate_name, server_of_name
from garlicfarm.net.refusals import Refusal, RefusalCounts
from garlicfarm.net.watchdog import Watchdog
from garlicfarm.raft.driver import NodeStopped
from garlicfarm.wire import (
    AddServerRequest,
    Decoder,
    Limits,
    Message,
    ProtocolError,
    Request,
    Response,
    encode,
)


def no_delay(transport: object) -> None:
    """Turn Nagle's algorithm off where the transport is TCP (TLS wraps it and passes the call on).

    Pipelined requests and answers are small writes with unacknowledged data in flight: with Nagle
    on, each waits for the peer's delayed ACK (40 ms on Linux), which caps a link at a few hundred
    round trips a second.
    """
    set_no_delay = getattr(transport, "setTcpNoDelay", None)
    if set_no_delay is not None:
        # not a TCP socket after all (a UNIX socket, a proxy's pipe): nothing to tune
        with contextlib.suppress(OSError):
            set_no_delay(True)


@attrs.frozen
class ConnectionLimits:
    handshake_timeout: float = 10.0
    #: inbound links that carry nothing for this long are dropped (generous: Raft needs idle links
    #: for votes, and peers reconnect on demand anyway)
    idle_timeout: float = 600.0
    #: requests received but not yet answered on one connection
    max_pipelined: int = 1024
    #: a response that takes longer than this (e.g. a client request whose fate is unknown) ends the
    #: connection, so that the FIFO order is never stuck behind it
    response_timeout: float = 30.0
    #: AddServerRequest is answered only once the new server has caught up (a large log takes
    #: minutes); the leader itself gives up on a join that stops making progress
    join_response_timeout: float = 3600.0
    #: an outbound peer link's requests still waiting for answers, in bytes (ClientConnection's flow
    #: control: what a peer that stops reading can cost, beside one socket buffer)
    max_unanswered_bytes: int = 8 * 1024 * 1024
    wire: Limits = Limits()


class ConnectionClosed(Exception):
    """The connection closed before a response came."""


class RequestTimeout(Exception):
    """No response in time; the connection was dropped (FIFO matching cannot survive a gap)."""


class NotConnected(Exception):
    """No connection to that peer yet."""


RequestHandler = Callable[[Request], Deferred[Response]]


class Admission(typing.Protocol):
    """What a listener shares among its connections (:class:`garlicfarm.net.inbound.InboundFactory`)."""

    #: partly received messages of all connections
    budget: BufferBudget
    #: rate-limited lines for what strangers can cause in bulk
    events: RateLimitedLog
    #: refused and dropped connections by reason (a fixed set), for the metrics endpoint
    refusals: RefusalCounts

    def admit(self, connection: ServerConnection) -> str | None:
        """The connection authenticated; a reason to close it instead, or None."""

    def closed(self, connection: ServerConnection) -> None:
        """The connection is gone."""


def tls_failure(reason: Failure) -> tuple[str, str] | None:
    """If the connection ended in a failed TLS handshake: the kind of failure (one of a few, to count
    alike failures together) and its description. Else None."""
    ssl = sys.modules.get("OpenSSL.SSL")  # not loaded: no TLS, so no TLS failure either
    error = reason.value
    if ssl is not None and isinstance(error, ssl.Error):
        details = error.args[0] if error.args else None
        if isinstance(details, list) and details:
            text = "; ".join(str(part[-1]) for part in details if isinstance(part, tuple) and part)
        else:
            text = str(error) or type(error).__name__
        return text[:100], text  # OpenSSL's reasons are a fixed set
    tls_errors = sys.modules.get("garlicfarm.tls.errors")
    if tls_errors is not None and isinstance(error, tls_errors.UnpinnedPeer):
        return "unpinned", str(error)  # one kind, whatever the fingerprint
    return None


#: handshake refusals that are the normal path (answered with a fresh challenge)
_ROUTINE = frozenset({Reject.NO_CREDENTIALS, Reject.STALE_NONCE})


@implementer(IHandshakeListener)
class ServerConnection(Protocol):
    """An inbound connection: authenticate the peer, then serve its requests in order."""

    log = Logger()

    def __init__(
        self,
        reactor: IReactorTime,
        config: ServerConfig,
        nonces: NonceRegistry,
        handler: RequestHandler,
        limits: ConnectionLimits,
        extra_headers: Callable[[], Sequence[tuple[str, str]]] = tuple,
        on_close: Callable[[ServerConnection], None] = lambda _c: None,
        admission: Admission | None = None,
    ) -> None:
        self.reactor = reactor
        self.limits = limits
        self._handler = handler
        self._on_close = on_close
        self._admission = admission
        self._handshake: ServerHandshake | None = ServerHandshake(config, nonces, extra_headers())
        self._decoder: Decoder | None = None
        #: responses in request order; None until the answer is known
        self._slots: deque[list[Response | None]] = deque()
        #: one timer for the deadlines of every request still unanswered
        self._watchdog = Watchdog(reactor, self._drop)
        self._deadline: IDelayedCall | None = None
        self._idle: IDelayedCall | None = None
        self.peer_name = "?"
        self.username: str | None = None
        #: the TLS handshake is done (under mutual TLS: the peer holds a certificate we trust)
        self.tls_done = False
        #: the peer certificate's common name, and the server it names (garlicfarm.net.identity)
        self.certificate: str | None = None
        self.identity: int | None = None
        self._closing = False

    def connectionMade(self) -> None:
        no_delay(self.transport)
        peer = self.transport.getPeer() if self.transport else None
        self.peer_name = str(getattr(peer, "host", peer))
        self._deadline = self.reactor.callLater(
            self.limits.handshake_timeout, self._drop, "handshake timed out", None, Refusal.HANDSHAKE_TIMEOUT
        )

    def handshakeCompleted(self) -> None:
        self.tls_done = True
        self.certificate = certificate_name(self.transport)
        self.identity = server_of_name(self.certificate)

    def dataReceived(self, data: bytes) -> None:
        if self._closing:
            return
        self._touch()
        if self._handshake is not None:
            for event in self._handshake.receive_data(data, self.reactor.seconds()):
                if isinstance(event, SendBytes):
                    self.transport.write(event.data)  # type: ignore[union-attr]
                elif isinstance(event, Close):
                    self._closing = True
                    self.transport.loseConnection()  # type: ignore[union-attr]
                elif isinstance(event, Rejected) and event.reason in _ROUTINE:
                    # a new peer's first request, or one holding a nonce from before our restart:
                    # the challenge that follows is the normal path, not worth an info line
                    self.log.debug("challenge sent to {peer}: {why}", peer=self.peer_name, why=event)
                elif isinstance(event, Rejected):
                    why = str(event)
                    self._count(Refusal.HANDSHAKE)
                    self._note("rejected", "handshake from {peer} refused: {why}", LogLevel.info, why=why)
                elif isinstance(event, Authenticated):
                    self._upgraded(event)
            return
        self._feed(data)

    def _upgraded(self, event: Authenticated) -> None:
        self._handshake = None
        self.username = event.username
        self._cancel(self._deadline)
        self._decoder = Decoder(self.limits.wire)
        self.log.debug("{peer} authenticated as {user}", peer=self.peer_name, user=event.username)
        refusal = self._admission.admit(self) if self._admission is not None else None
        if refusal is not None:
            self._drop(refusal, key="over budget", reason=Refusal.OVER_BUDGET)
            return
        if event.leftover:
            self._feed(event.leftover)

    def _feed(self, data: bytes) -> None:
        decoder = self._decoder
        assert decoder is not None
        try:
            decoder.feed(data)
            while (message := decoder.next_message()) is not None:
                self._serve(message)
                if self._closing:
                    return
        except ProtocolError as e:
            self._drop(f"malformed message: {e}", reason=Refusal.PROTOCOL)
            return
        budget = self._admission.budget if self._admission is not None else None
        if budget is not None and not budget.update(self, decoder.buffered):
            self._drop(
                f"a partly received message of {decoder.buffered} bytes would take the node's "
                f"partly received messages past {budget.limit} bytes ({budget.total} held)",
                key="buffer budget",
                reason=Refusal.BUFFER_BUDGET,
            )

    def _serve(self, message: Message) -> None:
        if not isinstance(message, Request):
            self._drop(f"a {type(message).__name__} where a request belongs", reason=Refusal.PROTOCOL)
            return
        if (
            self.identity is not None
            and isinstance(message, PEER_REQUESTS)
            and message.source != self.identity
        ):
            self._drop(
                f"a {type(message).__name__} from server {message.source}, over a connection whose "
                f"certificate ({self.certificate}) is server {self.identity}'s: one member posing as another",
                key="impersonation",
                reason=Refusal.IMPERSONATION,
            )
            return
        if len(self._slots) >= self.limits.max_pipelined:
            self._drop(
                f"more than {self.limits.max_pipelined} requests waiting for answers", reason=Refusal.PROTOCOL
            )
            return
        slot: list[Response | None] = [None]
        self._slots.append(slot)
        deadline = (
            self.limits.join_response_timeout
            if isinstance(message, AddServerRequest)
            else self.limits.response_timeout
        )
        token = self._watchdog.watch(deadline, f"no answer to a {type(message).__name__} in time")
        answer = self._handler(message)

        def answered(response: Response) -> None:
            self._watchdog.done(token)
            slot[0] = response
            self._flush()

        def failed(failure: Failure) -> None:
            self._watchdog.done(token)
            # a node that stops (SIGTERM, or a failure it has logged loudly) answers nothing more:
            # routine for the peers that still ask, nothing more to act on
            stopping = failure.check(NodeStopped) is not None
            self._drop(
                f"cannot answer a {type(message).__name__}: {failure.getErrorMessage()}",
                reason=Refusal.STOPPING if stopping else Refusal.OTHER,
            )

        answer.addCallbacks(answered, failed)

    def _flush(self) -> None:
        while self._slots and self._slots[0][0] is not None and not self._closing:
            response = self._slots.popleft()[0]
            assert response is not None
            self.transport.write(encode(response))  # type: ignore[union-attr]

    def _touch(self) -> None:
        if self._idle is not None and self._idle.active():
            self._idle.reset(self.limits.idle_timeout)
        else:
            self._idle = self.reactor.callLater(
                self.limits.idle_timeout,
                self._drop,
                f"idle for {self.limits.idle_timeout:g} s",
                None,
                Refusal.IDLE,
            )

    def _drop(self, why: str, key: str | None = None, reason: Refusal = Refusal.OTHER) -> None:
        if self._closing:
            return
        self._closing = True
        self._count(reason)
        if self.username is None:
            key = key or "unauthenticated"  # strangers can cause these in bulk: rate-limited
        # an idle link is routine (a quiet peer or client reconnects when it has something to send):
        # nothing for an operator to act on
        level = LogLevel.info if reason in (Refusal.IDLE, Refusal.STOPPING) else LogLevel.warn
        if key is None:
            self.log.emit(level, "dropping connection from {peer}: {why}", peer=self.peer_name, why=why)
        else:
            self._note(key, "dropping connection from {peer}: {why}", level, why=why)
        self._abort()

    def evict(self) -> None:
        """Close at once, quietly: the listener needs the room and logs it."""
        self._closing = True
        self._count(Refusal.EVICTED)
        self._abort()

    def _abort(self) -> None:
        if self.transport is not None:
            self.transport.abortConnection()  # type: ignore[attr-defined]

    def _count(self, reason: Refusal) -> None:
        if self._admission is not None:
            self._admission.refusals.count(reason)

    def _note(self, key: str, fmt: str, level: LogLevel = LogLevel.warn, **fields: Any) -> None:
        if self._admission is not None:
            self._admission.events.event(key, fmt, level, peer=self.peer_name, **fields)
        else:
            self.log.emit(level, fmt, peer=self.peer_name, **fields)

    @staticmethod
    def _cancel(call: IDelayedCall | None) -> None:
        if call is not None and call.active():
            call.cancel()

    def connectionLost(self, reason: Failure = ConnectionClosed) -> None:  # type: ignore[assignment]
        if self.username is None and not self._closing:
            failure = tls_failure(reason)
            if failure is not None:
                kind, why = failure
                self._count(Refusal.TLS)
                self._note(f"tls: {kind}", "TLS handshake from {peer} failed: {why}", why=why)
        self._closing = True
        self._cancel(self._deadline)
        self._cancel(self._idle)
        self._watchdog.stop()
        self._slots.clear()
        if self._admission is not None:
            self._admission.closed(self)
        self._on_close(self)


class Backpressure(NotConnected):
    """The peer is not taking what we send (too many bytes await answers):
    the request is not sent. Raft takes it as a lost message and sends again on its own schedule."""


class ClientConnection(Protocol):
    """An outbound connection: authenticate, then send requests and match responses in order.

    Flow control (``flow_control``, peer links): the connection counts the bytes of requests written
    and not answered yet, which include whatever its transport still holds. A request that would take
    them past ``limits.max_unanswered_bytes`` fails at once with :class:`Backpressure` instead of
    queueing (one request always goes): a peer that stops reading (stopped, or its packets dropped on
    the path) costs at most that much, however long it stalls, and the memory comes back when it
    answers or the link drops. (Not a registered producer: Twisted's TLS transport does not close
    while a producer is registered, and the cap already bounds what the transport holds.)
    """

    log = Logger()

    def __init__(
        self,
        reactor: IReactorTime,
        config: ClientConfig,
        cache: ChallengeCache,
        limits: ConnectionLimits,
        on_ready: Callable[[ClientConnection], None] = lambda _c: None,
        on_lost: Callable[[ClientConnection, str], None] = lambda _c, _why: None,
        random_bytes: Callable[[int], bytes] = os.urandom,
        *,
        flow_control: bool = False,
    ) -> None:
        self.reactor = reactor
        self.config = config
        self.flow_control = flow_control
        self.limits = limits
        self._cache = cache
        self._random_bytes = random_bytes
        self._on_ready = on_ready
        self._on_lost = on_lost
        self._handshake: ClientHandshake | None = None
        self._decoder: Decoder | None = None
        self._pending: deque[tuple[Deferred[Response], int, int]] = deque()
        #: bytes of the requests in ``_pending`` (sent, not answered yet)
        self.unanswered_bytes = 0
        #: one timer for every pending request's deadline
        self._watchdog = Watchdog(reactor, self._drop)
        self._deadline: IDelayedCall | None = None
        self.upgraded: Upgraded | None = None
        self.ready: Deferred[ClientConnection] = Deferred()
        self._why = "connection closed"
        #: why the handshake failed (a 401 to our credentials, a 404 ...), when it did
        self.handshake_failure: Failed | None = None
        self._dropping = False
        #: the connection is gone: requests fail at once (a caller may still hold it)
        self.lost = False
        #: it closed on the server's Digest challenge, to answer it on a new connection
        self.challenged = False

    def connectionMade(self) -> None:
        no_delay(self.transport)
        self._handshake = ClientHandshake(
            self.config, self._cache, self.reactor.seconds(), self._random_bytes
        )
        self.transport.write(self._handshake.initiate())  # type: ignore[union-attr]
        self._deadline = self.reactor.callLater(
            self.limits.handshake_timeout, self._drop, "handshake timed out"
        )

    def dataReceived(self, data: bytes) -> None:
        if self._handshake is not None:
            for event in self._handshake.receive_data(data, self.reactor.seconds()):
                if isinstance(event, Reconnect):
                    self._why = f"challenge received ({event.reason}); reconnecting"
                    self.challenged = True
                    self.transport.loseConnection()  # type: ignore[union-attr]
                elif isinstance(event, Failed):
                    self.handshake_failure = event
                    self._drop(f"handshake failed: {event}")
                elif isinstance(event, Upgraded):
                    self._upgraded(event)
            return
        self._feed(data)

    def _upgraded(self, event: Upgraded) -> None:
        self._handshake = None
        self.upgraded = event
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        self._decoder = Decoder(self.limits.wire)
        self._on_ready(self)
        self.ready.callback(self)
        if event.leftover:
            self._feed(event.leftover)

    @property
    def features(self) -> frozenset[str]:
        """What the peer's 101 said it speaks beyond JRaft's protocol (nothing from JRaft)."""
        if self.upgraded is None:
            return frozenset()
        return parse_features(self.upgraded.header(FEATURES_HEADER))

    def request(self, message: Request, timeout: float | None = None) -> Deferred[Response]:
        if self.lost:
            return _failed(ConnectionClosed(f"the connection is closed: {self._why}"))
        if self._decoder is None or self.transport is None:
            return _failed(NotConnected("the connection is not ready"))
        data = encode(message)
        if (
            self.flow_control
            and self._pending
            and self.unanswered_bytes + len(data) > self.limits.max_unanswered_bytes
        ):
            why = f"{self.unanswered_bytes} bytes await answers"
            return _failed(Backpressure(f"{self.config.host} is not taking more now: {why}"))
        d: Deferred[Response] = Deferred()
        token = self._watchdog.watch(
            timeout or self.limits.response_timeout, f"no response to a {type(message).__name__}"
        )
        self._pending.append((d, token, len(data)))
        self.unanswered_bytes += len(data)
        self.transport.write(data)
        return d

    def _feed(self, data: bytes) -> None:
        decoder = self._decoder
        assert decoder is not None
        try:
            decoder.feed(data)
            while (message := decoder.next_message()) is not None:
                if not isinstance(message, Response) or not self._pending:
                    self._drop(f"unexpected {type(message).__name__}")
                    return
                d, token, size = self._pending.popleft()
                self.unanswered_bytes -= size
                self._watchdog.done(token)
                d.callback(message)
        except ProtocolError as e:
            self._drop(f"malformed message: {e}")

    def _drop(self, why: str) -> None:
        if self._dropping or self.lost:
            return  # many requests time out together; TLS cannot be aborted twice
        self._dropping = True
        self._why = why
        self.log.info("dropping connection to {host}: {why}", host=self.config.host, why=why)
        if self.transport is not None:
            self.transport.abortConnection()  # type: ignore[attr-defined]

    def connectionLost(self, reason: Failure = ConnectionClosed) -> None:  # type: ignore[assignment]
        self.lost = True
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        pending, self._pending = self._pending, deque()
        self.unanswered_bytes = 0
        error = (
            RequestTimeout(self._why) if self._why.startswith("no response") else ConnectionClosed(self._why)
        )
        self._watchdog.stop()
        for d, _token, _size in pending:
            d.errback(error)
        if not self.ready.called:
            self.ready.errback(ConnectionClosed(self._why))
            self.ready.addErrback(lambda _f: None)
        self._on_lost(self, self._why)


def _failed(error: Exception) -> Deferred[Any]:
    d: Deferred[Any] = Deferred()
    d.errback(error)
    return d
