"""What the chaos test checks once the farm is stopped: the nodes' committed logs and the client history.

1. The committed logs of all nodes (read from their SQLite files) agree wherever both have committed.
2. :func:`garlicfarm.sim.history.check_history` against the longest committed log: every acknowledged
   write at the index it was acknowledged with (else it is *lost*), no refused write committed, no
   value twice, real-time order kept.
3. Linearizability (:mod:`garlicfarm.sim.linearizability`) of the appends plus one final read of the
   whole log, with :class:`CommittedLogModel`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from pathlib import Path

import attrs

from garlicfarm.sim.history import ClientOp, Outcome, check_history
from garlicfarm.sim.linearizability import CheckResult, Operation, Verdict, check
from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire import Application, LogEntry

LOST = "acknowledged write lost"


@attrs.frozen
class NodeLog:
    node: int
    commit: int
    #: index -> entry, for the committed entries the node still holds
    entries: dict[int, LogEntry]


def read_node_log(node: int, path: Path) -> NodeLog:
    """The committed part of a stopped node's SQLite log."""
    store = SQLiteLogStore(path)
    try:
        state = store.load()
    finally:
        store.close()
    commit = state.hard_state.commit
    entries = {
        state.first_index + k: e for k, e in enumerate(state.entries) if state.first_index + k <= commit
    }
    return NodeLog(node, commit, entries)


def agreement_problems(logs: Sequence[NodeLog]) -> list[str]:
    """Pairs of nodes whose committed entries differ at an index both hold."""
    problems = []
    for i, a in enumerate(logs):
        for b in logs[i + 1 :]:
            for index in sorted(a.entries.keys() & b.entries.keys()):
                if a.entries[index] != b.entries[index]:
                    problems.append(
                        f"nodes {a.node} and {b.node} committed different entries at {index}: "
                        f"{a.entries[index]!r} != {b.entries[index]!r}"
                    )
                    break
    return problems


def final_log(logs: Sequence[NodeLog]) -> dict[int, bytes]:
    """The Application values of the longest committed log (index -> bytes)."""
    longest = max(logs, key=lambda log: log.commit)
    return {i: e.value.data for i, e in longest.entries.items() if isinstance(e.value, Application)}


class CommittedLogModel:
    """The Raft log as one object whose final state is known: the read at the end shows each value's
    index. State: how many client values have taken effect. An append takes effect only as the next
    value in log order and, if acknowledged, only with the index it was acknowledged at."""

    def __init__(self, sequence: Sequence[bytes], positions: dict[bytes, int]) -> None:
        self.sequence = tuple(sequence)
        self.positions = positions

    def init(self) -> int:
        return 0

    def step(self, state: int, op: Operation) -> tuple[bool, int]:
        if op.kind == "read":
            return (not op.completed or state == len(self.sequence)), state
        value = op.value
        assert isinstance(value, bytes)
        if state >= len(self.sequence) or self.sequence[state] != value:
            return False, state
        if op.completed and op.result != self.positions[value]:
            return False, state
        return True, state + 1


def linearizability(ops: Sequence[ClientOp], committed: dict[int, bytes]) -> CheckResult:
    """Appends (failed ones left out; unknown ones only if their value was committed) and a final read."""
    ours = {op.value for op in ops}
    positions = {v: i for i, v in committed.items() if v in ours}
    sequence = [v for _, v in sorted((i, v) for v, i in positions.items())]
    history: list[Operation] = []
    end = 0.0
    for op in ops:
        call = op.call / 1e9
        ret = None if op.ret is None else op.ret / 1e9
        end = max(end, call, ret or 0.0)
        if op.outcome is Outcome.FAILED:
            continue  # it did not happen (check_history checks it is not in the log)
        if op.outcome is Outcome.OK:
            history.append(Operation(op.client, "append", "log", op.value, call, ret, op.index))
        elif op.value in positions:  # unknown outcome, but it took effect
            history.append(Operation(op.client, "append", "log", op.value, call, None))
    key: Hashable = "log"
    history.append(Operation(-1, "read", key, None, end + 1, end + 2, tuple(sequence)))
    model = CommittedLogModel(sequence, positions)
    return check(history, model, max_steps=1_000_000 + 50 * len(history))


