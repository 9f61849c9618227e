"""Unsigned Meta LS publisher hooks: hand the Meta LS2 contents to whatever signs and publishes them
(the signing publishers are garlicfarm.router.i2cp and garlicfarm.router.signed). The chosen member
hands on one JSON document (docs/router.md, "Meta LS publishers")::

    {"master": "<master destination>", "publishing": true,
     "leases": [{"destination": "<leaf>", "weight": 100}, ...], "published": <ms since the epoch>}

and ``stop`` writes the same shape with ``"publishing": false`` and no leases.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred, DeferredLock, fail, succeed
from twisted.internet.error import ProcessDone, ProcessExitedAlready, ProcessTerminated
from twisted.internet.interfaces import IDelayedCall, IReactorProcess, IReactorTime
from twisted.internet.protocol import ProcessProtocol
from twisted.logger import Logger
from twisted.python.failure import Failure

from garlicfarm.router.interface import MetaLease

if TYPE_CHECKING:  # the HTTP publisher's client (twisted.web) is imported when one is made
    from twisted.web.iweb import IAgent

_log = Logger()
#: How much of a failed command's stderr goes into the error message.
STDERR_EXCERPT = 500


class PublishError(Exception):
    """A hook could not hand the document over; the message says where and why."""


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


def document(
    master: str, contents: Sequence[MetaLease], published_ms: int, *, publishing: bool = True
) -> dict[str, Any]:
    return {
        "master": master,
        "publishing": publishing,
        "leases": [{"destination": lease.destination, "weight": lease.weight} for lease in contents],
        "published": published_ms,
    }


def encode(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


class _DocumentPublisher:
    """publish/stop in terms of one ``_deliver(document bytes)``, one delivery at a time: a slow
    ``publish`` must not land after the ``stop`` that followed it."""

    def __init__(self, clock_ms: Callable[[], int] | None) -> None:
        self._clock_ms = clock_ms or wall_clock_ms
        self._lock = DeferredLock()

    def publish(self, master: str, contents: tuple[MetaLease, ...]) -> Deferred[None]:
        return self._run(encode(document(master, contents, self._clock_ms())))

    def stop(self, master: str) -> Deferred[None]:
        return self._run(encode(document(master, (), self._clock_ms(), publishing=False)))

    def _run(self, data: bytes) -> Deferred[None]:
        return self._lock.run(self._deliver, data)

    def _deliver(self, data: bytes) -> Deferred[None]:
        raise NotImplementedError


class NullPublisher(_DocumentPublisher):
    """Publishes nothing, only logs (``[publisher] kind = "none"``)."""

    def __init__(self, clock_ms: Callable[[], int] | None = None) -> None:
        super().__init__(clock_ms)

    def _deliver(self, data: bytes) -> Deferred[None]:
        _log.info("Meta LS document (not published anywhere): {document}", document=data.decode().strip())
        return succeed(None)


class FilePublisher(_DocumentPublisher):
    """Writes the document to ``path`` atomically (a temporary file in the same directory, fsync,
    rename, fsync of the directory): a reader sees the old document or the new one, never a mix.
    ``stop`` writes ``"publishing": false`` rather than removing the file, so a watcher sees the change."""

    def __init__(self, path: Path, clock_ms: Callable[[], int] | None = None) -> None:
        super().__init__(clock_ms)
        self.path = Path(path)

    def _deliver(self, data: bytes) -> Deferred[None]:
        try:
            write_atomically(self.path, data)
        except OSError as e:
            return fail(PublishError(f"{self.path}: cannot write the Meta LS document: {e.strerror or e}"))
        return succeed(None)


def write_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    directory = path.parent
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    # The rename itself is durable only once the directory is synced.
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class CommandPublisher(_DocumentPublisher):
    """Runs ``argv`` (no shell) with the document on stdin, for publish and for stop alike. Exit status
    0 is success; anything else, or no exit within ``timeout`` seconds (the command is then killed),
    fails with :class:`PublishError` carrying the end of its stderr."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        reactor: Any = None,
        timeout: float = 30.0,
        env: dict[str, str] | None = None,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(clock_ms)
        if not argv:
            raise ValueError("CommandPublisher needs a command")
        if reactor is None:
            from twisted.internet import reactor as default_reactor  # noqa: PLC0415 -- the global reactor, late

            reactor = default_reactor
        self.argv = tuple(argv)
        self.timeout = timeout
        self.env = env if env is not None else dict(os.environ)
        self._reactor = reactor

    def _deliver(self, data: bytes) -> Deferred[None]:
        protocol = _Feed(data, self._reactor, self.timeout, self.argv[0])
        try:
            process: IReactorProcess = self._reactor
            process.spawnProcess(protocol, self.argv[0], self.argv, env=self.env)
        except OSError as e:
            return fail(PublishError(f"cannot run {self.argv[0]}: {e.strerror or e}"))
        return protocol.done


