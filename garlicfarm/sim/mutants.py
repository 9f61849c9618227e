"""Raft cores with one rule deliberately broken, for the simulator's self-test."""

from __future__ import annotations

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.log import RaftLog
from garlicfarm.raft.progress import Progress
from garlicfarm.raft.types import Role


class OldTermCommitCore(RaftCore):
    """JRaft's rule: commit by counting replicas whatever the entry's term, and no entry of its own
    term at the start of a leadership. This is the Figure 8 bug of the Raft paper."""

    def _become_leader(self) -> None:
        self.role = Role.LEADER
        self.leader_id = self.id
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._votes = {}
        next_index = self.log.last_index + 1
        self.progress = {peer: Progress(next_index) for peer in self.voters() if peer != self.id}
        self._broadcast_pending = True

    def _maybe_commit(self) -> None:
        voters = self.voters()
        matches = sorted(
            (self._persisted_index if v == self.id else self.progress[v].match)
            for v in voters
            if v == self.id or v in self.progress
        )
        if len(matches) < self.quorum():
            return
        candidate = matches[len(matches) - self.quorum()]
        if candidate > self.commit:
            self.commit = candidate
            self._hard_dirty = True
            self._broadcast_pending = True
            self._resolve_clients()


class _AlwaysUpToDate(RaftLog):
    def is_up_to_date(self, last_term: int, last_index: int) -> bool:
        return True


class NoLogCheckVoteCore(RaftCore):
    """Grants votes without checking the candidate's log is at least as up to date (§5.4.1)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        log = _AlwaysUpToDate(
            self.log.snapshot_index,
            self.log.snapshot_term,
            self.log.slice(self.log.first_index, self.log.last_index + 1),
        )
        self.log = log
