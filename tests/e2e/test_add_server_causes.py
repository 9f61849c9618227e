"""`add-server` says why the leader refused: the new server unreachable, or another change under way
(the protocol's answer is one bit; the leader's status keeps the cause and the client reads it)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.e2e.procfarm import GARLICFARM, ProcFarm, cli


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcFarm]:
    farm = ProcFarm(tmp_path_factory.mktemp("causes") / "farm", 1)
    with open(farm.config(1), "a") as f:  # 100 ms ticks: a join is given up after 20 s, not 2 s
        f.write("\n[raft]\ntick_ms = 100\n")
    farm.start_all()
    try:
        farm.wait_for_leader()
        yield farm
    finally:
        farm.stop_all()


def _add(farm: ProcFarm, server: int, port: int) -> list[str]:
    return [
        *GARLICFARM,
        "add-server",
        "--raft",
        "--config",
        farm.config(1),
        "--id",
        str(server),
        "--endpoint",
        f"tcp://127.0.0.1:{port}",
        "--timeout",
        "60",
    ]


@pytest.mark.e2e
def test_an_unreachable_server_and_a_change_under_way_are_named(farm: ProcFarm) -> None:
    nobody = farm.base + 1  # nothing listens there: the invitation goes unanswered
    first = subprocess.Popen(_add(farm, 2, nobody), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 15
        while (farm.status(1) or {}).get("joining") != 2:
            assert time.monotonic() < deadline, "server 2 never started joining"
            time.sleep(0.2)
        busy = cli(*_add(farm, 3, nobody)[len(GARLICFARM) :], check=False, timeout=60)
    finally:
        out, err = first.communicate(timeout=90)
    assert first.returncode == 1, out + err
    assert err.strip() == (
        f"garlicfarm add-server: add server 2: refused by the leader (server 1): server 2 did not answer the "
        f"invitation to join within 20 s: it is unreachable at tcp://127.0.0.1:{nobody} (not running, wrong "
        "endpoint, or refusing our connection: its log says which)"
    ), err
    assert busy.returncode == 1, busy.stderr
    assert busy.stderr.strip() == (
        "garlicfarm add-server: add server 3: refused by the leader (server 1): server 2 is still joining; "
        "one configuration change at a time"
    ), busy.stderr
