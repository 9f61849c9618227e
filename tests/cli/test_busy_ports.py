"""A busy ``[admin] listen`` or ``[metrics] listen`` port ends `garlicfarm run` as a busy Raft port does:
one line naming the port and the table, exit status 1, the Raft port released."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from garlicfarm.chaos.procs import free_base_port
from garlicfarm.farminit import FarmSpec, create_farm


@pytest.mark.e2e
@pytest.mark.parametrize("table", ["admin", "metrics"])
def test_a_busy_console_or_metrics_port_is_one_line_and_exit_status_1(tmp_path: Path, table: str) -> None:
    base = free_base_port(2)
    create_farm(FarmSpec(tmp_path, 1, base_port=base, metrics=False), force=True)  # the table comes below
    config = tmp_path / "node-1.toml"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", base + 1))
        busy.listen()
        with config.open("a") as f:
            f.write(f'\n[{table}]\nlisten = "tcp:{base + 1}:interface=127.0.0.1"\n')
        result = subprocess.run(
            [sys.executable, "-m", "garlicfarm", "run", "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"garlicfarm run: cannot listen on tcp:{base + 1}:interface=127.0.0.1 ("), last
    assert f"[{table}] listen): " in last and "already in use" in last, last
    assert "Traceback" not in result.stderr and "CRITICAL" not in result.stderr.upper(), result.stderr
    with socket.socket() as raft:  # the process is gone, and its Raft port with it
        raft.bind(("127.0.0.1", base))