#: the generic search keeps a set of explored states, each with a bitmask of the whole history: past
#: this many operations it would need gigabytes, so only the direct check below runs
SEARCH_LIMIT = 5000


def linearizable_in_log_order(ops: Sequence[ClientOp], committed: dict[int, bytes]) -> CheckResult:
    """The same question as :func:`linearizability`, answered directly in O(n log n).

    The final log fixes the order of the appends that took effect, so the history is linearizable
    iff acknowledged appends are at their acknowledged index, no other value appears, and the
    appends can take effect in log order within their [call, return] intervals: give each the
    earliest point allowed (its call, or the previous point) and check none falls after its return.
    """
    by_value = {op.value: op for op in ops if op.outcome is not Outcome.FAILED}
    for op in ops:
        if op.outcome is Outcome.OK and committed.get(op.index or 0) != op.value:
            return CheckResult(Verdict.NOT_LINEARIZABLE, f"acknowledged {op.value!r} is not at {op.index}")
    point = float("-inf")
    previous = None
    ours = {op.value for op in ops}
    for index in sorted(committed):
        value = committed[index]
        if value not in ours:
            continue  # not a client entry
        taken = by_value.get(value)
        if taken is None:
            return CheckResult(Verdict.NOT_LINEARIZABLE, f"refused {value!r} is committed at {index}")
        point = max(point, taken.call)
        if taken.outcome is Outcome.OK and taken.ret is not None and point > taken.ret:
            return CheckResult(
                Verdict.NOT_LINEARIZABLE,
                f"{value!r} (index {index}) returned at {taken.ret} but cannot take effect before "
                f"{point}: {previous!r} precedes it in the log and was invoked later",
            )
        previous = value
    return CheckResult(Verdict.LINEARIZABLE)


@attrs.frozen
class RunVerdict:
    lost: list[str]
    violations: list[str]
    linearizable: CheckResult
    committed_client_values: int

    @property
    def ok(self) -> bool:
        return not self.lost and not self.violations and self.linearizable.verdict is Verdict.LINEARIZABLE


def acked_during_outages(ops: Sequence[ClientOp], outages: Sequence[tuple[int, int]]) -> list[str]:
    """Writes both invoked and acknowledged while a majority was down (``outages``: [start, end] in the
    ops' clock): no quorum could have committed them, so acknowledging them is wrong."""
    return [
        f"{op.value!r} acknowledged at {op.ret} while a majority was down ({start}..{end})"
        for op in ops
        if op.outcome is Outcome.OK and op.ret is not None
        for start, end in outages
        if start <= op.call and op.ret <= end
    ]


def check_run(
    ops: Sequence[ClientOp], logs: Sequence[NodeLog], outages: Sequence[tuple[int, int]] = ()
) -> RunVerdict:
    violations = agreement_problems(logs) + acked_during_outages(ops, outages)
    committed = final_log(logs) if logs else {}
    problems = check_history(list(ops), committed)
    lost = [p for p in problems if p.startswith(LOST)]
    violations += [p for p in problems if not p.startswith(LOST)]
    ours = {op.value for op in ops}
    direct = linearizable_in_log_order(ops, committed)
    if len(ops) <= SEARCH_LIMIT:
        searched = linearizability(ops, committed)
        if searched.verdict is not direct.verdict:
            violations.append(f"the checkers disagree: search {searched}, direct {direct}")
        direct = searched if not searched.ok else direct
    return RunVerdict(
        lost=lost,
        violations=violations,
        linearizable=direct,
        committed_client_values=sum(1 for v in committed.values() if v in ours),
    )
