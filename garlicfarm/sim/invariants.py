"""Raft's safety properties, checked incrementally after every simulated step.

* election safety: at most one leader per term;
* log matching: an (index, term) pair names one entry, with one predecessor term, on every node, so
  two logs holding the same (index, term) are equal up to it;
* leader completeness: a leader's log holds every entry committed in an earlier term (a stale leader
  of an older term, elected late by delayed votes, need not: Raft's property is about later terms);
* state-machine safety: every node applies the same entry at an index;
* monotonic commit: a node's commit index never goes back while it runs;
* durable quorum: when a leader commits index i, a quorum of its configuration has i, with the same
  term, in durable storage (this is what persist-before-send buys);
* durable votes: a server that granted a vote restarts with that term and vote (or a later term).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from garlicfarm.storage.interface import LogStore
from garlicfarm.wire.codec import encode_value
from garlicfarm.wire.payloads import Configuration, LogEntry


@attrs.frozen
class Violation:
    time: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"t={self.time}ms {self.rule}: {self.detail}"


def _key(entry: LogEntry) -> tuple[int, int, bytes]:
    return (entry.term, entry.value_type, encode_value(entry.value))


class InvariantChecker:
    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self.now = 0
        self._leaders: dict[int, int] = {}
        #: node -> (latest term it granted a vote in, to whom)
        self._votes: dict[int, tuple[int, int]] = {}
        #: (index, term) -> (entry key, term of index - 1)
        self._entries: dict[tuple[int, int], tuple[tuple[int, int, bytes], int | None]] = {}
        #: index -> key of the entry committed (applied) there
        self._committed: dict[int, tuple[int, int, bytes]] = {}
        #: index -> term of the first leader seen to commit it
        self._commit_terms: dict[int, int] = {}
        self._commit: dict[int, int] = {}
        #: index -> state machine state (snapshot bytes) after applying it
        self._states: dict[int, bytes] = {}

    def fail(self, rule: str, detail: str) -> None:
        self.violations.append(Violation(self.now, rule, detail))

    def restarted(self, node: int) -> None:
        self._commit.pop(node, None)

    def voted(self, node: int, term: int, candidate: int) -> None:
        """``node`` sent a vote grant for ``candidate`` in ``term``."""
        self._votes[node] = max(self._votes.get(node, (0, candidate)), (term, candidate))

    def vote_durable(self, node: int, term: int, voted_for: int | None) -> None:
        """``node`` restarts with durable ``term`` and ``voted_for``: no granted vote may be lost."""
        granted = self._votes.get(node)
        if granted is not None and (term < granted[0] or (term == granted[0] and voted_for != granted[1])):
            self.fail(
                "durable votes",
                f"node {node} granted its vote in term {granted[0]} to {granted[1]} but restarts with "
                f"term {term}, vote {voted_for}: it may vote twice in that term",
            )

    def leader(self, node: int, term: int) -> None:
        other = self._leaders.setdefault(term, node)
        if other != node:
            self.fail("election safety", f"nodes {other} and {node} both lead term {term}")

    def leader_committed(self, node: int, since: int, upto: int, term: int) -> None:
        """Leader ``node`` of ``term`` moved its commit index from ``since`` to ``upto``."""
        for index in range(since + 1, upto + 1):
            self._commit_terms.setdefault(index, term)

    def leader_log(self, node: int, leader_term: int, term_at: Iterable[tuple[int, int | None]]) -> None:
        """``term_at`` yields (index, term in the leader's log) for every committed index to check; a
        leader must hold those committed in terms before its own (Raft §5.4, Leader Completeness)."""
        for index, term in term_at:
            key = self._committed.get(index)
            if self._commit_terms.get(index, leader_term) >= leader_term:
                continue  # committed in this term or a later one: a stale leader may lack it
            if key is not None and term is not None and term != key[0]:
                self.fail(
                    "leader completeness",
                    f"leader {node} has term {term} at index {index}, committed entry has term {key[0]}",
                )
                return

    def committed_indexes(self) -> list[int]:
        return sorted(self._committed)

    def appended(self, node: int, index: int, entry: LogEntry, prev_term: int | None) -> None:
        record = self._entries.setdefault((index, entry.term), (_key(entry), prev_term))
        if record[0] != _key(entry):
            self.fail(
                "log matching", f"node {node} holds a different entry at index {index} term {entry.term}"
            )
        elif prev_term is not None and record[1] is not None and record[1] != prev_term:
            self.fail(
                "log matching",
                f"node {node}: entry {index} of term {entry.term} follows term {prev_term}, "
                f"elsewhere term {record[1]}",
            )

    def commit_index(self, node: int, commit: int) -> None:
        before = self._commit.get(node, 0)
        if commit < before:
            self.fail("monotonic commit", f"node {node} commit went from {before} to {commit}")
        self._commit[node] = commit

    def applied(self, node: int, index: int, entry: LogEntry, state: bytes) -> bool:
        """Record an applied entry and the state it led to; True if this index is new to everyone."""
        key = _key(entry)
        first = self._committed.setdefault(index, key)
        if first != key:
            self.fail("state machine safety", f"node {node} applied a different entry at index {index}")
        self.restored(node, index, state)
        return first is key

    def restored(self, node: int, index: int, state: bytes) -> None:
        """A node's state machine is ``state`` at ``index`` (after applying, or from a snapshot)."""
        known = self._states.setdefault(index, state)
        if known != state:
            self.fail("state machine safety", f"node {node} has a different state at index {index}")

    def config_change(self, node: int, index: int, before: Configuration, after: Configuration) -> None:
        """Single-server changes: any majority of ``before`` meets any majority of ``after``."""
        if not before.servers:
            return  # a joining server's first sight of the cluster: it had no configuration before
        changed = before.ids() ^ after.ids()
        if len(changed) > 1:
            self.fail(
                "configuration change",
                f"node {node} index {index}: {sorted(before.ids())} -> {sorted(after.ids())} changes "
                f"{len(changed)} servers: two disjoint majorities become possible",
            )

    def durable_quorum(
        self, leader: int, index: int, term: int, voters: frozenset[int], stores: Mapping[int, LogStore]
    ) -> None:
        holders = 0
        for voter in voters:
            store = stores.get(voter)
            if store is None:
                continue
            entries = store.entries(index, index + 1)
            if entries and entries[0].term == term:
                holders += 1
            elif not entries:
                snapshot = store.load().snapshot  # compacted: a durable snapshot covering it holds it
                if snapshot is not None and snapshot.last_index >= index:
                    holders += 1
        if holders < len(voters) // 2 + 1:
            self.fail(
                "durable quorum",
                f"leader {leader} committed index {index} (term {term}) held durably by {holders} of "
                f"{len(voters)} voters",
            )
