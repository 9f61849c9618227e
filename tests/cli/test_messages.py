"""The command line's errors are one plain line each: a scheme-less endpoint, no doubled prefixes, one
wording for a refused connection, and add-server of a member says it is one."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from garlicfarm.cli.farm import AlreadyMember, FarmCommandError, _not_yet_member
from garlicfarm.config import ConfigError, load_config
from garlicfarm.farminit import FarmSpec, create_farm

REFUSED = "connection refused (is the node running and listening there?)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "garlicfarm", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-node farm's files (the node not running), with an [admin] console configured."""
    base = tmp_path_factory.mktemp("farm")
    create_farm(FarmSpec(base, 1, base_port=free_port()), force=True)
    text = (base / "node-1.toml").read_text()
    (base / "console.toml").write_text(text + f"\n[admin]\nlisten = {free_port()}\n")
    return base


def test_a_scheme_less_endpoint_is_one_line_suggesting_tcp(farm: Path) -> None:
    result = cli("status", "--config", str(farm / "node-1.toml"), "--endpoint", "127.0.0.1:22003")
    assert result.returncode == 1
    assert one_line(result) == (
        "garlicfarm status: endpoint '127.0.0.1:22003': no scheme; did you mean tcp://127.0.0.1:22003?"
    )
    result = cli("status", "--config", str(farm / "node-1.toml"), "--endpoint", "nosuch:host=x")
    assert result.returncode == 1
    assert "Unknown endpoint type: 'nosuch'" in one_line(result)
    result = cli(
        "add-server", "--config", str(farm / "node-1.toml"), "--id", "4", "--endpoint", "[::1]:22003"
    )
    assert result.returncode == 1
    assert one_line(result).endswith("; did you mean tcp://[::1]:22003?")


def test_raft_section_errors_name_the_file_once(tmp_path: Path, farm: Path) -> None:
    path = tmp_path / "t5.toml"
    path.write_text((farm / "node-1.toml").read_text() + "\n[raft]\nheartbeat_ticks = 0\n")
    (tmp_path / "node-1.key").symlink_to(farm / "node-1.key")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.count(str(path)) == 1 and message.count("[raft]") == 1, message
    assert "heartbeat_ticks must be an integer" in message


def test_submit_does_not_say_submit_twice(farm: Path) -> None:
    result = cli("submit", "--config", str(farm / "node-1.toml"), "--timeout", "0.3", "{}")
    assert result.returncode == 1
    line = one_line(result)
    assert line.startswith("garlicfarm submit: no leader after"), line
    assert "submit: submit" not in line


def test_a_refused_connection_is_worded_the_same_by_both_clients(farm: Path) -> None:
    raft = one_line(cli("status", "--config", str(farm / "node-1.toml")))
    console = one_line(cli("overview", "--config", str(farm / "console.toml")))
    assert raft.startswith("garlicfarm status: cannot connect to tcp://127.0.0.1:") and raft.endswith(REFUSED)
    assert console.startswith("garlicfarm overview: cannot connect to https://127.0.0.1:")
    assert console.endswith(REFUSED)


def test_an_existing_member_is_not_added_again() -> None:
    members = [{"id": 1, "endpoint": "tcp://127.0.0.1:9001"}, {"id": 2, "endpoint": "tcp://127.0.0.1:9002"}]
    _not_yet_member(members, 3, "tcp://127.0.0.1:9003")
    with pytest.raises(AlreadyMember, match="server 2 is already a member .* nothing to do"):
        _not_yet_member(members, 2, "tcp://127.0.0.1:9002")
    with pytest.raises(FarmCommandError, match="already a member, at tcp://127.0.0.1:9002, not tcp://h:1"):
        _not_yet_member(members, 2, "tcp://h:1")


@pytest.fixture(scope="module")
def running(farm: Path) -> Iterator[Path]:
    node = subprocess.Popen(
        [sys.executable, "-m", "garlicfarm", "run", "--config", str(farm / "console.toml")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if '"role": "leader"' in cli("status", "--config", str(farm / "node-1.toml")).stdout:
                break
            time.sleep(0.3)
        else:
            raise AssertionError("the node did not lead within 30 s")
        yield farm
    finally:
        node.terminate()
        node.wait(10)


@pytest.mark.e2e
@pytest.mark.parametrize("path", [["--raft"], []], ids=["raft", "console"])
def test_add_server_of_a_member_says_so(running: Path, path: list[str]) -> None:
    config = str(running / "console.toml")
    endpoint = load_config(running / "node-1.toml").endpoint
    result = cli("add-server", "--config", config, *path, "--id", "1", "--endpoint", endpoint)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"server 1 is already a member (at {endpoint}): nothing to do\n"
    result = cli("add-server", "--config", config, *path, "--id", "1", "--endpoint", "tcp://127.0.0.1:1")
    assert result.returncode == 1
    assert "already a member, at" in one_line(result) and "added" not in result.stdout
