"""The Meta LS publisher hooks: file (atomic), command (stdin, exit status, timeout), URL (POST)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from twisted.internet.defer import Deferred
from twisted.trial import unittest
from twisted.web.resource import Resource
from twisted.web.server import Request

from garlicfarm.router.interface import MetaLease
from garlicfarm.router.publishers import (
    CommandPublisher,
    FilePublisher,
    NullPublisher,
    PublishError,
    URLPublisher,
)
from tests.router.fake_i2pcontrol import Served, reactor
from tests.router.test_static import result

LEASES = (MetaLease("leaf-a", 100), MetaLease("leaf-b", 7))
PUBLISHED = {
    "master": "master-dest",
    "publishing": True,
    "leases": [{"destination": "leaf-a", "weight": 100}, {"destination": "leaf-b", "weight": 7}],
    "published": 1234,
}
STOPPED = {"master": "master-dest", "publishing": False, "leases": [], "published": 1234}


def clock() -> int:
    return 1234


class TestFilePublisher:
    def test_publish_and_stop(self, tmp_path: Path) -> None:
        path = tmp_path / "metals.json"
        hook = FilePublisher(path, clock_ms=clock)
        result(hook.publish("master-dest", LEASES))
        assert json.loads(path.read_text()) == PUBLISHED
        result(hook.stop("master-dest"))
        assert json.loads(path.read_text()) == STOPPED
        assert [p.name for p in tmp_path.iterdir()] == ["metals.json"]  # no temporary files left

    def test_replaces_the_file_in_one_step(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        path = tmp_path / "metals.json"
        path.write_text("old")
        synced: list[int] = []
        real_fsync = os.fsync

        def fsync(fd: int) -> None:
            synced.append(fd)
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", fsync)

        def crash(src: str, dst: str) -> None:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(os, "replace", crash)
        with pytest.raises(
            PublishError, match="metals.json: cannot write the Meta LS document: Input/output error"
        ):
            result(FilePublisher(path).publish("m", LEASES))
        assert path.read_text() == "old"  # the reader never sees a half-written document
        assert [p.name for p in tmp_path.iterdir()] == ["metals.json"]
        assert len(synced) == 1  # the data was synced before the rename was tried
        monkeypatch.undo()
        result(FilePublisher(path).publish("m", LEASES))
        assert json.loads(path.read_text())["master"] == "m"

    def test_unwritable_directory(self, tmp_path: Path) -> None:
        with pytest.raises(PublishError, match="cannot write the Meta LS document"):
            result(FilePublisher(tmp_path / "missing" / "metals.json").publish("m", LEASES))


def test_null_publisher() -> None:
    hook = NullPublisher(clock_ms=clock)
    assert result(hook.publish("m", LEASES)) is None
    assert result(hook.stop("m")) is None


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


class TestCommandPublisher(unittest.TestCase):
    timeout = 20

    def setUp(self) -> None:
        # Not self.mktemp(): trial's temporary directories land in the working directory.
        self.dir = Path(tempfile.mkdtemp(prefix="garlicfarm-publisher-"))
        self.addCleanup(shutil.rmtree, self.dir, True)

    async def test_document_on_stdin(self) -> None:
        out = self.dir / "out.jsonl"
        code = f"import sys; open({str(out)!r}, 'a').write(sys.stdin.read())"
        hook = CommandPublisher(python(code), reactor=reactor, clock_ms=clock)
        # Both started at once: the stop must land after the publish (one delivery at a time).
        first, second = hook.publish("master-dest", LEASES), hook.stop("master-dest")
        await first
        await second
        lines = out.read_text().splitlines()
        assert [json.loads(line) for line in lines] == [PUBLISHED, STOPPED]

    async def test_failure_carries_stderr(self) -> None:
        code = "import sys; sys.stdin.read(); sys.stderr.write('x' * 1000 + 'signer: key locked\\n')"
        code += "; sys.exit(3)"
        hook = CommandPublisher(python(code), reactor=reactor)
        with pytest.raises(PublishError) as caught:
            await hook.publish("m", LEASES)
        message = str(caught.value)
        assert message.startswith(f"{sys.executable} failed (exit status 3): x")
        assert message.endswith("signer: key locked")
        assert len(message) < 600  # only the end of stderr

    async def test_timeout_kills_the_command(self) -> None:
        hook = CommandPublisher(python("import time; time.sleep(60)"), reactor=reactor, timeout=0.5)
        with pytest.raises(PublishError, match=r"did not finish within 0.5 s; killed"):
            await hook.publish("m", LEASES)

    async def test_missing_program(self) -> None:
        hook = CommandPublisher([str(self.dir / "no-such-signer")], reactor=reactor)
        with pytest.raises(PublishError, match="cannot run .*no-such-signer: No such file or directory"):
            await hook.publish("m", LEASES)

    def test_empty_command(self) -> None:
        with pytest.raises(ValueError, match="needs a command"):
            CommandPublisher([], reactor=reactor)


class Receiver(Resource):
    isLeaf = True  # noqa: N815 -- twisted.web's name

    def __init__(self, code: int = 204) -> None:
        super().__init__()
        self.code = code
        self.received: list[tuple[bytes | None, Any]] = []

    def render_POST(self, request: Request) -> bytes:
        assert request.content is not None
        self.received.append((request.getHeader(b"content-type"), json.loads(request.content.read())))
        request.setResponseCode(self.code)
        return b"" if self.code < 300 else b"signer offline"


class TestURLPublisher(unittest.TestCase):
    timeout = 10

    def serve(self, resource: Resource) -> Served:
        served = Served(resource, tls=False)
        self.addCleanup(lambda: Deferred.fromCoroutine(served.close()))
        return served

    async def test_posts_the_document(self) -> None:
        receiver = Receiver()
        hook = URLPublisher(self.serve(receiver).url, reactor=reactor, clock_ms=clock)
        await hook.publish("master-dest", LEASES)
        await hook.stop("master-dest")
        assert receiver.received == [(b"application/json", PUBLISHED), (b"application/json", STOPPED)]

    async def test_non_2xx_fails(self) -> None:
        served = self.serve(Receiver(code=503))
        with pytest.raises(
            PublishError,
            match=r"^POST http://127.0.0.1:\d+/jsonrpc: HTTP 503 Service Unavailable: signer offline$",
        ):
            await URLPublisher(served.url, reactor=reactor).publish("m", LEASES)

    async def test_connection_refused(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with pytest.raises(PublishError, match="connection refused"):
            await URLPublisher(f"http://127.0.0.1:{port}/", reactor=reactor).publish("m", LEASES)


def test_hooks_satisfy_the_publisher_protocol(tmp_path: Path) -> None:
    from garlicfarm.router.interface import MetaLSPublisher

    # mypy checks these assignments against the MetaLSPublisher protocol.
    hooks: list[MetaLSPublisher] = [
        NullPublisher(),
        FilePublisher(tmp_path / "m.json"),
        CommandPublisher(["true"], reactor=reactor),
        URLPublisher("http://127.0.0.1:1/", reactor=reactor),
    ]
    assert len(hooks) == 4
