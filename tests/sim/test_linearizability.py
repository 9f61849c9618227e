"""The checker on histories whose answer is known, on random ones, and against brute force."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Hashable, Sequence
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from garlicfarm.sim.linearizability import (
    LogModel,
    Model,
    Operation,
    RegisterModel,
    Verdict,
    check,
)

S = TypeVar("S", bound=Hashable)

REGISTER = RegisterModel()
LOG = LogModel()


def op(
    kind: str, value: object, call: float, ret: float | None, result: object = None, key: Hashable = "k"
) -> Operation:
    return Operation(0, kind, key, value, call, ret, result)


def ok(history: Sequence[Operation], model: Model[S]) -> bool:
    result = check(history, model)
    assert result.verdict is not Verdict.UNKNOWN
    assert (result.explanation is None) == result.ok
    return result.ok


# ------------------------------------------------------------------------------------ register model


def test_empty_history() -> None:
    assert check([], REGISTER).ok


def test_sequential_register() -> None:
    history = [
        op("get", None, 0, 1, None),
        op("put", 1, 2, 3),
        op("get", None, 4, 5, 1),
        op("cas", (1, 2), 6, 7, True),
        op("cas", (1, 3), 8, 9, False),
        op("get", None, 10, 11, 2),
    ]
    assert ok(history, REGISTER)


def test_concurrent_overlapping_register() -> None:
    # The put overlaps both reads: it may take effect between them, not before the first.
    history = [op("put", 1, 0, 10), op("get", None, 1, 2, None), op("get", None, 3, 4, 1)]
    assert ok(history, REGISTER)
    history = [op("put", 1, 0, 10), op("get", None, 1, 2, 1), op("get", None, 3, 4, None)]
    assert not ok(history, REGISTER)


def test_stale_read_after_a_completed_write() -> None:
    history = [op("put", 1, 0, 1), op("put", 2, 2, 3), op("get", None, 4, 5, 1)]
    result = check(history, REGISTER)
    assert result.verdict is Verdict.NOT_LINEARIZABLE
    assert result.explanation is not None
    assert "key 'k'" in result.explanation
    assert "get() -> 1" in result.explanation


def test_read_of_a_value_never_written() -> None:
    assert not ok([op("put", 1, 0, 1), op("get", None, 2, 3, "z")], REGISTER)


def test_two_successful_cas_from_the_same_value() -> None:
    both = [op("cas", (None, 1), 0, 5, True), op("cas", (None, 2), 1, 6, True)]
    assert not ok(both, REGISTER)
    one = [op("cas", (None, 1), 0, 5, True), op("cas", (None, 2), 1, 6, False)]
    assert ok(one, REGISTER)


def test_equal_times_overlap() -> None:
    # A read invoked at the instant a write returns may see either value.
    assert ok([op("put", 1, 0, 5), op("get", None, 5, 6, None)], REGISTER)
    assert not ok([op("put", 1, 0, 5), op("get", None, 5.5, 6, None)], REGISTER)


def test_unknown_outcome_needed_to_explain_a_read() -> None:
    assert ok([op("put", 1, 0, None), op("get", None, 5, 6, 1)], REGISTER)


def test_unknown_outcome_never_needed() -> None:
    assert ok([op("put", 1, 0, None), op("get", None, 5, 6, None)], REGISTER)
    assert ok([op("put", 1, 0, None), op("put", 2, 1, 2), op("get", None, 5, 6, 2)], REGISTER)


def test_unknown_outcome_takes_effect_once_and_not_before_its_call() -> None:
    once = [op("put", 1, 0, None), op("get", None, 2, 3, 1), op("get", None, 4, 5, None)]
    assert not ok(once, REGISTER)
    early = [op("get", None, 0, 1, 1), op("put", 1, 2, None)]
    assert not ok(early, REGISTER)


def test_unknown_cas_may_swap() -> None:
    history = [op("put", 1, 0, 1), op("cas", (1, 2), 2, None), op("get", None, 3, 4, 2)]
    assert ok(history, REGISTER)


def test_keys_are_checked_independently() -> None:
    history = [
        op("put", 1, 0, 1, key="a"),
        op("put", 2, 0, 1, key="b"),
        op("get", None, 2, 3, 2, key="b"),
        op("get", None, 2, 3, 2, key="a"),
    ]
    result = check(history, REGISTER)
    assert not result.ok
    assert result.explanation is not None
    assert result.explanation.startswith("key 'a'")


def test_misuse() -> None:
    with pytest.raises(ValueError, match="returns before it is called"):
        check([op("put", 1, 5, 4)], REGISTER)
    with pytest.raises(ValueError, match="no operation 'delete'"):
        check([op("delete", 1, 0, 1)], REGISTER)
    with pytest.raises(ValueError, match="expected, new"):
        check([op("cas", 1, 0, 1, True)], REGISTER)
    with pytest.raises(ValueError, match="position"):
        check([op("append", "a", 0, 1, "one")], LOG)


def test_step_bound_gives_unknown_not_a_hang() -> None:
    # Twelve concurrent writes and an impossible read: the search must try every subset.
    history = [op("put", i, 0, 100) for i in range(12)] + [op("get", None, 200, 201, "never")]
    bounded = check(history, REGISTER, max_steps=1000)
    assert bounded.verdict is Verdict.UNKNOWN
    assert bounded.explanation is not None
    assert "1000 search steps" in bounded.explanation
    assert check(history, REGISTER).verdict is Verdict.NOT_LINEARIZABLE


# ----------------------------------------------------------------------------------------- log model


def test_sequential_log() -> None:
    history = [
        op("append", "a", 0, 1, 1),
        op("read", None, 2, 3, ["a"]),
        op("append", "b", 4, 5, 2),
        op("read", None, 6, 7, ("a", "b")),
    ]
    assert ok(history, LOG)
    assert ok(history, LogModel(dense=True))


def test_concurrent_appends_in_position_order() -> None:
    history = [
        op("append", "a", 0, 10, 2),
        op("append", "b", 1, 5, 1),
        op("read", None, 6, 7, ["b"]),
        op("read", None, 11, 12, ["b", "a"]),
    ]
    assert ok(history, LOG)


def test_two_appends_claiming_the_same_position() -> None:
    history = [op("append", "a", 0, 10, 3), op("append", "b", 1, 11, 3)]
    assert not ok(history, LOG)
    assert not ok(history, LogModel(dense=True, first_position=3))


def test_positions_must_follow_real_time() -> None:
    assert not ok([op("append", "a", 0, 1, 5), op("append", "b", 2, 3, 3)], LOG)


def test_read_sees_b_but_not_the_earlier_completed_a() -> None:
    history = [
        op("append", "a", 0, 1, 1),
        op("append", "b", 2, 3, 2),
        op("read", None, 4, 5, ["b"]),
    ]
    assert not ok(history, LOG)
    without_positions = [
        op("append", "a", 0, 1, None),
        op("append", "b", 2, 3, None),
        op("read", None, 4, 5, ["b"]),
    ]
    assert not ok(without_positions, LOG)


def test_read_of_a_value_never_appended() -> None:
    assert not ok([op("append", "a", 0, 1, 1), op("read", None, 2, 3, ["a", "x"])], LOG)


def test_sparse_and_dense_positions() -> None:
    history = [op("append", "a", 0, 1, 3), op("append", "b", 2, 3, 7), op("read", None, 4, 5, ["a", "b"])]
    assert ok(history, LOG)
    assert not ok(history, LogModel(dense=True))


def test_unknown_append_needed_to_explain_a_read() -> None:
    history = [op("append", "a", 0, None), op("read", None, 5, 6, ["a"])]
    assert ok(history, LOG)
    # It must have landed before b (position 2): fine sparse, and dense only at position 1.
    history = [op("append", "a", 0, None), op("append", "b", 3, 4, 2), op("read", None, 5, 6, ["a", "b"])]
    assert ok(history, LOG)
    assert ok(history, LogModel(dense=True))
    history = [op("append", "a", 0, None), op("append", "b", 3, 4, 1), op("read", None, 5, 6, ["a", "b"])]
    assert not ok(history, LOG)


def test_unknown_append_never_needed() -> None:
    history = [op("append", "a", 0, None), op("append", "b", 1, 2, 1), op("read", None, 5, 6, ["b"])]
    assert ok(history, LOG)
    assert ok(history, LogModel(dense=True))


def test_many_concurrent_appends_with_known_positions_stay_cheap() -> None:
    n = 40  # every subset is increasing for some order: without for_history this would not finish
    history = [op("append", i, i, 1000 + i, 10 * (n - i)) for i in range(n)]
    history.append(op("read", None, 2000, 2001, list(reversed(range(n)))))
    assert check(history, LOG, max_steps=10_000).ok


# ------------------------------------------------------------------------------ random and brute force


def random_history(
    rng: random.Random, model: str, count: int, keys: int, unknown: float = 0.05
) -> list[Operation]:
    """Run ``count`` operations sequentially (linearization point k * 10), then blur each around its
    point so that neighbours overlap. Unknown outcomes took effect or not at random."""
    registers: dict[int, int | None] = {}
    logs: dict[int, list[int]] = {}
    positions = 0
    history = []
    for k in range(count):
        key, point = rng.randrange(keys), k * 10.0
        call, ret = point - rng.uniform(0, 30), point + rng.uniform(0, 30)
        lost = rng.random() < unknown
        applies = not lost or rng.random() < 0.5
        value: object
        result: object
        if model == "register":
            current = registers.get(key)
            roll = rng.random()
            if roll < 0.4:
                kind, value, result = "put", k, None
                if applies:
                    registers[key] = k
            elif roll < 0.6:
                expected = current if rng.random() < 0.5 else -1
                kind, value, result = "cas", (expected, k), current == expected
                if applies and current == expected:
                    registers[key] = k
            else:
                kind, value, result = "get", None, current
        elif rng.random() < 0.6:
            positions += rng.randint(1, 3)  # other entries take indexes too
            kind, value, result = "append", k, positions
            if applies:
                logs.setdefault(key, []).append(k)
            else:
                positions -= 1
        else:
            kind, value, result = "read", None, list(logs.get(key, []))
        history.append(Operation(k % 8, kind, key, value, call, None if lost else ret, result))
    rng.shuffle(history)
    return history


@pytest.mark.parametrize("seed", range(3))
def test_large_random_register_history_passes_quickly(seed: int) -> None:
    history = random_history(random.Random(seed), "register", 3000, keys=10)
    started = time.perf_counter()
    assert check(history, REGISTER).ok
    assert time.perf_counter() - started < 10  # generous: it takes well under a second


@pytest.mark.parametrize("seed", range(3))
def test_large_random_log_history_passes_quickly(seed: int) -> None:
    history = random_history(random.Random(seed), "log", 1500, keys=1)
    started = time.perf_counter()
    assert check(history, LOG).ok
    assert time.perf_counter() - started < 10


def test_a_single_stale_read_in_a_large_history_is_caught() -> None:
    history = random_history(random.Random(7), "log", 1000, keys=1, unknown=0.0)
    reads = [i for i, o in enumerate(history) if o.kind == "read" and isinstance(o.result, list) and o.result]
    latest = max(reads, key=lambda i: history[i].call_time)
    stale = history[latest]
    assert isinstance(stale.result, list)
    history[latest] = Operation(
        stale.client, "read", stale.key, None, stale.call_time, stale.return_time, stale.result[:-3]
    )
    assert not ok(history, LOG)


def brute_force(history: Sequence[Operation], model: Model[S]) -> bool:
    """Try every subset of the unknown operations and every order consistent with real time."""
    known = [o for o in history if o.completed]
    unknown = [o for o in history if not o.completed]
    for r in range(len(unknown) + 1):
        for extra in itertools.combinations(unknown, r):
            for order in itertools.permutations([*known, *extra]):
                if any(
                    b.return_time is not None and b.return_time < a.call_time
                    for i, a in enumerate(order)
                    for b in order[i + 1 :]
                ):
                    continue
                state = model.init()
                for o in order:
                    good, state = model.step(state, o)
                    if not good:
                        break
                else:
                    return True
    return False


times = st.integers(0, 6)
register_ops = st.builds(
    lambda kind, a, b, call, length, result, lost: Operation(
        0,
        kind,
        "k",
        (a, b) if kind == "cas" else a,
        call,
        None if lost else call + length,
        result if kind != "get" else a,
    ),
    st.sampled_from(["put", "get", "cas"]),
    st.sampled_from([None, 1, 2]),
    st.sampled_from([None, 1, 2]),
    times,
    times,
    st.booleans(),
    st.integers(0, 5).map(lambda n: n < 2),
)
log_ops = st.builds(
    lambda kind, value, call, length, position, lost: Operation(
        0,
        kind,
        "k",
        value,
        call,
        None if lost else call + length,
        position if kind == "append" else [v for v in "abc" if v <= value][: position or 0],
    ),
    st.sampled_from(["append", "append", "read"]),
    st.sampled_from("abc"),
    times,
    times,
    st.none() | st.integers(1, 3),
    st.integers(0, 5).map(lambda n: n < 1),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(register_ops, max_size=5))
def test_register_checker_agrees_with_brute_force(history: list[Operation]) -> None:
    assert check(history, REGISTER).ok == brute_force(history, REGISTER)


@settings(max_examples=300, deadline=None)
@given(st.lists(log_ops, max_size=5), st.booleans())
def test_log_checker_agrees_with_brute_force(history: list[Operation], dense: bool) -> None:
    model = LogModel(dense=dense)
    assert check(history, model).ok == brute_force(history, model)
