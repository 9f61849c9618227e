"""The client library with a wrong password fails at once with "authentication refused" (the node
answers 401 to the upgrade), not after its whole timeout with a story about quorum."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.procfarm import ProcFarm

CLIENT = """
import sys
from pathlib import Path
from twisted.internet import task
from twisted.internet.defer import Deferred
from garlicfarm.client import ClientSettings, GarlicFarmClient
from garlicfarm.config import TLSConfig

async def main(reactor, farm, endpoint):
    farm = Path(farm)
    tls = TLSConfig(ca=farm / "ca.pem", cert=farm / "node-1.pem", key=farm / "node-1.key")
    settings = ClientSettings((endpoint,), "farm", "not the password", tls=tls, timeout=30)
    client = GarlicFarmClient(reactor, settings)
    try:
        await client.submit(b'{"hello": "farm"}')
    except Exception as e:
        print(type(e).__name__, e)
    finally:
        client.close()

task.react(lambda reactor: Deferred.fromCoroutine(main(reactor, *sys.argv[1:])))
"""


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcFarm]:
    farm = ProcFarm(tmp_path_factory.mktemp("password") / "farm", 1)
    farm.start_all()
    try:
        farm.wait_for_leader()
        yield farm
    finally:
        farm.stop_all()


@pytest.mark.e2e
def test_a_wrong_password_fails_fast_and_says_so(farm: ProcFarm, tmp_path: Path) -> None:
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(script), str(farm.dir), f"tcp://127.0.0.1:{farm.base}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert result.stdout.startswith("AuthenticationRefused submit: tcp://127.0.0.1:"), (
        result.stdout + result.stderr
    )
    assert "authentication refused" in result.stdout and "quorum" not in result.stdout, result.stdout
    assert elapsed < 15, elapsed  # the timeout is 30 s: it did not wait for it