class _Feed(ProcessProtocol):
    def __init__(self, data: bytes, clock: IReactorTime, timeout: float, name: str) -> None:
        self.data = data
        self.name = name
        self.stderr = b""
        self.done: Deferred[None] = Deferred()
        self.timed_out = False
        self.timeout = timeout
        self._clock = clock
        self._timer: IDelayedCall | None = None

    def connectionMade(self) -> None:
        # Only now: spawnProcess may still raise (no such program), and then no timer may be left behind.
        self._timer = self._clock.callLater(self.timeout, self._kill)
        assert self.transport is not None
        self.transport.write(self.data)
        self.transport.closeStdin()

    def errReceived(self, data: bytes) -> None:
        self.stderr = (self.stderr + data)[-STDERR_EXCERPT:]  # keep the end: that is where errors are

    def _kill(self) -> None:
        self.timed_out = True
        assert self.transport is not None
        with contextlib.suppress(ProcessExitedAlready):  # it ended on its own meanwhile
            self.transport.signalProcess("KILL")

    def processEnded(self, reason: Failure) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        excerpt = self.stderr.decode("utf-8", "replace").strip()
        detail = f": {excerpt}" if excerpt else ""
        if self.timed_out:
            self.done.errback(
                PublishError(f"{self.name} did not finish within {self.timeout:g} s; killed{detail}")
            )
        elif reason.check(ProcessDone):
            self.done.callback(None)
        elif isinstance(value := reason.value, ProcessTerminated):
            how = f"exit status {value.exitCode}" if value.exitCode is not None else f"signal {value.signal}"
            self.done.errback(PublishError(f"{self.name} failed ({how}){detail}"))
        else:
            self.done.errback(PublishError(f"{self.name} failed: {reason.getErrorMessage()}{detail}"))


class URLPublisher(_DocumentPublisher):
    """POSTs the document (``Content-Type: application/json``) to ``url``; any status but 2xx fails.
    https URLs are verified the usual way (system trust store, host name)."""

    def __init__(
        self,
        url: str,
        *,
        reactor: Any = None,
        timeout: float = 10.0,
        agent: IAgent | None = None,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(clock_ms)
        if reactor is None:
            from twisted.internet import reactor as default_reactor  # noqa: PLC0415 -- the global reactor, late

            reactor = default_reactor
        self.url = url
        self.timeout = timeout
        self._reactor = reactor
        if agent is None:
            from twisted.web.client import Agent  # noqa: PLC0415 - only for an HTTP publisher

            agent = Agent(reactor, connectTimeout=timeout)  # type: ignore[no-untyped-call]
        self._agent: IAgent = agent

    def _deliver(self, data: bytes) -> Deferred[None]:
        from garlicfarm.router.i2pcontrol_http import RequestFailed, post  # noqa: PLC0415

        d = post(self._agent, self._reactor, self.url, data, timeout=self.timeout, max_size=64 * 1024)

        def failed(failure: Failure) -> None:
            failure.trap(RequestFailed)
            raise PublishError(f"POST {self.url}: {failure.getErrorMessage()}")

        return d.addCallbacks(lambda _: None, failed)
