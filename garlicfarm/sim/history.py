"""Client operations on the replicated log and the check that their history is linearizable.

A client appends a unique value; the service answers with the index it committed at, or refuses
(definitely not appended), or says nothing (the client gives up: outcome unknown). For an
append-only log whose writes return their position, linearizability comes down to:

1. every acknowledged value stands in the final committed log at the index it was acknowledged at;
2. no refused value is in the committed log, and no value is there twice;
3. the log's order respects real time: if B was acknowledged before A was invoked, B comes first.
"""

from __future__ import annotations

import enum

import attrs


class Outcome(enum.Enum):
    PENDING = "pending"
    OK = "ok"
    FAILED = "failed"
    UNKNOWN = "unknown"


@attrs.define
class ClientOp:
    client: int
    op: int
    value: bytes
    call: int
    ret: int | None = None
    outcome: Outcome = Outcome.PENDING
    index: int | None = None


def check_history(ops: list[ClientOp], committed: dict[int, bytes]) -> list[str]:
    """Problems with ``ops`` against the final committed log (index -> Application bytes)."""
    problems: list[str] = []
    by_value = {op.value: op for op in ops}
    positions: dict[bytes, int] = {}
    for index in sorted(committed):
        value = committed[index]
        if value not in by_value:
            continue  # not a client entry (e.g. a configuration)
        if value in positions:
            problems.append(f"value {value!r} committed twice, at {positions[value]} and {index}")
        positions[value] = index
    for op in ops:
        where = positions.get(op.value)
        if op.outcome is Outcome.OK and where != op.index:
            problems.append(f"acknowledged write lost: {op.value!r} acked at {op.index}, in log at {where}")
        if op.outcome is Outcome.FAILED and where is not None:
            problems.append(f"refused write {op.value!r} is committed at {where}")
    # Real-time order: walking the log in order, nobody may have returned before an earlier entry's call.
    latest_call = -1
    latest_value = b""
    for _, value in sorted((i, v) for v, i in positions.items()):
        op = by_value[value]
        if op.outcome is Outcome.OK and op.ret is not None and op.ret < latest_call:
            problems.append(
                f"{value!r} returned at {op.ret} but follows {latest_value!r}, invoked later at {latest_call}"
            )
        if op.call > latest_call:
            latest_call, latest_value = op.call, value
    return problems
