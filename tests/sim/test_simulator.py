"""The simulator: clean runs stay clean, runs replay exactly, and broken cores get caught."""

from __future__ import annotations

import attrs
import pytest

from garlicfarm.cli.main import main
from garlicfarm.raft.types import RaftOptions
from garlicfarm.sim.cluster import SimCluster, SimSettings, run_seed
from garlicfarm.sim.faults import Mutations
from garlicfarm.sim.history import ClientOp, Outcome, check_history
from garlicfarm.sim.node import Origin, SendFn
from garlicfarm.wire.messages import InstallSnapshotRequest, Message
from garlicfarm.wire.payloads import SnapshotSyncRequest

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


@pytest.mark.parametrize("nodes", [3, 5])
def test_clean_runs_with_ranked_campaigns_have_no_violations(nodes: int) -> None:
    """Ranked campaigns (the profiles' setting) change only who campaigns when: crashes, partitions
    and lost messages still find no violation, and the farm still commits."""
    options = attrs.evolve(SimSettings().options, campaign_rank_ticks=3)
    settings = SimSettings(nodes=nodes, options=options)
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

    settings = SimSettings(nodes=3, swarm=False, membership_every=0, transfer_every=0)
    result = run_seed(1, attrs.evolve(settings, faults=Faults.none()))
    assert result.ok
    assert result.elections == 1
    assert result.acknowledged > 100


def _snapshot_heavy(seed: int) -> SimCluster:
    from garlicfarm.sim.faults import Faults

    settings = SimSettings(
        nodes=3,
        swarm=False,
        compact_every=5,
        snapshot_bytes=1000,
        options=RaftOptions(election_ticks=10, heartbeat_ticks=2, snapshot_chunk=64),
        faults=Faults(crash_every=200, duplicate=0.1, crash_at_snapshot_write=0.3),
    )
    return SimCluster(seed, settings)


def test_snapshots_take_many_chunks_and_crashes_land_between_their_writes() -> None:
    chunks: list[int] = []
    crashes: dict[str, int] = {}
    for seed in range(5):
        cluster = _snapshot_heavy(seed)
        send = cluster._send

        def counting(
            src: int, dst: int, message: Message, origin: Origin | None, send: SendFn = send
        ) -> None:
            if isinstance(message, InstallSnapshotRequest):
                value = message.entries[0].value
                assert isinstance(value, SnapshotSyncRequest)
                chunks.append(value.offset)
            send(src, dst, message, origin)

        for node in cluster.nodes.values():
            node._send = counting
        result = cluster.run()
        assert result.ok, f"seed {seed}: {[str(v) for v in result.violations]}"
        for node in cluster.nodes.values():
            for kind, n in node.crash_points.crashes.items():
                crashes[kind] = crashes.get(kind, 0) + n
    assert max(chunks) >= 900  # a 1000-byte snapshot in 64-byte chunks: 16 of them
    assert crashes.get("snapshot file") and crashes.get("log compaction")
