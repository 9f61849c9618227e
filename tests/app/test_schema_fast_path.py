"""The schema's fast paths say exactly what the slow ones say: the tree check without paths, and
one parse for a leader's admission check and its later apply."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from garlicfarm.app.schema import (
    SchemaError,
    _check_tree,
    _tree_ok,
    admission_error,
    check_entry,
    parse_entry,
    parse_json,
)
from garlicfarm.app.state import FarmState
from garlicfarm.wire import Application, LogEntry

# strings with lone surrogates and escapes, trees deeper than MAX_DEPTH
texts = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0xFFFF), max_size=6)
trees = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=30,
)


def _slow_ok(value: Any) -> bool:
    try:
        _check_tree(value)
    except SchemaError:
        return False
    return True


@given(trees)
def test_the_fast_tree_check_agrees(value: Any) -> None:
    text = json.dumps(value)  # ensure_ascii: any non-ASCII character is a \u escape
    assert _tree_ok(json.loads(text), "\\u" in text) == _slow_ok(value)


@given(trees, st.sampled_from(["farm", "other"]))
def test_check_entry_is_admission_and_parse(value: Any, cluster: str) -> None:
    if isinstance(value, dict) and value:
        value = {**value, "cluster": cluster}
    data = json.dumps(value).encode()
    error, outcome = check_entry(data, "farm")
    assert error == admission_error(data, "farm")
    try:
        expected: object = parse_entry(data, "farm")
    except SchemaError as e:
        assert isinstance(outcome, SchemaError) and str(outcome) == str(e)
    else:
        assert outcome == expected
    if error is None:
        parse_json(data)  # admitted: strict JSON


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b'{"a":1,"a":2}', "duplicate"),  # not strict JSON
        (b'{"cluster":"farm","version":1}', "id: missing"),  # strict JSON naming this farm, no record
    ],
)
def test_check_entry_names_what_it_refuses_in_the_error_it_keeps(data: bytes, says: str) -> None:
    error, outcome = check_entry(data, "farm")
    assert isinstance(outcome, SchemaError) and error == str(outcome) and says in error


def test_a_leader_applies_what_it_checked_without_parsing_again() -> None:
    state = FarmState("farm")
    entry = LogEntry(1, Application(b'{"tool":"x"}'))  # admitted JSON, not a farm record
    assert state.check(entry) is None
    state.apply(7, entry)
    assert state.rejected == 1
    assert state.rejects[-1].reason == "cluster: None is not this farm ('farm')"
    assert not state._checked  # taken by apply
    state.apply(8, entry)  # a follower's apply, unchecked: the same outcome
    assert state.rejects[-1].reason == state.rejects[-2].reason


def test_the_same_bytes_admitted_often_are_parsed_once_each_time() -> None:
    state = FarmState("farm")
    entry = LogEntry(1, Application(b'{"tool":"x"}'))
    for _ in range(3):
        assert state.check(entry) is None
    assert state._checked[entry.value.data][1] == 3  # type: ignore[union-attr]
    for index in range(3):
        state.apply(index + 1, entry)
    assert not state._checked and state.rejected == 3


def test_rejected_entries_leave_no_reference_cycles() -> None:
    """A rejected entry's error is kept (a leader between admission and apply, a follower's apply):
    without its traceback, or every rejection is a cycle through frames for the collector to find
    (in a loaded leader, a collection every half millisecond)."""
    import gc

    state = FarmState(cluster="farm")
    entries = [
        LogEntry(1, Application(data))
        for data in (b'{"bench":"x"}', b'{"cluster":"farm","id":"bad"}', b"not json", b'{"a":1,"a":2}')
    ]
    gc.collect()
    gc.disable()
    try:
        for index, entry in enumerate(entries * 5, 1):
            state.check(entry)
            state.apply(index, entry)
            FarmState(cluster="farm").apply(index, entry)  # a follower's apply: nothing kept from a check
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_what_a_leader_keeps_between_check_and_apply_is_bounded_oldest_out_first() -> None:
    """Entries checked and never applied (a leader deposed before they committed) must not grow the
    cache without end: it keeps MAX_CHECKED_KEPT outcomes, dropping the oldest first."""
    from garlicfarm.app.state import MAX_CHECKED_KEPT

    state = FarmState(cluster="farm")
    datas = [b'{"n":%d}' % i for i in range(MAX_CHECKED_KEPT + 1)]
    for data in datas[:MAX_CHECKED_KEPT]:
        assert state.check(LogEntry(1, Application(data))) is None
    assert len(state._checked) == MAX_CHECKED_KEPT  # full, nothing dropped yet
    state.check(LogEntry(1, Application(datas[-1])))
    assert len(state._checked) == MAX_CHECKED_KEPT
    assert datas[0] not in state._checked and datas[1] in state._checked and datas[-1] in state._checked
