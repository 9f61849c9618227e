"""The chaos test's clients: each appends unique values, one at a time, and records what it learnt.

Every attempt is one operation with a fresh value, so that an outcome is never ambiguous between two
attempts: an answer with ``accepted`` is OK (with the index), ``accepted=False`` is FAILED (a follower
redirecting, or a leader that lost the entry: definitely not committed), a request that was sent but
got no answer (timeout, connection lost) is UNKNOWN, and a request never sent is not recorded.
Clients talk to the nodes' real ports, not through the proxy.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.task import deferLater
from twisted.logger import Logger

from garlicfarm.config import NodeConfig
from garlicfarm.net.client import FarmClient
from garlicfarm.net.connection import ClientConnection
from garlicfarm.sim.history import ClientOp, Outcome
from garlicfarm.wire import NO_LEADER, Application, ClientRequest, LogEntry


@attrs.define
class Tally:
    ok: int = 0
    failed: int = 0
    unknown: int = 0


class Workload:
    log = Logger()

    def __init__(
        self,
        reactor: Any,
        config: NodeConfig,
        endpoints: dict[int, str],
        run_id: str,
        clients: int,
        request_timeout: float = 5.0,
        think: float = 0.02,
        clock_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.reactor = reactor
        self.config = config
        self.endpoints = endpoints
        self.run_id = run_id
        self.clients = clients
        self.timeout = request_timeout
        self.think = think
        self.clock_ns = clock_ns
        self.ops: list[ClientOp] = []
        self.tally = Tally()
        self.running = False
        self._done: list[Deferred[None]] = []

    def start(self) -> None:
        self.running = True
        ids = sorted(self.endpoints)
        for c in range(self.clients):
            d = Deferred.fromCoroutine(self._client(c, ids[c % len(ids)]))
            d.addErrback(lambda f: self.log.failure("chaos client crashed", f))
            self._done.append(d)

    async def stop(self) -> None:
        """Stop issuing operations and wait for those in flight (each ends within its timeout)."""
        self.running = False
        for d in self._done:
            d.addTimeout(3 * self.timeout + 5.0, self.reactor)
            with contextlib.suppress(Exception):
                await d

    async def _client(self, c: int, target: int) -> None:
        client = FarmClient(self.reactor, self.config, timeout=self.timeout)
        connection: ClientConnection | None = None
        seq = 0
        failures = 0
        while self.running:
            if connection is not None and not getattr(connection.transport, "connected", False):
                # Closed while idle (its node was killed): ClientConnection.request on a lost
                # connection would wait for its timeout, so reconnect instead.
                connection = None
            if connection is None:
                try:
                    connection = await self._connect(client, target)
                except Exception:
                    target = self._next(target)
                    failures += 1
                    await self._sleep(min(0.05 * failures, 1.0))
                    continue
            seq += 1
            value = f'{{"chaos":"{self.run_id}","c":{c},"n":{seq}}}'.encode()
            request = ClientRequest(entries=(LogEntry(0, Application(value)),))
            op = ClientOp(c, seq, value, call=self.clock_ns())
            self.ops.append(op)
            pending = connection.request(request, timeout=self.timeout)
            # Our own deadline too: whatever happens to the connection, a client never hangs.
            pending.addTimeout(self.timeout + 2.0, self.reactor)
            try:
                response = await pending
            except Exception:
                op.ret, op.outcome = self.clock_ns(), Outcome.UNKNOWN
                self.tally.unknown += 1
                self._drop(connection)
                connection = None
                target = self._next(target)
                continue
            op.ret = self.clock_ns()
            if response.accepted:
                op.outcome, op.index = Outcome.OK, response.next_index - 1
                self.tally.ok += 1
                failures = 0
                if self.think:
                    await self._sleep(self.think)
                continue
            op.outcome = Outcome.FAILED
            self.tally.failed += 1
            leader = response.destination
            if leader not in (NO_LEADER, response.source) and leader in self.endpoints:
                new_target = leader
            else:
                failures += 1
                new_target = self._next(target) if leader == NO_LEADER else target
                await self._sleep(min(0.05 * failures, 1.0))
            if new_target != target:
                self._drop(connection)
                connection, target = None, new_target

    async def _connect(self, client: FarmClient, target: int) -> ClientConnection:
        d: Deferred[ClientConnection] = Deferred.fromCoroutine(client.connect(self.endpoints[target]))
        d.addTimeout(self.timeout, self.reactor)
        return await d

    def _next(self, target: int) -> int:
        ids = sorted(self.endpoints)
        return ids[(ids.index(target) + 1) % len(ids)]

    async def _sleep(self, seconds: float) -> None:
        await deferLater(self.reactor, seconds, lambda: None)

    @staticmethod
    def _drop(connection: ClientConnection) -> None:
        transport = connection.transport
        if transport is not None and not getattr(transport, "disconnecting", False):
            # A TLS transport torn down already raises on a second abort: that is not our concern here.
            with contextlib.suppress(Exception):
                transport.abortConnection()  # type: ignore[attr-defined]
