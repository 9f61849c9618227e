"""Proof that the simulator catches each class of bug: every mutant (a core or node with one rule
broken, ``garlicfarm simulate --mutant NAME``) is caught within its bound of seeds.

The bounds are in docs/verification.md with the seeds each needed when they were set. A change to the
simulator's per-seed draws reshuffles which seeds find what; a bound that no longer holds means the
simulator lost sight of a class of bug (or the bound was too tight): look before raising it.
"""

from __future__ import annotations

import pytest

from garlicfarm.cli.main import main
from garlicfarm.cli.simulate import MUTANTS, mutations_for
from garlicfarm.sim.cluster import SimSettings, run_seed

#: mutant -> seeds (from 0, 3 nodes) within which a violation must show
BOUNDS = {
    "commit_old_terms": 60,
    "keep_config_on_truncate": 150,
    "old_snapshot": 50,
    "overlapping_changes": 50,
    "removed_campaigns": 200,
    "send_before_persist": 50,
    "skip_vote_log_check": 50,
    "snapshot_file_first": 50,
    "stale_append_response": 300,
    "unchecked_chunk_offset": 100,
    "vote_not_durable": 50,
}
#: the same mutant in the real driver (--driver): answers and messages leave before the store's write
DRIVER_SEND_FIRST_BOUND = 30
#: the core mutants run by the real driver (--driver): seeds within which a violation must show
DRIVER_BOUNDS = {
    "commit_old_terms": 30,
    "keep_config_on_truncate": 30,
    "old_snapshot": 300,
    "overlapping_changes": 40,
    "removed_campaigns": 150,
    "skip_vote_log_check": 30,
    "stale_append_response": 600,
    "unchecked_chunk_offset": 80,
    "vote_not_durable": 30,
}


#: mutants only the real driver with a disk that takes time can show: (bound, --disk-latency ms)
DRIVER_DISK_BOUNDS = {"count_unwritten": (20, 5.0)}


def test_every_mutant_has_a_bound() -> None:
    assert sorted([*BOUNDS, *DRIVER_DISK_BOUNDS]) == MUTANTS


@pytest.mark.parametrize(("mutant", "bound", "latency"), [(m, *b) for m, b in DRIVER_DISK_BOUNDS.items()])
def test_the_simulator_catches_slow_disk_driver_mutants(mutant: str, bound: int, latency: float) -> None:
    settings = SimSettings(nodes=3, mutations=mutations_for(mutant), driver=True, disk_latency_ms=latency)
    assert any(not run_seed(seed, settings).ok for seed in range(bound)), f"{mutant}: none in {bound} seeds"


def test_driver_mode_with_a_slow_disk_runs_clean() -> None:
    """Writes that take time: followers' answers wait for them, the leader replicates meanwhile."""
    settings = SimSettings(nodes=3, driver=True, disk_latency_ms=5.0)
    for seed in range(10):
        result = run_seed(seed, settings)
        assert result.ok, f"seed {seed}: {[str(v) for v in result.violations]}"
        assert result.committed > 0


def _first_violation(mutant: str, bound: int, driver: bool = False) -> int | None:
    settings = SimSettings(nodes=3, mutations=mutations_for(mutant), driver=driver)
    for seed in range(bound):
        if not run_seed(seed, settings).ok:
            return seed
    return None


@pytest.mark.parametrize(("mutant", "bound"), sorted(BOUNDS.items()))
def test_the_simulator_catches(mutant: str, bound: int) -> None:
    seed = _first_violation(mutant, bound)
    assert seed is not None, f"{mutant}: no violation in {bound} seeds"


@pytest.mark.parametrize(("mutant", "bound"), sorted(DRIVER_BOUNDS.items()))
def test_the_simulator_catches_core_mutants_run_by_the_real_driver(mutant: str, bound: int) -> None:
    seed = _first_violation(mutant, bound, driver=True)
    assert seed is not None, f"{mutant} --driver: no violation in {bound} seeds"


def test_cli_mutant_option(capsys: pytest.CaptureFixture[str]) -> None:
    seed = _first_violation("overlapping_changes", BOUNDS["overlapping_changes"])
    assert seed is not None
    code = main(["simulate", "--seed", str(seed), "--nodes", "3", "--mutant", "overlapping_changes"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[-1] == "1 runs, 1 violations"
    assert any(line.strip().endswith("--mutant overlapping_changes") for line in out if "replay:" in line)


def test_driver_mode_runs_clean() -> None:
    """The real RaftDriver (a task.Clock per node, group commit, the simulated disk) under faults."""
    settings = SimSettings(nodes=3, driver=True)
    for seed in range(10):
        result = run_seed(seed, settings)
        assert result.ok, f"seed {seed}: {[str(v) for v in result.violations]}"
        assert result.committed > 0


def test_driver_mode_catches_a_driver_that_sends_before_persisting() -> None:
    settings = SimSettings(nodes=3, driver=True, mutations=mutations_for("send_before_persist"))
    assert any(not run_seed(seed, settings).ok for seed in range(DRIVER_SEND_FIRST_BOUND))
