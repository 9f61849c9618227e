"""docs/client.md's example, run as written against a real farm; and the library's coalescing."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.procfarm import ProcFarm

ROOT = Path(__file__).resolve().parents[2]


def example_code() -> str:
    text = (ROOT / "docs" / "client.md").read_text()
    match = re.search(r"```python\n(.*?)```", text, re.S)
    assert match, "docs/client.md has no python example"
    return match.group(1)


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcFarm]:
    farm = ProcFarm(tmp_path_factory.mktemp("client") / "farm", 3)
    farm.start_all()
    try:
        farm.wait_for_leader()
        yield farm
    finally:
        farm.stop_all()


@pytest.mark.e2e
def test_the_documented_example_runs_and_coalesces(farm: ProcFarm, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(example_code())
    endpoints = [f"tcp://127.0.0.1:{farm.base + i}" for i in (2, 1, 0)]  # the first may not lead
    result = subprocess.run(
        [sys.executable, str(script), str(farm.dir), *endpoints],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    match = re.fullmatch(
        r"committed 100 entries at (\d+)\.\.(\d+) in (\d+) request\(s\); leader \d\n", result.stdout
    )
    assert match, result.stdout
    first, last, requests = map(int, match.groups())
    assert last - first == 99  # one index each, in submission order
    assert requests == 1  # 100 concurrent submissions, one ClientRequest


JUNK_IN_A_BATCH = """
import sys
from pathlib import Path
from twisted.internet import task
from twisted.internet.defer import Deferred, DeferredList
from garlicfarm.client import ClientError, ClientSettings, GarlicFarmClient
from garlicfarm.config import TLSConfig

async def main(reactor, farm_dir, endpoints):
    farm = Path(farm_dir)
    client = GarlicFarmClient(reactor, ClientSettings(
        endpoints=endpoints, username="farm", password=(farm / "credentials").read_text().strip(),
        tls=TLSConfig(ca=farm / "ca.pem", cert=farm / "node-1.pem", key=farm / "node-1.key")))
    good = [client.submit(b'{"ok": %d}' % n) for n in range(3)]
    bad = client.submit(b'{"cluster": "farm", "id": 1, "date": "yesterday"}')
    results = await DeferredList([*good, bad], consumeErrors=True)
    print([ok for ok, _ in results], results[-1][1].check(ClientError) is not None)

task.react(lambda r: Deferred.fromCoroutine(main(r, sys.argv[1], sys.argv[2:])))
"""


@pytest.mark.e2e
def test_one_junk_submission_does_not_fail_those_coalesced_with_it(farm: ProcFarm, tmp_path: Path) -> None:
    script = tmp_path / "junk.py"
    script.write_text(JUNK_IN_A_BATCH)
    endpoints = [f"tcp://127.0.0.1:{farm.base + i}" for i in (0, 1, 2)]
    result = subprocess.run(
        [sys.executable, str(script), str(farm.dir), *endpoints],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[True, True, True, False] True"
