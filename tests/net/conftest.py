"""Fixtures: real tinyproxy processes on loopback, for the HTTP CONNECT end-to-end tests."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

import attrs
import pytest

# Debian's tinyproxy-bin puts it in /usr/bin; some systems keep daemons in sbin, off a user's PATH.
_SEARCH = ("tinyproxy", "/usr/sbin/tinyproxy", "/usr/local/sbin/tinyproxy")
_START_TIMEOUT = 5.0


@attrs.frozen
class Tinyproxy:
    host: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class StartTinyproxy(Protocol):
    def __call__(
        self,
        *,
        connect_ports: Sequence[int] = (),
        basic_auth: tuple[str, str] | None = None,
        deny_loopback: bool = False,
    ) -> Tinyproxy: ...


def find_tinyproxy() -> str:
    for candidate in _SEARCH:
        found = shutil.which(candidate)
        if found:
            return found
    pytest.fail(
        "tinyproxy is not installed: run scripts/system-deps.sh (it installs Debian's tinyproxy-bin)",
        pytrace=False,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _config(port: int, connect_ports: Sequence[int], basic_auth: tuple[str, str] | None, deny: bool) -> str:
    lines = [f"Port {port}", "Listen 127.0.0.1", "Timeout 10", "MaxClients 16", "LogLevel Info"]
    # No ConnectPort line would allow CONNECT to every port: always name the allowed ones.
    lines += [f"ConnectPort {p}" for p in connect_ports] or ["ConnectPort 1"]
    if basic_auth is not None:
        lines.append("BasicAuth {} {}".format(*basic_auth))
    if deny:
        lines.append("Deny 127.0.0.1")
    return "\n".join(lines) + "\n"


def _start(binary: str, directory: Path, config: str, port: int) -> Tinyproxy:
    conf, log = directory / "tinyproxy.conf", directory / "tinyproxy.log"
    conf.write_text(config)
    with log.open("wb") as out:
        # -d: stay in the foreground, so the process is ours to kill; it logs to stdout.
        process = subprocess.Popen(
            [binary, "-d", "-c", str(conf)], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        if b"Accepting connections" in log.read_bytes():
            return Tinyproxy("127.0.0.1", port, process, log)
        time.sleep(0.02)  # a process starting up: nothing to wait on but its log
    _stop(process)
    raise RuntimeError(f"tinyproxy did not start on 127.0.0.1:{port}:\n{log.read_text(errors='replace')}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)  # SIGTERM makes it wait ~2 s for its threads: no state to save
    process.wait(timeout=5)


@pytest.fixture
def tinyproxy(tmp_path: Path) -> Iterator[StartTinyproxy]:
    """Start tinyproxy processes (each on a free loopback port); all are killed when the test ends."""
    binary = find_tinyproxy()
    started: list[Tinyproxy] = []

    def start(
        *,
        connect_ports: Sequence[int] = (),
        basic_auth: tuple[str, str] | None = None,
        deny_loopback: bool = False,
    ) -> Tinyproxy:
        directory = tmp_path / f"tinyproxy-{len(started)}"
        directory.mkdir()
        for attempt in range(3):  # another process may take the free port before tinyproxy binds it
            port = _free_port()
            try:
                proxy = _start(
                    binary, directory, _config(port, connect_ports, basic_auth, deny_loopback), port
                )
            except RuntimeError:
                if attempt == 2:
                    raise
                continue
            started.append(proxy)
            return proxy
        raise AssertionError("unreachable")

    yield start
    for proxy in started:
        _stop(proxy.process)
