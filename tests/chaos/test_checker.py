"""The chaos checker: lost writes, disagreeing nodes and non-linearizable histories are caught."""

from __future__ import annotations

from pathlib import Path

from garlicfarm.chaos.checker import NodeLog, check_run, read_node_log
from garlicfarm.sim.history import ClientOp, Outcome
from garlicfarm.sim.linearizability import Verdict
from garlicfarm.storage.interface import HardState
from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire import Application, LogEntry


def entry(value: bytes, term: int = 1) -> LogEntry:
    return LogEntry(term, Application(value))


def node(i: int, values: dict[int, bytes], commit: int | None = None) -> NodeLog:
    return NodeLog(
        i, commit if commit is not None else max(values, default=0), {k: entry(v) for k, v in values.items()}
    )


def ok(client: int, value: bytes, call: int, ret: int, index: int) -> ClientOp:
    return ClientOp(client, 0, value, call, ret, Outcome.OK, index)


def test_a_clean_history_passes() -> None:
    log = {1: b"noop-ish", 2: b"a", 3: b"b", 4: b"c"}
    ops = [
        ok(1, b"a", 0, 10, 2),
        ok(2, b"b", 5, 20, 3),  # concurrent with a
        ClientOp(1, 1, b"c", 30, 40, Outcome.UNKNOWN),  # timed out, but committed
        ClientOp(2, 1, b"d", 30, 40, Outcome.UNKNOWN),  # timed out, never committed
        ClientOp(3, 0, b"e", 1, 2, Outcome.FAILED),
    ]
    verdict = check_run(ops, [node(1, log), node(2, log, commit=3), node(3, {})])
    assert verdict.ok, verdict
    assert verdict.committed_client_values == 3


def test_a_lost_acknowledged_write_is_counted() -> None:
    ops = [ok(1, b"a", 0, 10, 1), ok(1, b"b", 11, 20, 2)]
    verdict = check_run(ops, [node(1, {1: b"a"})])
    assert len(verdict.lost) == 1 and "b'b'" in verdict.lost[0]
    assert verdict.linearizable.verdict is Verdict.NOT_LINEARIZABLE


def test_a_write_at_another_index_than_acknowledged_is_lost() -> None:
    verdict = check_run([ok(1, b"a", 0, 10, 2)], [node(1, {1: b"x", 3: b"a"})])
    assert verdict.lost


def test_nodes_that_disagree_on_a_committed_entry() -> None:
    verdict = check_run([], [node(1, {1: b"a", 2: b"b"}), node(2, {1: b"a", 2: b"z"})])
    assert any("different entries at 2" in v for v in verdict.violations)


def test_real_time_order_violation_is_not_linearizable() -> None:
    # b was acknowledged before a was invoked, yet a comes first in the log.
    ops = [ok(1, b"b", 0, 10, 3), ok(2, b"a", 20, 30, 2)]
    verdict = check_run(ops, [node(1, {2: b"a", 3: b"b"})])
    assert verdict.linearizable.verdict is Verdict.NOT_LINEARIZABLE
    assert verdict.violations  # check_history's real-time rule agrees


def test_a_refused_write_in_the_log_is_a_violation() -> None:
    ops = [ClientOp(1, 0, b"a", 0, 10, Outcome.FAILED)]
    verdict = check_run(ops, [node(1, {1: b"a"})])
    assert verdict.violations
    assert verdict.linearizable.verdict is Verdict.NOT_LINEARIZABLE


def test_read_node_log_keeps_only_committed_entries(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    store = SQLiteLogStore(path)
    store.save(HardState(1, 1, 2), 1, [entry(b"a"), entry(b"b"), entry(b"c")])
    store.close()
    log = read_node_log(7, path)
    assert log.node == 7 and log.commit == 2
    assert sorted(log.entries) == [1, 2]


def test_the_direct_check_agrees_with_the_search_on_random_histories() -> None:
    import random

    from garlicfarm.chaos.checker import linearizability, linearizable_in_log_order

    rng = random.Random(5)
    for _ in range(300):
        ops, log, index = [], {}, 0
        for k in range(rng.randint(1, 12)):
            call = rng.randint(0, 50)
            ret = call + rng.randint(0, 20)
            value = f"v{k}".encode()
            outcome = rng.choice([Outcome.OK, Outcome.OK, Outcome.UNKNOWN, Outcome.FAILED])
            committed = outcome is Outcome.OK or (outcome is Outcome.UNKNOWN and rng.random() < 0.5)
            if committed:
                index += rng.randint(1, 2)
                log[index] = value
            ops.append(ClientOp(k, 0, value, call, ret, outcome, index if outcome is Outcome.OK else None))
        rng.shuffle(ops)
        # shuffle the log order too, sometimes, to make violations
        if rng.random() < 0.3 and len(log) > 1:
            keys = sorted(log)
            values = [log[k] for k in keys]
            rng.shuffle(values)
            log = dict(zip(keys, values, strict=True))
        assert linearizable_in_log_order(ops, log).verdict is linearizability(ops, log).verdict


def test_a_write_acknowledged_while_a_majority_was_down_is_a_violation() -> None:
    log = {1: b"a", 2: b"b"}
    ops = [ok(1, b"a", 0, 100, 1), ok(2, b"b", 50, 60, 2)]
    assert check_run(ops, [node(1, log)], outages=[(40, 90)]).violations == [
        "b'b' acknowledged at 60 while a majority was down (40..90)"
    ]
    assert check_run(ops, [node(1, log)], outages=[(55, 90)]).ok  # invoked before: it may have committed
