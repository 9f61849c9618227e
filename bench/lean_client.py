"""A lean external load generator: single-entry ClientRequests pipelined on one authenticated TLS
connection, with none of the client library's bookkeeping (a Deferred, a deadline and a decoded
message per request).

It measures the server: what a farm commits when its client costs next to nothing, as a JRaft
client written in C or Java would. It authenticates exactly as any client does (HTTP upgrade,
Digest), then writes the same pre-encoded request over and over and reads the 26-byte responses
by their ``accepted`` byte; a response that is not a well-formed accepted answer counts as a
failure. Latency is submit -> answer, one timestamp per batch of requests written together.
"""

from __future__ import annotations

import os
import struct
import time
from collections import deque
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.protocol import Factory, Protocol, connectionDone
from twisted.python.failure import Failure

from garlicfarm.handshake.cache import ChallengeCache
from garlicfarm.handshake.client import ClientHandshake
from garlicfarm.handshake.config import ClientConfig
from garlicfarm.handshake.events import Failed, Reconnect, Upgraded
from garlicfarm.net.connection import no_delay
from garlicfarm.net.endpoints import client_endpoint
from garlicfarm.wire.types import RESPONSE_SIZE, MessageType

#: JRaft answers a ClientRequest with an AppendEntriesResponse
_CLIENT_RESPONSE = int(MessageType.APPEND_ENTRIES_RESPONSE)
_TYPE_AND_ACCEPTED = struct.Struct(f"B{RESPONSE_SIZE - 2}xB")


class LeanLoad(Protocol):
    """Keeps ``window`` copies of ``frame`` in flight for ``seconds`` once the handshake is done."""

    def __init__(
        self, reactor: Any, config: ClientConfig, cache: ChallengeCache, frame: bytes, window: int
    ) -> None:
        self.reactor = reactor
        self.config = config
        self.cache = cache
        self.frame = frame
        self.window = window
        self._handshake: ClientHandshake | None = None
        self._buf = b""
        #: (time written, how many) per batch of requests still unanswered, oldest first
        self._sent: deque[list[float]] = deque()
        self._end = 0.0
        self._started = 0.0
        self.latencies: list[float] = []
        self.failures = 0
        self.upgraded: Deferred[bool] = Deferred()  # False: ask again (the challenge is cached now)
        self.done: Deferred[dict[str, float]] = Deferred()

    def connectionMade(self) -> None:
        no_delay(self.transport)
        self._handshake = ClientHandshake(self.config, self.cache, self.reactor.seconds(), os.urandom)
        self.transport.write(self._handshake.initiate())  # type: ignore[union-attr]

    def run(self, seconds: float) -> Deferred[dict[str, float]]:
        self._started = time.perf_counter()
        self._end = self._started + seconds
        self._send(self.window)
        return self.done

    def _send(self, n: int) -> None:
        self._sent.append([time.perf_counter(), n])
        self.transport.write(self.frame * n)  # type: ignore[union-attr]

    def dataReceived(self, data: bytes) -> None:
        if self._handshake is not None:
            for event in self._handshake.receive_data(data, self.reactor.seconds()):
                if isinstance(event, Upgraded):
                    self._handshake = None
                    self._buf = event.leftover
                    self.upgraded.callback(True)
                elif isinstance(event, Reconnect | Failed):
                    self.transport.loseConnection()  # type: ignore[union-attr]
                    if isinstance(event, Failed):
                        self.upgraded.errback(RuntimeError(f"handshake failed: {event}"))
                    else:
                        self.upgraded.callback(False)
            return
        buf = self._buf + data
        whole = len(buf) - len(buf) % RESPONSE_SIZE
        self._buf = buf[whole:]
        now = time.perf_counter()
        for kind, accepted in _TYPE_AND_ACCEPTED.iter_unpack(buf[:whole]):
            if kind != _CLIENT_RESPONSE or accepted != 1:
                self.failures += 1
            self._answered(now)
        if now < self._end:
            self._send(whole // RESPONSE_SIZE)
        elif not self._sent and not self.done.called:
            self.transport.loseConnection()  # type: ignore[union-attr]
            self.done.callback({"elapsed": now - self._started})

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        """A farm that drops the connection ends the run with an error instead of leaving it waiting."""
        why = RuntimeError(f"connection lost: {reason.getErrorMessage()}")
        if not self.upgraded.called:
            self.upgraded.errback(why)
        elif self._started and not self.done.called:  # a run under way (not a handshake's reconnect)
            self.done.errback(why)

    def _answered(self, now: float) -> None:
        batch = self._sent[0]
        self.latencies.append(now - batch[0])
        batch[1] -= 1
        if batch[1] == 0:
            self._sent.popleft()


async def connect(reactor: Any, uri: str, tls: Any, load: LeanLoad) -> LeanLoad:
    """Connect ``load`` to ``uri``; the farm client's cached Digest challenge lets it straight in."""
    factory = Factory.forProtocol(lambda: load)
    factory.noisy = False
    await client_endpoint(reactor, uri, tls).connect(factory)
    if not await load.upgraded:
        raise RuntimeError(f"{uri} challenged again: the Digest challenge was not cached")
    return load
