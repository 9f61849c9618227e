"""I2PControlRouter against a real i2pd, offline, in a network namespace that has only loopback.

tests/router/i2pd_probe.py runs in the namespace (the client must share i2pd's loopback): it starts
i2pd with I2PControl on, reads it, and prints what it saw as JSON. The namespace comes from
``unshare --net --pid --fork --kill-child`` (root): the probe is PID 1 of a new PID namespace, so
when it ends, or is killed on timeout, the kernel kills i2pd with it. Without unshare, ``ip netns``
is tried, and the probe kills i2pd itself. i2pd comes from scripts/system-deps.sh.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from garlicfarm.router.i2pcontrol_codec import I2PD_NET_STATUS_2_44, I2PD_NET_STATUS_NEW, I2PD_NET_STATUS_OLD
from tests.router.i2pd_probe import BANDWIDTH_KBPS

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
_SEARCH = ("i2pd", "/usr/sbin/i2pd", "/usr/local/sbin/i2pd", "/usr/bin/i2pd")
RUN_TIMEOUT = 150  # the probe: start (30 s at most) and a few slow first answers


def find_i2pd() -> str:
    for candidate in _SEARCH:
        found = shutil.which(candidate)
        if found:
            return found
    pytest.fail(
        "i2pd is not installed: run scripts/system-deps.sh (it installs Debian's i2pd)", pytrace=False
    )


def _works(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@contextmanager
def namespace() -> Iterator[list[str]]:
    """The command prefix that runs a program in a new network namespace with only loopback."""
    unshare = ["unshare", "--net", "--pid", "--fork", "--kill-child"]
    if _works([*unshare, "true"]):
        yield unshare
        return
    name = f"garlicfarm-test-{uuid.uuid4().hex[:8]}"
    if not _works(["ip", "netns", "add", name]):
        pytest.skip(
            "cannot make a network namespace: `unshare --net` and `ip netns add` both failed "
            "(this test needs root, or CAP_SYS_ADMIN, to isolate i2pd from the network)"
        )
    try:
        yield ["ip", "netns", "exec", name]
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


@pytest.fixture(scope="module")
def seen() -> Iterator[dict[str, Any]]:
    yield from run_probe("tests.router.i2pd_probe", "garlicfarm-i2pd-")


def run_probe(module: str, prefix: str) -> Iterator[dict[str, Any]]:
    """Run a probe module against a fresh i2pd in a new network namespace; yield what it printed."""
    binary = find_i2pd()
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        with namespace() as ns:
            argv = [*ns, sys.executable, "-m", module, "--i2pd", binary, "--dir", str(directory)]
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            try:
                done = subprocess.run(
                    argv, cwd=ROOT, env=env, capture_output=True, timeout=RUN_TIMEOUT, check=False
                )
            except subprocess.TimeoutExpired:
                pytest.fail(
                    f"{module} did not finish within {RUN_TIMEOUT} s{_logs(directory)}", pytrace=False
                )
            if done.returncode != 0:
                stderr = done.stderr.decode(errors="replace")[-3000:]
                pytest.fail(
                    f"{module} failed ({done.returncode}):\n{stderr}{_logs(directory)}", pytrace=False
                )
            yield json.loads(done.stdout)
    finally:
        shutil.rmtree(directory, ignore_errors=True)  # i2pd's keys and certificate: nothing to keep


def _logs(directory: Path) -> str:
    parts = []
    for name in ("i2pd.stdout", "i2pd.log"):
        path = directory / name
        if path.exists():
            parts.append(f"\n--- {name} (end) ---\n{path.read_text(errors='replace')[-2000:]}")
    return "".join(parts)


def installed_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, timeout=10, check=False).stdout.decode()
    return out.split()[2]  # "i2pd version 2.45.1 (0.9.57)"


def test_live_router_info(seen: dict[str, Any]) -> None:
    status = seen["status"]
    assert status["uptime_ms"] > 0
    assert status["version"] == installed_version(find_i2pd())
    names = {*I2PD_NET_STATUS_OLD, *I2PD_NET_STATUS_2_44, *I2PD_NET_STATUS_NEW}
    assert status["net_status"] in names, status
    # Offline, SSU2 off: i2pd cannot test its reachability, and no tunnels pass through it.
    assert status["participating_tunnels"] == 0
    # NetworkSetting, read with null values: the configured limit in KBps, for each direction.
    assert status["bandwidth_configured"] == 2 * BANDWIDTH_KBPS * 1024
    assert status["job_lag_ms"] == 0  # i2pd has no GetRate


def test_leaves_are_reported_without_numbers(seen: dict[str, Any]) -> None:
    assert [leaf["destination"] for leaf in seen["leaves"]] == ["leaf"]
    assert seen["leaves"][0]["tunnels_current"] == 0


def test_wrong_password_quirk(seen: dict[str, Any]) -> None:
    # i2pd answers {"result":{}} instead of error -32001.
    assert seen["wrong_password"].endswith("wrong I2PControl password (no token in the answer)")


def test_token_first_quirk(seen: dict[str, Any]) -> None:
    # Why the client always sends Token last: i2pd's NetworkSetting writes a stray comma for it.
    answer = seen["token_first_answer"]
    assert '"result":{,' in answer
    with pytest.raises(ValueError):
        json.loads(answer)
