"""The simulator: clean runs stay clean, runs replay exactly, and broken cores get caught."""

from __future__ import annotations

import attrs
import pytest

from garlicfarm.cli.main import main
from garlicfarm.sim.cluster import SimSettings, run_seed
from garlicfarm.sim.faults import Mutations
from garlicfarm.sim.history import ClientOp, Outcome, check_history

#: CI runs this many seeds per cluster size on every change; `garlicfarm simulate --seeds 2000` is the
#: long sweep (docs/raft.md).
CI_SEEDS = 25


@pytest.mark.parametrize("nodes", [3, 5])
def test_clean_runs_have_no_violations(nodes: int) -> None:
    settings = SimSettings(nodes=nodes)
    for seed in range(CI_SEEDS):
        result = run_seed(seed, settings)
        assert result.ok, f"seed {seed}: {[str(v) for v in result.violations]}"
        assert result.committed > 0


def test_a_seed_replays_exactly() -> None:
    settings = SimSettings(nodes=5)
    assert run_seed(7, settings) == run_seed(7, settings)
    assert run_seed(7, settings) != run_seed(8, settings)


def test_cli_last_line_and_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--seeds", "3", "--nodes", "3", "--jobs", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "3 runs, 0 violations"
    settings = SimSettings(
        nodes=3, mutations=Mutations(send_before_persist=True)
    )  # tests/sim/test_mutants.py has the rest
    seed = next(s for s in range(200) if not run_seed(s, settings).ok)
    code = main(["simulate", "--seed", str(seed), "--nodes", "3", "--mutate", "send_before_persist"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[-1] == "1 runs, 1 violations"
    assert any(f"replay: garlicfarm simulate --seed {seed} --nodes 3" in line for line in out)


def _op(value: str, call: int, ret: int | None, outcome: Outcome, index: int | None = None) -> ClientOp:
    return ClientOp(0, 0, value.encode(), call, ret, outcome, index)


def test_history_check_accepts_a_linearizable_history() -> None:
    ops = [_op("a", 0, 5, Outcome.OK, 1), _op("b", 1, 9, Outcome.OK, 2), _op("c", 2, None, Outcome.UNKNOWN)]
    assert check_history(ops, {1: b"a", 2: b"b", 3: b"c"}) == []
    assert check_history(ops, {1: b"a", 2: b"b"}) == []  # an unknown outcome may not have happened


@pytest.mark.parametrize(
    ("ops", "log", "problem"),
    [
        ([_op("a", 0, 5, Outcome.OK, 1)], {}, "acknowledged write lost"),
        ([_op("a", 0, 5, Outcome.OK, 1)], {1: b"x", 2: b"a"}, "acked at 1, in log at 2"),
        ([_op("a", 0, 5, Outcome.FAILED)], {1: b"a"}, "refused write"),
        ([_op("a", 0, None, Outcome.UNKNOWN)], {1: b"a", 2: b"a"}, "committed twice"),
        # b returned (t=3) before a was invoked (t=4), yet a precedes b in the log
        ([_op("a", 4, 9, Outcome.OK, 1), _op("b", 0, 3, Outcome.OK, 2)], {1: b"a", 2: b"b"}, "follows"),
    ],
)
def test_history_check_finds(ops: list[ClientOp], log: dict[int, bytes], problem: str) -> None:
    assert any(problem in p for p in check_history(ops, log))


def test_no_faults_run_commits_a_lot() -> None:
    from garlicfarm.sim.faults import Faults

    settings = SimSettings(nodes=3, swarm=False, membership_every=0)
    result = run_seed(1, attrs.evolve(settings, faults=Faults.none()))
    assert result.ok
    assert result.elections == 1
    assert result.acknowledged > 100
