"""The unsigned publisher hooks' edges (garlicfarm.router.publishers), deterministic: the document's
bytes and the null publisher's log line word for word, the wall clock in ms, where and how the file
publisher's temporary file is made, the command publisher on a fake process reactor (argv, stdin and
environment, the default timeout and a kill that comes too late, every way a command can end, word for
word) and the URL publisher on a MemoryReactorClock (default timeout, connect timeout, the 64 KiB bound
on the answer), and that each uses the global reactor when given none."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path
from typing import Any, cast

import pytest
from twisted.internet import reactor as global_reactor
from twisted.internet.defer import Deferred, fail
from twisted.internet.error import (
    ConnectionRefusedError,
    ProcessDone,
    ProcessExitedAlready,
    ProcessTerminated,
)
from twisted.internet.interfaces import IProcessProtocol, IProcessTransport
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import capturedLogs, formatEvent
from twisted.python.failure import Failure
from twisted.web.iweb import IAgent
from zope.interface import implementer

from garlicfarm.router import publishers
from garlicfarm.router.interface import MetaLease
from garlicfarm.router.publishers import (
    CommandPublisher,
    FilePublisher,
    NullPublisher,
    URLPublisher,
    document,
    encode,
)
from tests.router.memory_http import Connection, response
from tests.router.outcomes import failure_text, outcome

LEASES = (MetaLease("leaf-a", 100), MetaLease("leaf-b", 7))
PUBLISHED = (
    b'{"master":"master-dest","publishing":true,"leases":[{"destination":"leaf-a","weight":100},'
    b'{"destination":"leaf-b","weight":7}],"published":1234}\n'
)
URL = "http://127.0.0.1:8080/metals"


def clock_ms() -> int:
    return 1234


def pending(d: Deferred[None]) -> bool:
    """Whether the Deferred has no result yet (its result, if any, is passed on untouched)."""
    results: list[Any] = []

    def keep(result: Any) -> Any:
        results.append(result)
        return result

    d.addBoth(keep)
    return not results


# -- the document


def test_document_bytes() -> None:
    """Compact JSON, UTF-8 rather than \\u escapes, one line."""
    assert encode(document("master-dest", LEASES, 1234)) == PUBLISHED
    assert encode(document("mäster", (), 5, publishing=False)) == (
        '{"master":"mäster","publishing":false,"leases":[],"published":5}\n'.encode()
    )


def test_wall_clock_in_milliseconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.25)
    assert publishers.wall_clock_ms() == 1_700_000_000_250


def test_null_publisher_logs_the_document() -> None:
    hook = NullPublisher(clock_ms=clock_ms)
    with capturedLogs() as events:
        assert outcome(hook.publish("master-dest", LEASES)) is None
    assert [formatEvent(e) for e in events] == [
        "Meta LS document (not published anywhere): " + PUBLISHED.decode().strip()
    ]


def test_null_publisher_stamps_with_the_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.25)
    with capturedLogs() as events:
        NullPublisher().stop("m")
    assert formatEvent(events[0]).endswith('"published":1700000000250}')


# -- the file


def test_temporary_file_is_hidden_beside_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Made in the target's directory (so the rename is atomic) as ``.NAME.<random>.tmp``; the file
    ends up with mode 0644 whatever the umask."""
    renamed: list[tuple[str, str]] = []
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        renamed.append((src, dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    path = tmp_path / "metals.json"
    old_umask = os.umask(0o077)
    try:
        outcome(FilePublisher(path, clock_ms=clock_ms).publish("master-dest", LEASES))
    finally:
        os.umask(old_umask)
    [(temp, target)] = renamed
    assert Path(target) == path
    assert Path(temp).parent == tmp_path
    assert re.fullmatch(r"\.metals\.json\.[^/]+\.tmp", Path(temp).name), temp
    assert path.read_bytes() == PUBLISHED
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


# -- the command


class FakeProcess:
    """The transport of a spawned process: records stdin and signals."""

    def __init__(self, exited: bool = False) -> None:
        self.stdin = b""
        self.stdin_closed = False
        self.signals: list[str] = []
        self.exited = exited

    def write(self, data: bytes) -> None:
        self.stdin += data

    def closeStdin(self) -> None:
        self.stdin_closed = True

    def signalProcess(self, signal: str) -> None:
        if self.exited:
            raise ProcessExitedAlready()
        self.signals.append(signal)


class ProcessClock(Clock):
    """A Clock that also spawns (fake) processes, recording what it was asked to run."""

    def __init__(self, exited: bool = False) -> None:
        super().__init__()
        self.exited = exited
        self.spawned: list[tuple[str, list[str], Any]] = []
        self.protocol: IProcessProtocol | None = None
        self.process = FakeProcess()

    def spawnProcess(
        self,
        protocol: IProcessProtocol,
        executable: str,
        args: list[str],
        env: Any = None,
        **kwargs: Any,
    ) -> FakeProcess:
        self.spawned.append((executable, list(args), env))
        self.protocol = protocol
        self.process = FakeProcess(self.exited)
        protocol.makeConnection(cast("IProcessTransport", self.process))
        return self.process

    def end(self, reason: Exception, stderr: bytes = b"") -> None:
        """The process writes ``stderr`` and ends with ``reason``."""
        assert self.protocol is not None
        if stderr:
            self.protocol.childDataReceived(2, stderr)
        self.protocol.processEnded(Failure(reason))


def command(reactor: ProcessClock, **kwargs: Any) -> CommandPublisher:
    return CommandPublisher(["/opt/signer", "--meta"], reactor=reactor, clock_ms=clock_ms, **kwargs)


def test_command_gets_the_document_on_stdin_with_its_environment() -> None:
    reactor = ProcessClock()
    d = command(reactor, env={"SIGNER_KEY": "/keys/master"}).publish("master-dest", LEASES)
    assert reactor.spawned == [("/opt/signer", ["/opt/signer", "--meta"], {"SIGNER_KEY": "/keys/master"})]
    assert (reactor.process.stdin, reactor.process.stdin_closed) == (PUBLISHED, True)
    reactor.end(ProcessDone(0))
    assert outcome(d) is None
    assert reactor.getDelayedCalls() == []


def test_command_is_killed_after_thirty_seconds_by_default() -> None:
    reactor = ProcessClock()
    d = command(reactor).publish("m", LEASES)
    reactor.advance(29.999)
    assert reactor.process.signals == []
    reactor.advance(0.001)
    assert reactor.process.signals == ["KILL"]
    reactor.end(ProcessTerminated(signal=9), b"signer: waiting for the key\n")
    assert failure_text(d) == "/opt/signer did not finish within 30 s; killed: signer: waiting for the key"


def test_command_that_ends_as_it_is_killed() -> None:
    """The kill comes too late (the process has exited): no error, the publish fails as timed out."""
    reactor = ProcessClock(exited=True)
    d = command(reactor, timeout=2).publish("m", LEASES)
    reactor.advance(2)
    reactor.end(ProcessDone(0))
    assert failure_text(d) == "/opt/signer did not finish within 2 s; killed"


@pytest.mark.parametrize(
    ("reason", "stderr", "message"),
    [
        (
            ProcessTerminated(exitCode=3),
            b"signer: key locked\n",
            "/opt/signer failed (exit status 3): signer: key locked",
        ),
        (ProcessTerminated(exitCode=1), b"", "/opt/signer failed (exit status 1)"),
        (ProcessTerminated(exitCode=1), b" \n", "/opt/signer failed (exit status 1)"),
        (ProcessTerminated(signal=15), b"", "/opt/signer failed (signal 15)"),
        (
            ProcessTerminated(exitCode=2),
            b"bad \xff key",
            "/opt/signer failed (exit status 2): bad \ufffd key",
        ),
        (RuntimeError("lost track"), b"", "/opt/signer failed: lost track"),
    ],
)
def test_command_failures(reason: Exception, stderr: bytes, message: str) -> None:
    reactor = ProcessClock()
    d = command(reactor).publish("m", LEASES)
    reactor.end(reason, stderr)
    assert failure_text(d) == message
    assert reactor.getDelayedCalls() == []


def test_command_stderr_keeps_its_last_500_bytes() -> None:
    reactor = ProcessClock()
    d = command(reactor).publish("m", LEASES)
    assert reactor.protocol is not None
    reactor.protocol.childDataReceived(2, b"a" * 400)
    reactor.protocol.childDataReceived(2, b"b" * 300)
    reactor.end(ProcessTerminated(exitCode=1))
    assert failure_text(d) == "/opt/signer failed (exit status 1): " + "a" * 200 + "b" * 300


def test_command_needs_a_command() -> None:
    with pytest.raises(ValueError, match="^CommandPublisher needs a command$"):
        CommandPublisher([], reactor=ProcessClock())


def test_command_without_a_reactor_uses_the_global_one(monkeypatch: pytest.MonkeyPatch) -> None:
    spawned: list[str] = []

    def spawn(protocol: IProcessProtocol, executable: str, args: list[str], env: Any = None) -> None:
        spawned.append(executable)
        raise OSError(2, "No such file or directory")

    monkeypatch.setattr(global_reactor, "spawnProcess", spawn)
    d = CommandPublisher(["/opt/signer"]).publish("m", LEASES)
    assert failure_text(d) == "cannot run /opt/signer: No such file or directory"
    assert spawned == ["/opt/signer"]


# -- the URL


def test_url_publisher_posts_and_reports_none() -> None:
    reactor = MemoryReactorClock()
    d = URLPublisher(URL, reactor=reactor, clock_ms=clock_ms).publish("master-dest", LEASES)
    connection = Connection(reactor)
    assert connection.connect_timeout == 10
    assert connection.sent().endswith(
        b"Content-Type: application/json\r\nAccept: application/json\r\n"
        b"Host: 127.0.0.1:8080\r\n\r\n" + PUBLISHED
    )
    connection.answer(response(b"", b"204 No Content"))
    assert outcome(d) is None


def test_url_publisher_times_out_after_ten_seconds_by_default() -> None:
    reactor = MemoryReactorClock()
    d = URLPublisher(URL, reactor=reactor).publish("m", LEASES)
    reactor.advance(9.999)
    assert pending(d)
    reactor.advance(0.001)
    assert failure_text(d) == f"POST {URL}: no answer within 10 s"


def test_url_publisher_connect_timeout_follows_the_timeout() -> None:
    reactor = MemoryReactorClock()
    URLPublisher(URL, reactor=reactor, timeout=3).publish("m", LEASES)
    assert Connection(reactor).connect_timeout == 3


@pytest.mark.parametrize("size", [64 * 1024, 64 * 1024 + 1])
def test_url_publisher_answer_bound(size: int) -> None:
    """The receiver's answer may be up to 64 KiB."""
    reactor = MemoryReactorClock()
    d = URLPublisher(URL, reactor=reactor).publish("m", LEASES)
    Connection(reactor).answer(response(b"", length=size) + b"x" * size)
    if size == 64 * 1024:
        assert outcome(d) is None
    else:
        assert failure_text(d) == f"POST {URL}: the answer is 65537 bytes, more than the 65536 allowed"


@implementer(IAgent)
class Refusing:
    """An agent whose every connection is refused at once."""

    def request(
        self, method: bytes, uri: bytes, headers: Any = None, body_producer: Any = None
    ) -> Deferred[Any]:
        return fail(ConnectionRefusedError())


def test_url_publisher_without_a_reactor_uses_the_global_one() -> None:
    d = URLPublisher(URL, agent=Refusing()).publish("m", LEASES)
    assert failure_text(d) == (
        f"POST {URL}: connection refused (is the router running, with I2PControl enabled on that port?)"
    )
