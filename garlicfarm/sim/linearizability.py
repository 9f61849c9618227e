"""A linearizability checker for client histories: Wing & Gong's search, as Lowe and Porcupine refine it.

* P-compositionality: linearizability is local (a history is linearizable iff each object's
  sub-history is), so the history is split by :attr:`Operation.key` and each part is searched alone.
* Just-in-time linearization (Lowe): walk the call/return events in time order; at a call, try to
  take that operation's effect now; at a return whose operation has not taken effect, backtrack.
* Memoisation: a (set of operations taken, model state) pair already explored is never explored again.

An operation whose outcome is unknown (``return_time is None``: the client timed out or crashed) may
take effect at any point after its call, or never; the search succeeds once every *completed*
operation has taken effect. Omit operations known to have failed: they did not happen.

At equal times a call sorts before a return, so the two overlap: with a coarse simulated clock that
is the permissive reading, never a false alarm.
"""

from __future__ import annotations

import contextlib
import enum
from bisect import bisect_right
from collections.abc import Hashable, Sequence
from typing import Protocol, TypeVar, runtime_checkable

import attrs

S = TypeVar("S", bound=Hashable)

DEFAULT_MAX_STEPS = 1_000_000


@attrs.frozen
class Operation:
    client: int
    kind: str
    key: Hashable
    value: object
    call_time: float
    #: ``None``: the outcome is unknown (it may or may not have taken effect)
    return_time: float | None
    #: what the operation returned; ignored while ``return_time is None``
    result: object = None

    @property
    def completed(self) -> bool:
        return self.return_time is not None

    def __str__(self) -> str:
        outcome = "?" if self.return_time is None else repr(self.result)
        end = "..." if self.return_time is None else f"{self.return_time:g}"
        args = "" if self.value is None else repr(self.value)
        return f"client {self.client} {self.kind}({args}) -> {outcome} @[{self.call_time:g}, {end}]"


class Model(Protocol[S]):
    """A sequential specification of one object. States must be hashable (and should be cheap to hash)."""

    def init(self) -> S: ...

    def step(self, state: S, op: Operation) -> tuple[bool, S]:
        """Can ``op`` take effect in ``state`` (with its result, if it completed), and what follows?"""
        ...


@runtime_checkable
class HistoryAware(Protocol[S]):
    """A model that can specialise itself to one partition's operations before the search."""

    def for_history(self, ops: Sequence[Operation]) -> Model[S]: ...


class Verdict(enum.Enum):
    LINEARIZABLE = "linearizable"
    NOT_LINEARIZABLE = "not linearizable"
    UNKNOWN = "unknown"  # the search hit its step bound


@attrs.frozen
class CheckResult:
    verdict: Verdict
    explanation: str | None = None

    @property
    def ok(self) -> bool:
        return self.verdict is Verdict.LINEARIZABLE


def check(
    history: Sequence[Operation], model: Model[S], *, max_steps: int = DEFAULT_MAX_STEPS
) -> CheckResult:
    """Is ``history`` linearizable with respect to ``model``? ``max_steps`` bounds each key's search."""
    parts: dict[Hashable, list[Operation]] = {}
    for op in history:
        if op.return_time is not None and op.return_time < op.call_time:
            raise ValueError(f"operation returns before it is called: {op}")
        parts.setdefault(op.key, []).append(op)
    gave_up: list[str] = []
    for key, ops in parts.items():
        part_model: Model[S] = model.for_history(ops) if isinstance(model, HistoryAware) else model
        verdict, prefix = _search(ops, part_model, max_steps)
        if verdict is Verdict.NOT_LINEARIZABLE:
            return CheckResult(verdict, _explain(key, ops, part_model, prefix))
        if verdict is Verdict.UNKNOWN:
            gave_up.append(f"key {key!r} ({len(ops)} operations)")
    if gave_up:
        return CheckResult(Verdict.UNKNOWN, f"gave up after {max_steps} search steps on {', '.join(gave_up)}")
    return CheckResult(Verdict.LINEARIZABLE)


