"""Random operation sequences: the SQLite store must behave exactly like the in-memory model."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from garlicfarm.storage.interface import HardState, LogStore, SnapshotMeta
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire.payloads import Configuration, LogEntry
from tests.storage.conftest import fast_dir
from tests.wire.strategies import configurations, log_values

terms = st.one_of(st.integers(0, 4), st.just(2**63 - 1), st.just(2**63), st.integers(-1, 2**64))
u64ish = st.one_of(st.integers(0, 20), st.just(2**63 - 1), st.just(2**64 - 1), st.just(-1))
hard_states = st.builds(HardState, u64ish, st.none() | u64ish, u64ish)
entries = st.lists(st.builds(LogEntry, terms, log_values), max_size=4)


class SQLiteMatchesMemory(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(dir=fast_dir()))
        self.real = SQLiteLogStore(self.dir / "log.db")
        self.model = MemoryLogStore()

    def both(self, action: Callable[[LogStore], object]) -> None:
        """Apply ``action`` to both stores: same result, or the same misuse refused by both."""
        outcomes: list[object] = []
        for store in (self.model, self.real):
            try:
                outcomes.append(action(store))
            except ValueError as e:
                outcomes.append(ValueError(str(e)))
        assert repr(outcomes[0]) == repr(outcomes[1])

    @rule(data=st.data(), hard_state=st.none() | hard_states, new=entries)
    def save(self, data: st.DataObject, hard_state: HardState | None, new: list[LogEntry]) -> None:
        m = self.model
        entries_from = data.draw(st.none() | st.integers(m.first_index - 1, m.last_index + 2))
        self.both(lambda s: s.save(hard_state, entries_from, new))

    @rule(data=st.data(), config=configurations, other_term=st.integers(0, 4))
    def compact(self, data: st.DataObject, config: Configuration, other_term: int) -> None:
        m = self.model
        index = data.draw(st.integers(m.first_index - 2, m.last_index + 2))
        stored = m.entries(index, index + 1)
        term = data.draw(st.sampled_from([stored[0].term, other_term] if stored else [other_term]))
        self.both(lambda s: s.compact(SnapshotMeta(index, term, config)))

    @rule(lo=st.integers(-1, 30), span=st.integers(-1, 10))
    def read(self, lo: int, span: int) -> None:
        self.both(lambda s: s.entries(lo, lo + span))

    @rule()
    def reopen(self) -> None:
        self.real.close()
        self.real = SQLiteLogStore(self.dir / "log.db")

    @invariant()
    def same_state(self) -> None:
        assert self.real.load() == self.model.load()

    def teardown(self) -> None:
        self.real.close()
        shutil.rmtree(self.dir)


SQLiteMatchesMemory.TestCase.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
TestSQLiteMatchesMemory = SQLiteMatchesMemory.TestCase
