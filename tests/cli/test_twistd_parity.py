"""`twistd -n garlicfarm` behaves as `garlicfarm run` does, with real twistd processes: three nodes
started from one directory (each its own pidfile), info-level logs with sub-second times, one-line
errors with exit status 1, and exit status 0 after SIGTERM."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from garlicfarm.chaos.procs import free_base_port
from garlicfarm.farminit import FarmSpec, create_farm

TWISTD = [
    sys.executable,
    "-c",
    "import sys; from twisted.scripts.twistd import run; sys.argv[0] = 'twistd'; run()",
]
GARLICFARM = [sys.executable, "-m", "garlicfarm"]
#: a log line's time, as `garlicfarm run` writes it: microseconds
SUBSECOND = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d{4} \[")


def _status(config: Path) -> dict[str, object] | None:
    result = subprocess.run(
        [*GARLICFARM, "status", "--config", str(config), "--timeout", "5"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return json.loads(result.stdout) if result.returncode == 0 else None


@pytest.mark.e2e
def test_three_twistd_nodes_from_one_directory_log_and_stop_as_garlicfarm_run(tmp_path: Path) -> None:
    base = free_base_port(3)
    create_farm(FarmSpec(tmp_path / "farm", 3, base_port=base), force=True)
    procs = {
        i: subprocess.Popen(
            [*TWISTD, "-n", "garlicfarm", "--config", f"farm/node-{i}.toml"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in (1, 2, 3)
    }
    try:
        deadline = time.monotonic() + 60
        leaders: set[object] = set()
        while time.monotonic() < deadline:
            statuses = [_status(tmp_path / "farm" / f"node-{i}.toml") for i in (1, 2, 3)]
            leaders = {s["leader"] for s in statuses if s is not None}
            if all(s is not None for s in statuses) and len(leaders) == 1 and None not in leaders:
                break
            assert all(p.poll() is None for p in procs.values()), "a twistd node exited"
            time.sleep(0.5)
        else:
            raise AssertionError(f"no leader known to all three: {leaders}")
        for i in (1, 2, 3):
            assert (tmp_path / "farm" / f"node-{i}" / "twistd.pid").exists()
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        outputs = {i: p.communicate(timeout=30)[0] for i, p in procs.items()}
    for i, proc in procs.items():
        assert proc.returncode == 0, outputs[i]
        lines = outputs[i].strip().splitlines()
        assert all(SUBSECOND.match(line) for line in lines), outputs[i]
        assert "#debug]" not in outputs[i] and "Scheduling retry" not in outputs[i], outputs[i]
        assert not (tmp_path / "farm" / f"node-{i}" / "twistd.pid").exists()


@pytest.mark.e2e
@pytest.mark.parametrize("problem", ["busy port", "missing certificate"])
def test_twistd_start_failures_are_one_line_and_exit_status_1(tmp_path: Path, problem: str) -> None:
    base = free_base_port(1)
    create_farm(FarmSpec(tmp_path, 1, base_port=base), force=True)
    if problem == "missing certificate":
        (tmp_path / "node-1.pem").unlink()
    with socket.socket() as busy:
        if problem == "busy port":
            busy.bind(("127.0.0.1", base))
            busy.listen()
        result = subprocess.run(
            [*TWISTD, "-n", "garlicfarm", "--config", "node-1.toml"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    expected = "cannot listen on tcp:" if problem == "busy port" else "node-1.pem: cannot read certificate"
    assert lines[0].startswith("twistd garlicfarm: ") and expected in lines[0], lines[0]
    assert not (tmp_path / "node-1" / "twistd.pid").exists()
