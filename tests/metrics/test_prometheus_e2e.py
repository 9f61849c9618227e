"""End to end: Debian's real Prometheus scrapes a real 3-node farm of real processes every second.

Through Prometheus' HTTP API: every node reports a leader, the commit index rises under client writes
on every node, and after a SIGKILL of the leader a survivor counts a new leader and both survivors
report one again. Prometheus also loads docs/alerts.yml. Every wait polls with a generous deadline:
nothing here depends on how fast the machine is.

Ports: this test's own range, 17600-17999 (below the ephemeral range, apart from the farms' 20000+).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.procfarm import ProcFarm, cli

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PORTS = range(17600, 18000)
NODES = 3
#: generous for a loaded 2-core machine; a working farm and Prometheus need a few seconds
WAIT = 90.0


def prometheus_binary() -> str:
    found = shutil.which("prometheus")
    if found:
        return found
    message = "prometheus is not installed: run scripts/system-deps.sh (it installs Debian's prometheus)"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def free_run(count: int) -> int:
    """A base port in PORTS with ``count`` free ports after it on 127.0.0.1."""
    rng = random.Random(os.getpid() * 1_000_003 + time.monotonic_ns())
    for _ in range(100):
        base = rng.randrange(PORTS.start, PORTS.stop - count)
        sockets: list[socket.socket] = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError(f"no run of {count} free ports in {PORTS.start}..{PORTS.stop - 1}")


class MetricsFarm(ProcFarm):
    """A ProcFarm on this test's ports, each node with a [metrics] listener on loopback."""

    def __init__(self, directory: Path) -> None:
        base = free_run(2 * NODES + 1)
        self.dir = directory
        self.n = NODES
        self.base = base
        self.metrics_ports = {i: base + NODES + i - 1 for i in range(1, NODES + 1)}
        self.prometheus_port = base + 2 * NODES
        metrics = str(self.metrics_ports[1])
        cli(
            "init",
            str(directory),
            "--nodes",
            str(NODES),
            "--base-port",
            str(base),
            "--metrics-base-port",
            metrics,
        )
        self.procs = {}

    def node_of(self, instance: str) -> int:
        port = int(instance.rsplit(":", 1)[1])
        return next(i for i, p in self.metrics_ports.items() if p == port)


class Prometheus:
    def __init__(self, farm: MetricsFarm, directory: Path) -> None:
        directory.mkdir()
        self.url = f"http://127.0.0.1:{farm.prometheus_port}"
        targets = [f"127.0.0.1:{port}" for port in farm.metrics_ports.values()]
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(ROOT / "docs" / "alerts.yml")],
            "scrape_configs": [{"job_name": "garlicfarm", "static_configs": [{"targets": targets}]}],
        }
        (directory / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        self.log_path = directory / "prometheus.log"
        log = open(self.log_path, "ab")  # noqa: SIM115 - the process owns it
        self.proc = subprocess.Popen(
            [
                prometheus_binary(),
                f"--config.file={directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{farm.prometheus_port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )

    def api(self, path: str, **params: str) -> Any:
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.load(answer)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> dict[str, float]:
        """instance -> value of each series ``expr`` gives now."""
        data = self.api("query", query=expr)
        return {r["metric"].get("instance", ""): float(r["value"][1]) for r in data["result"]}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def until(what: str, check: Callable[[], Any], timeout: float = WAIT) -> Any:
    """Poll ``check`` until it returns something true; its last error or value in the failure."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            result = check()
        except (OSError, ValueError, KeyError, AssertionError) as e:  # not up yet, an empty answer
            result, last = None, e
        else:
            last = result
        if result:
            return result
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout:g} s (last: {last!r})")


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[tuple[MetricsFarm, Prometheus]]:
    farm = MetricsFarm(tmp_path / "farm")
    prometheus = Prometheus(farm, tmp_path / "prometheus")
    try:
        farm.start_all()
        yield farm, prometheus
    except BaseException:
        print(farm.logs())
        print(prometheus.log_path.read_text(errors="replace")[-3000:])
        raise
    finally:
        farm.stop_all()
        prometheus.stop()


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        text: str = answer.read().decode()
        return text


def test_prometheus_follows_a_farm_through_the_loss_of_its_leader(
    farm: tuple[MetricsFarm, Prometheus],
) -> None:
    procs, prometheus = farm
    rules = until("Prometheus loaded docs/alerts.yml", lambda: prometheus.api("rules")["groups"])
    assert len(rules[0]["rules"]) == 9

    def all_have_a_leader(nodes: set[int]) -> bool:
        values = prometheus.query("garlicfarm_has_leader")
        seen = {procs.node_of(instance): v for instance, v in values.items()}
        return all(seen.get(i) == 1 for i in nodes)

    until("garlicfarm_has_leader == 1 on all three nodes", lambda: all_have_a_leader({1, 2, 3}))
    ready = until("node 2 ready", lambda: get(f"http://127.0.0.1:{procs.metrics_ports[2]}/readyz?verbose"))
    assert "[+]leader ok" in ready and ready.endswith("readyz check passed\n")
    assert get(f"http://127.0.0.1:{procs.metrics_ports[3]}/livez") == "ok\n"

    # commits rise on every node under a few client writes
    last = max(procs.submit(1 + n % NODES, {"metrics-e2e": n}) for n in range(5))

    def committed_everywhere() -> bool:
        values = prometheus.query("garlicfarm_commit_index")
        return len(values) == NODES and min(values.values()) >= last

    until(f"garlicfarm_commit_index >= {last} on every node", committed_everywhere)
    assert sum(prometheus.query("garlicfarm_proposals_committed_total").values()) >= 5
    leaders = prometheus.query("garlicfarm_is_leader == 1")
    assert len(leaders) == 1, leaders
    leader = procs.node_of(next(iter(leaders)))
    survivors = {i for i in procs.metrics_ports if i != leader}
    changes = {
        procs.node_of(instance): v
        for instance, v in prometheus.query("garlicfarm_leader_changes_seen_total").items()
    }
    assert all(changes[i] >= 1 for i in survivors), changes

    procs.kill(leader)
    # the first failed scrape of its target marks its series stale: until then they read as before
    until("the killed leader's target is down", lambda: prometheus.query('up{job="garlicfarm"} == 0'))
    down = prometheus.query('up{job="garlicfarm"} == 0')
    assert {procs.node_of(instance) for instance in down} == {leader}

    def a_survivor_counts_a_new_leader() -> bool:
        now = prometheus.query("garlicfarm_leader_changes_seen_total")
        seen = {procs.node_of(instance): v for instance, v in now.items()}
        return any(seen.get(i, 0) > changes[i] for i in survivors)

    until("a survivor's garlicfarm_leader_changes_seen_total rose", a_survivor_counts_a_new_leader)
    until("garlicfarm_has_leader == 1 again on both survivors", lambda: all_have_a_leader(survivors))
    new = until("a survivor leads", lambda: prometheus.query("garlicfarm_is_leader == 1"))
    assert {procs.node_of(instance) for instance in new} <= survivors
