"""`garlicfarm run`: a busy port or a read-only data directory is one line and a non-zero exit; logs at
a chosen level and format."""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from twisted.logger import Logger, LogPublisher

from garlicfarm.farminit import FarmSpec, create_farm
from garlicfarm.logs import log_observer
from garlicfarm.storage import SQLiteLogStore


def test_levels_and_json_format() -> None:
    out = io.StringIO()
    publisher = LogPublisher(log_observer(out, "info", "json"))
    log = Logger(observer=publisher)
    log.debug("request to server {id} failed", id=3)
    log.info("leader in term {term}", term=4)
    records = [r for r in out.getvalue().split("\x1e") if r.strip()]  # RFC 7464 JSON text sequences
    assert len(records) == 1
    assert json.loads(records[0])["term"] == 4
    assert json.loads(records[0])["text"] == "leader in term 4"  # the rendered message, for people
    text = io.StringIO()
    Logger(observer=LogPublisher(log_observer(text, "debug"))).debug("shown at {what}", what="debug")
    assert "shown at debug" in text.getvalue()


@pytest.mark.e2e
def test_a_busy_port_is_one_line_and_exit_status_1(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        create_farm(FarmSpec(tmp_path, 1, base_port=port), force=True)
        result = subprocess.run(
            [sys.executable, "-m", "garlicfarm", "run", "--config", str(tmp_path / "node-1.toml")],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "cannot listen on" in last and "Traceback" not in result.stderr, result.stderr


def test_twisted_retry_lines_that_name_no_peer_are_debug_only() -> None:
    for level, shown in (("info", False), ("debug", True)):
        out = io.StringIO()
        noisy = Logger("twisted.application._client_service.ClientService", observer=LogPublisher())
        noisy.observer = LogPublisher(log_observer(out, level))
        noisy.info("Scheduling retry {attempt} to connect {endpoint}", attempt=1, endpoint="<object>")
        assert ("Scheduling retry" in out.getvalue()) is shown


def _read_only_mounts() -> bool:
    """Whether this process may bind-mount read-only in a private mount namespace (root, unshare)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount --make-rprivate / && mount --bind /tmp /tmp"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.e2e
@pytest.mark.parametrize("data", ["store", "empty", "missing"])
def test_a_read_only_data_directory_is_one_line_and_exit_status_1(tmp_path: Path, data: str) -> None:
    if not _read_only_mounts():
        pytest.skip("needs root and unshare -m for a read-only bind mount")
    create_farm(FarmSpec(tmp_path, 1, base_port=1), force=True)
    directory = tmp_path / "node-1"
    if data != "missing":
        directory.mkdir()
    if data == "store":
        SQLiteLogStore(directory / "log.db").close()
    # the farm's directory read-only, as a read-only file system, in a mount namespace of its own
    root = shlex.quote(str(tmp_path))
    command = shlex.join(
        [sys.executable, "-m", "garlicfarm", "run", "--config", str(tmp_path / "node-1.toml")]
    )
    result = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            f"mount --make-rprivate / && mount --bind {root} {root} && mount -o remount,ro,bind {root} && "
            f"exec {command}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        f"garlicfarm run: {directory}: the data directory is not writable (read-only file system or "
        "permissions): "
    ), result.stderr
