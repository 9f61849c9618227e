"""The checker's leader completeness is Raft's (§5.4): entries committed in earlier terms.

Seed 74981 of the 100,000-seed run (5 nodes) reported a violation that was not one: a candidate of
term 1 won by votes delivered late, after the leader of term 2 had committed index 1; a leader of
an older term lacking a newer term's entry breaks nothing (it is deposed by the first answer).
"""

from __future__ import annotations

from garlicfarm.sim.invariants import InvariantChecker
from garlicfarm.wire.payloads import Application, LogEntry


def _committed_in_term_2() -> InvariantChecker:
    checker = InvariantChecker()
    entry = LogEntry(2, Application(b"x"))
    checker.leader_committed(5, since=0, upto=1, term=2)
    checker.applied(5, 1, entry, b"state")
    return checker


def test_a_stale_leader_of_an_older_term_may_lack_it() -> None:
    checker = _committed_in_term_2()
    checker.leader_log(3, 1, [(1, None)])
    checker.leader_log(3, 2, [(1, 1)])  # the same term as the commit: not yet bound either
    assert checker.violations == []


def test_a_leader_of_a_later_term_must_hold_it() -> None:
    checker = _committed_in_term_2()
    checker.leader_log(4, 3, [(1, 1)])
    assert [v.rule for v in checker.violations] == ["leader completeness"]


def test_the_first_leader_to_commit_an_index_names_its_term() -> None:
    checker = _committed_in_term_2()
    checker.leader_committed(4, since=0, upto=1, term=3)  # a later leader commits it again
    checker.leader_log(3, 3, [(1, 1)])
    assert [v.rule for v in checker.violations] == ["leader completeness"]
