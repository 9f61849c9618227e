"""Raft cores with one rule deliberately broken, for the simulator's self-test.

Each mutant overrides one method of :class:`RaftCore` and stands for a class of bug that mutation
testing showed could slip through. ``garlicfarm simulate --mutant NAME`` runs it; docs/verification.md
has the table of what each breaks and how many seeds the simulator needs to catch it.
"""

from __future__ import annotations

import attrs

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.log import RaftLog
from garlicfarm.raft.types import Ready, Role
from garlicfarm.wire.messages import (
    AppendEntriesResponse,
    InstallSnapshotRequest,
    Message,
    Response,
)
from garlicfarm.wire.payloads import SnapshotSyncRequest


class OldTermCommitCore(RaftCore):
    """JRaft's rule: commit by counting replicas whatever the entry's term (the Figure 8 bug of the
    Raft paper). The new leader's term-start entry stays: it is what a real core has, and dropping it
    too would make the bug easier to catch than it is."""

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
            self._after_leader_commit()


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


class VoteNotDurableCore(RaftCore):
    """A vote granted to another server is answered but never made durable: the hard state written
    carries no vote, so after a crash the server can vote again in the same term."""

    def ready(self) -> Ready:
        ready = super().ready()
        hs = ready.hard_state
        if hs is not None and hs.voted_for not in (None, self.id):
            ready = attrs.evolve(ready, hard_state=attrs.evolve(hs, voted_for=None))
        return ready


class StaleAppendResponseCore(RaftCore):
    """An AppendEntriesResponse from an earlier term still moves matchIndex: it acknowledged entries
    of an older leadership, which may no longer be in this leader's log."""

    def _step_response(self, m: Response) -> None:
        if isinstance(m, AppendEntriesResponse) and m.term < self.term and m.accepted:
            self._on_append_response(m)
            return
        super()._step_response(m)


class OverlappingChangeCore(RaftCore):
    """A second configuration change is accepted while one is still uncommitted (the single-server
    change rule of the Raft dissertation §4.1 needs the previous one committed first)."""

    def change_refusal(self) -> str | None:
        if self.role is not Role.LEADER:
            return "not the leader"
        if self._joining is not None:
            return "still joining"
        return None


class UncheckedChunkOffsetCore(RaftCore):
    """Snapshot chunks are appended wherever their offset says they belong: a duplicated, reordered
    or resent chunk is glued on, corrupting the snapshot."""

    def step(self, message: Message, handle: int | None = None) -> None:
        if isinstance(message, InstallSnapshotRequest) and self._incoming is not None:
            chunk = message.entries[0].value
            if (
                isinstance(chunk, SnapshotSyncRequest)
                and (chunk.last_log_index, chunk.last_log_term)
                == (self._incoming.last_index, self._incoming.last_term)
                and chunk.offset != 0
            ):
                # make the offset look right: the check that would refuse it is skipped
                value = attrs.evolve(chunk, offset=len(self._incoming.data))
                entry = attrs.evolve(message.entries[0], value=value)
                message = attrs.evolve(message, entries=(entry,))
        super().step(message, handle)


class OldSnapshotCore(RaftCore):
    """A snapshot at or below the commit index is installed anyway: the state machine goes back to
    an older state while the applied index stays."""

    def _handle_install_snapshot(self, m: InstallSnapshotRequest, handle: int) -> None:
        chunk = m.entries[0].value
        assert isinstance(chunk, SnapshotSyncRequest)
        if chunk.last_log_index <= self.commit:
            saved, self.commit = self.commit, min(self.commit, chunk.last_log_index - 1)
            try:
                super()._handle_install_snapshot(m, handle)
            finally:
                self.commit = max(self.commit, saved)
            return
        super()._handle_install_snapshot(m, handle)


class KeepConfigOnTruncateCore(RaftCore):
    """Truncating the log keeps the configurations the removed entries carried."""

    def _truncate_after(self, index: int) -> None:
        self._data_position = None
        self.log.truncate_and_append(index, [])


class RemovedCampaignsCore(RaftCore):
    """A server removed from the configuration (or told to leave) still campaigns."""

    def ticks_until_due(self) -> int | None:
        if self.role is not Role.LEADER:
            return max(1, self._randomized_timeout - self._election_elapsed)
        return super().ticks_until_due()

    def _tick(self) -> None:
        if self.role is not Role.LEADER and self._election_elapsed + 1 >= self._randomized_timeout:
            self._election_elapsed += 1
            self._campaign(pre=self.options.pre_vote)
            return
        super()._tick()


#: name -> (core class, what it breaks); the simulator's --mutant choices (with send_before_persist,
#: which breaks the driver's order rather than the core)
CORE_MUTANTS: dict[str, tuple[type[RaftCore], str]] = {
    "commit_old_terms": (OldTermCommitCore, "commits earlier terms' entries by counting replicas"),
    "skip_vote_log_check": (NoLogCheckVoteCore, "grants votes without the up-to-date log check"),
    "vote_not_durable": (VoteNotDurableCore, "a granted vote is not made durable before the reply"),
    "stale_append_response": (StaleAppendResponseCore, "a stale-term AppendEntriesResponse moves matchIndex"),
    "overlapping_changes": (OverlappingChangeCore, "a second configuration change while one is pending"),
    "unchecked_chunk_offset": (UncheckedChunkOffsetCore, "snapshot chunk offsets are not checked"),
    "old_snapshot": (OldSnapshotCore, "a snapshot below the commit index is installed"),
    "keep_config_on_truncate": (KeepConfigOnTruncateCore, "truncation does not roll back configurations"),
    "removed_campaigns": (RemovedCampaignsCore, "removed servers campaign"),
}