def _search(ops: list[Operation], model: Model[S], max_steps: int) -> tuple[Verdict, list[int]]:
    """Search one partition; returns the verdict and the longest linearizable prefix found."""
    events = sorted(
        [(op.call_time, 0, i) for i, op in enumerate(ops)]
        + [(op.return_time, 1, i) for i, op in enumerate(ops) if op.return_time is not None]
    )
    # A doubly linked list of events (node m is the head), so taking an operation out and putting it
    # back are O(1) and exactly undo each other.
    m = len(events)
    head = m
    nxt = [*range(1, m), -1, 0 if m else -1]
    prv = [head, *range(m - 1)]
    call_node = [0] * len(ops)
    ret_node = [-1] * len(ops)
    for node, (_, is_return, i) in enumerate(events):
        if is_return:
            ret_node[i] = node
        else:
            call_node[i] = node

    def unlink(node: int) -> None:
        nxt[prv[node]] = nxt[node]
        if nxt[node] != -1:
            prv[nxt[node]] = prv[node]

    def relink(node: int) -> None:
        nxt[prv[node]] = node
        if nxt[node] != -1:
            prv[nxt[node]] = node

    remaining = len(ret_node) - ret_node.count(-1)  # completed operations not yet taken
    state = model.init()
    taken = 0  # bitmask of operations that have taken effect
    stack: list[tuple[int, S]] = []  # (operation, state before it)
    seen: set[tuple[int, S]] = set()
    best: list[int] = []
    node = nxt[head]
    if remaining == 0:
        return Verdict.LINEARIZABLE, []
    for _ in range(max_steps):
        assert node != -1  # an untaken completed operation's return lies ahead
        _, is_return, i = events[node]
        if not is_return:
            ok, after = model.step(state, ops[i])
            # An optional (unknown-outcome) operation that changes nothing need never be taken.
            if ok and (ret_node[i] != -1 or not (after is state or after == state)):
                key = (taken | 1 << i, after)
                if key not in seen:
                    seen.add(key)
                    stack.append((i, state))
                    state, taken = after, key[0]
                    unlink(node)
                    if ret_node[i] != -1:
                        unlink(ret_node[i])
                        remaining -= 1
                        if remaining == 0:
                            return Verdict.LINEARIZABLE, [j for j, _ in stack]
                    if len(stack) > len(best):
                        best = [j for j, _ in stack]
                    node = nxt[head]
                    continue
            node = nxt[node]
            continue
        # Operation i returned without taking effect: undo the latest choice and try the next one.
        if not stack:
            return Verdict.NOT_LINEARIZABLE, best
        i, state = stack.pop()
        taken &= ~(1 << i)
        if ret_node[i] != -1:
            relink(ret_node[i])
            remaining += 1
        relink(call_node[i])
        node = nxt[call_node[i]]
    return Verdict.UNKNOWN, best


def _explain(key: Hashable, ops: list[Operation], model: Model[S], prefix: list[int]) -> str:
    state = model.init()
    for i in prefix:
        state = model.step(state, ops[i])[1]
    done = set(prefix)
    pending = [ops[i] for i in range(len(ops)) if i not in done and ops[i].return_time is not None]
    stuck = min(pending, key=lambda op: op.return_time or 0.0)
    shown = [str(ops[i]) for i in prefix[-8:]]
    if len(prefix) > 8:
        shown.insert(0, f"... {len(prefix) - 8} more")
    return (
        f"key {key!r}: not linearizable. Longest linearizable prefix ({len(prefix)} of {len(ops)} "
        f"operations): {'; '.join(shown) or 'none'}. State after it: {state!r}. "
        f"No order of the rest lets this take effect before it returned: {stuck}"
    )


# ---------------------------------------------------------------------------------------------- models


