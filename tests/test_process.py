"""What a node's own process sets up for itself."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from garlicfarm.process import settle_startup_objects
from tests.e2e.procfarm import free_base_port


def test_startup_objects_leave_the_collectors_generations() -> None:
    before = gc.get_freeze_count()
    try:
        settle_startup_objects()
        assert gc.get_freeze_count() > before
        assert gc.get_count()[0] < 700  # a collection ran first: no garbage is frozen with them
    finally:
        gc.unfreeze()


#: what a plain node (no [admin], no [metrics], no Tor, no pipeline) must not load: each is a
#: feature the node's configuration did not ask for, and resident memory for as long as it runs
NOT_FOR_A_PLAIN_NODE = (
    "pyspark",
    "txtorcon",
    "hypothesis",
    "prometheus_client",
    "garlicfarm.admin.service",
    "garlicfarm.admin.client",
    "garlicfarm.admin.site",
    "garlicfarm.metrics.service",
    "garlicfarm.pipeline",
    "garlicfarm.chaos",
    "garlicfarm.sim",
    "garlicfarm.farminit",
    "twisted.web.client",
    "multiprocessing",
)

_PROBE = """
import sys
from twisted.internet import reactor

def dump():
    with open(sys.argv[2], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
    reactor.stop()

reactor.callLater(1.5, dump)
from garlicfarm.cli.main import main
sys.exit(main(["run", "--config", sys.argv[1]]))
"""


def test_a_plain_node_imports_only_what_it_runs(tmp_path: Path) -> None:
    """``garlicfarm run`` of a node without the console, /metrics, Tor or the pipeline: none of
    their modules (nor the other commands') are in its process."""
    base = free_base_port(1)
    init = [sys.executable, "-m", "garlicfarm", "init", str(tmp_path), "--nodes", "1"]
    subprocess.run([*init, "--base-port", str(base), "--no-metrics"], check=True, capture_output=True)
    modules = tmp_path / "modules.txt"
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path / "node-1.toml"), str(modules)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert modules.exists(), run.stderr[-2000:]
    loaded = set(modules.read_text().split())
    assert "garlicfarm.service" in loaded and "garlicfarm.raft.driver" in loaded
    unwanted = sorted(
        name for name in loaded if any(name == x or name.startswith(x + ".") for x in NOT_FOR_A_PLAIN_NODE)
    )
    assert unwanted == []
