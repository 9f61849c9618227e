"""Real garlicfarm processes with JRaft-behaviour peers over loopback TCP (issue 15), through the same
handshake bridges and driver as scripts/jraft-interop.sh uses with real JRaft: each scenario elects a
leader within 10 s of each leader loss, every request reaches every node, committed logs agree index
by index (read from the nodes' files), joins and leaves work both ways."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
#: this helper's port range (28000-28999): scenario n uses BASE + 100 n + 10..41 and BASE + 501..504
BASE_PORT = 28450


def _driver() -> ModuleType:
    spec = importlib.util.spec_from_file_location("jraft_interop", REPO / "scripts" / "jraft_interop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["jraft_interop"] = module
    spec.loader.exec_module(module)
    return module


DRIVER = _driver()


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("n", "title"),
    # the lagging-server scenario runs in tests/hostile/test_lagging_node.py
    [(n, title) for n, title in enumerate(DRIVER.SCENARIOS, start=1) if "lagging" not in title],
    ids=lambda v: str(v)[:30],
)
def test_scenario_with_jraft_behaviour_peers(n: int, title: str, tmp_path: Path) -> None:
    farm = DRIVER.Farm(tmp_path / f"scenario-{n}", DRIVER.jraft_command(None), BASE_PORT + 100 * n)
    notes: list[str] = []
    try:
        DRIVER.SCENARIOS[title](farm, notes)
    except DRIVER.Failure as e:
        pytest.fail(f"{title}: {e}; logs in {tmp_path}")
    finally:
        farm.stop()
    print(title, *notes, sep="\n    ")