class RegisterModel:
    """One register per key: ``put`` value; ``get`` -> value; ``cas`` value=(expected, new) -> bool."""

    def __init__(self, initial: Hashable = None) -> None:
        self.initial = initial

    def init(self) -> Hashable:
        return self.initial

    def step(self, state: Hashable, op: Operation) -> tuple[bool, Hashable]:
        if op.kind == "put":
            return True, _hashable(op.value)
        if op.kind == "get":
            return not op.completed or op.result == state, state
        if op.kind == "cas":
            expected, new = _pair(op)
            swapped = state == expected
            if op.completed and op.result != swapped:
                return False, state
            return True, new if swapped else state
        raise ValueError(f"register model has no operation {op.kind!r}")


def _pair(op: Operation) -> tuple[Hashable, Hashable]:
    if not (isinstance(op.value, tuple) and len(op.value) == 2):
        raise ValueError(f"cas takes (expected, new), got {op.value!r}")
    expected, new = op.value
    return _hashable(expected), _hashable(new)


def _hashable(value: object) -> Hashable:
    if not isinstance(value, Hashable):
        raise ValueError(f"register values must be hashable, got {value!r}")
    return value


@attrs.frozen(cache_hash=True)
class LogState:
    values: tuple[object, ...] = ()
    #: the lowest position the last append can have had
    last_position: int = 0


class LogModel:
    """One append-only log per key: ``append`` value -> the position it was committed at (``None`` if
    the client never learnt it); ``read`` -> every value, in order.

    Raft indexes are positions with gaps (configurations, leaders' no-ops, other keys' entries), so by
    default positions need only increase; ``dense=True`` demands 1, 2, 3, ... For a Raft log, which
    is one object whatever the entries say, give every operation the same key.
    """

    def __init__(self, dense: bool = False, first_position: int = 1) -> None:
        self.dense = dense
        self.first_position = first_position
        #: every known position in the partition, sorted (set by :meth:`for_history`)
        self._known: tuple[int, ...] | None = None
        #: every value some completed read returned (set by :meth:`for_history`)
        self._observed: frozenset[object] | None = None

    def for_history(self, ops: Sequence[Operation]) -> LogModel:
        """Prune the search with what the whole history shows (both rules keep verdicts exact):

        * known positions must be taken in order, so the search does not try every subset of
          concurrent appends that happens to be increasing;
        * with sparse positions, an unknown append whose value no read returned can be left out
          (it constrains nothing), so timed-out writes do not multiply the search.
        """
        model = LogModel(self.dense, self.first_position)
        model._known = tuple(sorted({p for op in ops if (p := _position(op)) is not None}))
        if not self.dense:
            with contextlib.suppress(TypeError):  # unhashable values: no pruning
                model._observed = frozenset(
                    v for op in ops if op.kind == "read" and op.completed for v in _values(op)
                )
        return model

    def init(self) -> LogState:
        return LogState((), self.first_position - 1)

    def step(self, state: LogState, op: Operation) -> tuple[bool, LogState]:
        if op.kind == "append":
            lowest = state.last_position + 1
            position = _position(op)
            if not op.completed and self._unobserved(op.value):
                return False, state  # leaving it out explains everything that taking it would
            if position is None:
                position = lowest
            elif position < lowest or (self.dense and position != lowest):
                return False, state
            elif self._known is not None and position != self._next_known(state.last_position):
                return False, state  # a smaller known position is still to come
            return True, LogState((*state.values, op.value), position)
        if op.kind == "read":
            if not op.completed:
                return True, state
            return _values(op) == state.values, state
        raise ValueError(f"log model has no operation {op.kind!r}")

    def _unobserved(self, value: object) -> bool:
        try:
            return self._observed is not None and value not in self._observed
        except TypeError:  # unhashable: cannot tell
            return False

    def _next_known(self, after: int) -> int | None:
        assert self._known is not None
        i = bisect_right(self._known, after)
        return self._known[i] if i < len(self._known) else None


def _values(op: Operation) -> tuple[object, ...]:
    if not isinstance(op.result, Sequence):
        raise ValueError(f"read returns a sequence of values, got {op.result!r}")
    return tuple(op.result)


def _position(op: Operation) -> int | None:
    if op.kind != "append" or not op.completed or op.result is None:
        return None
    if not isinstance(op.result, int):
        raise ValueError(f"append returns a position, got {op.result!r}")
    return op.result
