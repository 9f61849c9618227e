"""``garlicfarm health`` answers as ``/readyz`` does, from the node's status; ``garlicfarm status`` exits
2 when the node knows no leader."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock
from twisted.python.failure import Failure

from garlicfarm.cli import farm, health
from garlicfarm.cli.main import main
from garlicfarm.farminit import FarmSpec, create_farm
from garlicfarm.metrics.health import ready_checks
from garlicfarm.metrics.snapshot import from_status, read_node
from garlicfarm.net.client import ClientError, FarmClient
from garlicfarm.service import STATUS_HEADER, GarlicFarmService
from garlicfarm.storage import StorageError
from tests.metrics.nodes import make_node


def over_the_wire(node: GarlicFarmService) -> dict[str, Any]:
    """The status as a client reads it: the 101's header, JSON."""
    document: dict[str, Any] = json.loads(dict(node._upgrade_headers())[STATUS_HEADER])
    return document


def test_the_status_gives_the_readyz_checks_the_same_answers(tmp_path: Path) -> None:
    node = make_node(tmp_path, MemoryReactorClock())
    assert ready_checks(from_status(over_the_wire(node))) == ready_checks(read_node(node))
    assert all(c.ok for c in ready_checks(from_status(over_the_wire(node))))
    node.driver.stop(Failure(StorageError("disk full")))
    checks = ready_checks(from_status(over_the_wire(node)))
    assert checks == ready_checks(read_node(node))
    assert [c.line() for c in checks if not c.ok][:2] == [
        "[-]running failed: the node stopped: disk full",
        "[-]leader failed: no leader known",
    ]


def leader_status(directory: Path) -> dict[str, Any]:
    directory.mkdir()
    return over_the_wire(make_node(directory, MemoryReactorClock()))


@pytest.fixture
def config(tmp_path: Path) -> str:
    create_farm(FarmSpec(tmp_path, 1, base_port=1), force=True)
    return str(tmp_path / "node-1.toml")


def run_cli(monkeypatch: pytest.MonkeyPatch, status: Any, *argv: str) -> tuple[int, str]:
    """``main(argv)`` against a node whose status() answers are ``status`` (one dict: every time; a
    list: one after the other, an exception raised), on a fake clock (no reactor, no node)."""
    answers = list(status) if isinstance(status, list) else None

    async def fake_status(self: FarmClient, endpoint: str | None = None) -> dict[str, Any]:
        answer = status if answers is None else answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        document: dict[str, Any] = json.loads(json.dumps(answer))
        return document

    def run_reactor(job: Any) -> Any:
        clock = Clock()
        box: list[Any] = []
        Deferred.fromCoroutine(job(clock)).addBoth(box.append)
        for _ in range(1000):
            if box:
                break
            clock.advance(0.5)
        if isinstance(box[0], Failure):
            if isinstance(box[0].value, ClientError):
                raise farm.FarmCommandError(str(box[0].value))
            box[0].raiseException()
        return box[0]

    monkeypatch.setattr(FarmClient, "status", fake_status)
    for module in (farm, health):
        monkeypatch.setattr(module, "_run_reactor", run_reactor)
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    code = main(list(argv))
    return code, out.getvalue()


def test_health_ok_and_verbose(tmp_path: Path, config: str, monkeypatch: pytest.MonkeyPatch) -> None:
    status = leader_status(tmp_path / "n")
    assert run_cli(monkeypatch, status, "health", "--config", config) == (0, "ok\n")
    code, out = run_cli(monkeypatch, status, "health", "--config", config, "--verbose")
    assert code == 0
    assert out == "[+]running ok\n[+]leader ok\n[+]caught_up ok\n[+]storage ok\nreadyz check passed\n"
    code, out = run_cli(monkeypatch, status, "health", "--config", config, "--live")
    assert (code, out) == (0, "ok\n")


def test_health_not_ready(tmp_path: Path, config: str, monkeypatch: pytest.MonkeyPatch) -> None:
    status = leader_status(tmp_path / "n")
    status["leader"] = None
    code, out = run_cli(monkeypatch, status, "health", "--config", config)
    assert (code, out) == (1, "[-]leader failed: no leader known\nreadyz check failed\n")
    code, out = run_cli(monkeypatch, status, "health", "--config", config, "--verbose")
    assert code == 1 and out.splitlines()[1] == "[-]leader failed: no leader known"
    assert out.splitlines()[0] == "[+]running ok"


def test_health_of_a_node_without_the_fields(
    config: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run_cli(monkeypatch, {"id": 7, "role": "follower"}, "health", "--config", config)
    assert code == 1
    assert "node 7 did not say what its health checks need" in capsys.readouterr().err


def test_status_exits_2_without_a_leader(
    tmp_path: Path, config: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    status = leader_status(tmp_path / "n")
    code, out = run_cli(monkeypatch, status, "status", "--config", config, "--brief")
    assert code == 0 and "leader 1" in out
    status["leader"] = None
    code, out = run_cli(monkeypatch, status, "status", "--config", config, "--brief")
    assert code == 2 and "no leader" in out  # still printed
    code, out = run_cli(monkeypatch, status, "status", "--config", config)
    assert code == 2 and json.loads(out)["leader"] is None


def test_health_waits_for_a_starting_node(
    tmp_path: Path, config: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ready = leader_status(tmp_path / "n")
    leaderless = {**ready, "leader": None}
    refused = ClientError("cannot connect to tcp://127.0.0.1:1: connection refused")
    answers = [refused, leaderless, ready]
    assert run_cli(monkeypatch, answers, "health", "--config", config, "--wait", "10") == (0, "ok\n")
    # --live: a node that answers at all is live
    assert run_cli(
        monkeypatch, [refused, leaderless], "health", "--config", config, "--live", "--wait", "10"
    ) == (
        0,
        "ok\n",
    )
    # without --wait, or once the time is up: the last answer
    code, _ = run_cli(monkeypatch, [refused], "health", "--config", config)
    assert code == 1 and "connection refused" in capsys.readouterr().err
    code, out = run_cli(
        monkeypatch, [refused, *[leaderless] * 10], "health", "--config", config, "--wait", "3"
    )
    assert (code, out) == (1, "[-]leader failed: no leader known\nreadyz check failed\n")
