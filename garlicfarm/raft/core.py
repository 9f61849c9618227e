"""The Raft algorithm as a pure state machine (etcd-io/raft's shape).

The caller steps messages and ticks in and drains a :class:`Ready` of what to persist, send, reply
and apply. No clock, socket, disk or global randomness: time is ``tick()``, randomness is the ``rng``
passed in, persistence is the driver's job, confirmed by :meth:`RaftCore.advance`.

Rules this core keeps that JRaft does not (see docs/raft.md):

* a leader commits by majority *and* only entries of its own term (Raft §5.4.2, Figure 8); a new
  leader appends a Configuration entry restating the current configuration, which doubles as the
  no-op that lets it commit earlier terms' entries;
* a follower commits up to min(leaderCommit, last entry this AppendEntries verified);
* pre-vote (§9.6) and check-quorum (§6.2): a server that was cut off cannot depose a healthy leader;
* a leader counts its own log only as far as it is durable.

Configuration changes take effect when their entry is appended (the Raft dissertation's rule).
"""

from __future__ import annotations

import heapq
import random
from typing import Any

from garlicfarm.raft.log import RaftLog
from garlicfarm.raft.progress import Progress, ProgressState
from garlicfarm.raft.types import PRE_VOTE_MARKER, RaftOptions, Ready, Reply, Role, Send
from garlicfarm.storage.interface import HardState, StoredState
from garlicfarm.wire.messages import (
    AppendEntriesRequest,
    AppendEntriesResponse,
    ClientRequest,
    Message,
    Request,
    RequestVoteRequest,
    RequestVoteResponse,
    Response,
)
from garlicfarm.wire.payloads import Configuration, LogEntry
from garlicfarm.wire.types import NO_LEADER

_RESPONSE_FOR: dict[int, type[Response]] = {}


def _response_class(request: Request) -> type[Response]:
    """The response type that answers ``request`` (ClientRequest is answered by AppendEntriesResponse)."""
    if not _RESPONSE_FOR:
        from garlicfarm.wire.messages import MESSAGE_CLASSES  # noqa: PLC0415 - built once, lazily

        for number, cls in MESSAGE_CLASSES.items():
            if issubclass(cls, Request):
                answer = MESSAGE_CLASSES[4 if number == 5 else number + 1]
                assert issubclass(answer, Response)
                _RESPONSE_FOR[number] = answer
    return _RESPONSE_FOR[request.TYPE]


def _entry_bytes(entry: LogEntry) -> int:
    value = entry.value
    data = getattr(value, "data", None)
    return 13 + (len(data) if isinstance(data, bytes) else 64)


class RaftCore:
    def __init__(
        self,
        server_id: int,
        stored: StoredState,
        rng: random.Random,
        bootstrap: Configuration | None = None,
        options: RaftOptions | None = None,
    ) -> None:
        self.id = server_id
        self.options = options or RaftOptions()
        self._rng = rng
        hs = stored.hard_state
        self.term = hs.term
        self.voted_for = hs.voted_for
        snap = stored.snapshot
        self.log = RaftLog(snap.last_index if snap else 0, snap.last_term if snap else 0, stored.entries)
        self.commit = max(self.log.snapshot_index, min(hs.commit, self.log.last_index))
        self.applied = self.log.snapshot_index
        self._persisted_index = self.log.last_index

        # Every configuration still in the log, oldest first; the last one is in force.
        base = snap.config if snap else (bootstrap or Configuration(0, 0, ()))
        self._configs: list[tuple[int, Configuration]] = [(self.log.snapshot_index, base)]
        for offset, entry in enumerate(stored.entries):
            if isinstance(entry.value, Configuration):
                self._configs.append((self.log.first_index + offset, entry.value))

        self.role = Role.FOLLOWER
        self.leader_id: int | None = None
        self._votes: dict[int, bool] = {}
        self.progress: dict[int, Progress] = {}
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._randomized_timeout = self._random_timeout()
        self._hard_dirty = False
        self._broadcast_pending = False
        self._sends: list[Send] = []
        self._replies: list[Reply] = []
        #: ClientRequests appended but not yet known committed or lost, a heap of (last index, term, handle).
        #: Only a commit index at or past the entry decides its fate: an entry overwritten here may
        #: still commit, from another server that holds it and wins an election.
        self._pending_clients: list[tuple[int, int, int]] = []

    # ------------------------------------------------------------------------------------------ queries

    @property
    def config(self) -> Configuration:
        return self._configs[-1][1]

    @property
    def config_index(self) -> int:
        return self._configs[-1][0]

    def voters(self) -> frozenset[int]:
        return self.config.ids()

    def quorum(self) -> int:
        return len(self.voters()) // 2 + 1

    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    def leader_endpoint(self) -> str | None:
        return None if self.leader_id is None else self.config.endpoint_of(self.leader_id)

    def status(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role.value,
            "term": self.term,
            "leader": self.leader_id,
            "commit_index": self.commit,
            "last_log_index": self.log.last_index,
            "applied_index": self.applied,
            "members": [{"id": s.id, "endpoint": s.endpoint} for s in self.config.servers],
            "progress": {
                str(peer): {"match": pr.match, "next": pr.next, "state": pr.state.value}
                for peer, pr in sorted(self.progress.items())
            },
        }

    # ------------------------------------------------------------------------------------------ input

    def tick(self) -> None:
        self._election_elapsed += 1
        if self.role is Role.LEADER:
            self._heartbeat_elapsed += 1
            if self._election_elapsed >= self.options.election_ticks:
                self._election_elapsed = 0
                if self.options.check_quorum and not self._quorum_active():
                    self._become_follower(self.term, None)
                    return
            if self._heartbeat_elapsed >= self.options.heartbeat_ticks:
                self._heartbeat_elapsed = 0
                self._heartbeat()
        elif self._election_elapsed >= self._randomized_timeout and self.id in self.voters():
            self._campaign(pre=self.options.pre_vote)

    def step(self, message: Message, handle: int | None = None) -> None:
        """Feed a message from a peer or client. Every request needs a ``handle``: the driver gets
        exactly one :class:`Reply` for it, in a later :meth:`ready`."""
        if isinstance(message, Response):
            self._step_response(message)
            return
        if handle is None:
            raise ValueError("a request needs a handle to reply to")
        if isinstance(message, ClientRequest):
            self._handle_client(message, handle)
            return
        if not self._step_term(message, handle):
            return
        if isinstance(message, RequestVoteRequest):
            self._handle_vote(message, handle)
        elif isinstance(message, AppendEntriesRequest):
            self._handle_append(message, handle)
        else:
            # Membership and snapshot requests are not served by this node (yet): refuse, name the leader.
            self._reply(handle, message, accepted=False, destination=self._leader_or_none())

    def propose(self, data: bytes, handle: int) -> None:
        """A local client request: the Reply for ``handle`` says whether ``data`` committed, and where."""
        from garlicfarm.wire.payloads import Application  # noqa: PLC0415 - avoids a cycle in type-only use

        self._handle_client(ClientRequest(entries=(LogEntry(0, Application(data)),)), handle)

    # ------------------------------------------------------------------------------------------ output

    def has_ready(self) -> bool:
        return bool(
            self._hard_dirty
            or self.log.unpersisted_from is not None
            or self._sends
            or self._replies
            or self.commit > self.applied
            or self._broadcast_pending
        )

    def ready(self) -> Ready:
        if self._broadcast_pending:
            self._broadcast_pending = False
            if self.role is Role.LEADER:
                for peer in self.progress:
                    self._send_appends(peer)
        hard_state = HardState(self.term, self.voted_for, self.commit) if self._hard_dirty else None
        self._hard_dirty = False
        entries_from, entries = self.log.take_unpersisted()
        committed: tuple[tuple[int, LogEntry], ...] = ()
        if self.commit > self.applied:
            lo = self.applied + 1
            committed = tuple(
                zip(range(lo, self.commit + 1), self.log.slice(lo, self.commit + 1), strict=True)
            )
            self.applied = self.commit
        ready = Ready(
            hard_state, entries_from, tuple(entries), tuple(self._sends), tuple(self._replies), committed
        )
        self._sends = []
        self._replies = []
        return ready

    def advance(self, ready: Ready) -> None:
        """The driver persisted ``ready``: our own log now counts towards commit as far as it is durable."""
        unpersisted = self.log.unpersisted_from
        self._persisted_index = self.log.last_index if unpersisted is None else unpersisted - 1
        if self.role is Role.LEADER:
            self._maybe_commit()

    # ------------------------------------------------------------------------------------------ terms

    def _step_term(self, m: Request, handle: int) -> bool:
        """Apply the term rules to a peer request; False if it was answered here already."""
        if m.term > self.term:
            if isinstance(m, RequestVoteRequest):
                if self._in_lease():
                    # We hear from a leader: a vote request cannot be legitimate yet (§4.2.3, §6.2).
                    self._reply(handle, m, accepted=False)
                    return False
                if m.commit_index != PRE_VOTE_MARKER:
                    self._become_follower(m.term, None)
            else:
                self._become_follower(m.term, m.source)
        elif m.term < self.term:
            # Stale sender; our term in the reply makes a deposed leader or candidate step down.
            self._reply(handle, m, accepted=False)
            return False
        return True

    def _in_lease(self) -> bool:
        return (
            self.options.check_quorum
            and self.leader_id is not None
            and self._election_elapsed < self.options.election_ticks
        )

    def _become_follower(self, term: int, leader: int | None) -> None:
        if term > self.term:
            self.term = term
            self.voted_for = None
            self._hard_dirty = True
        self.role = Role.FOLLOWER
        self.leader_id = leader
        self.progress = {}
        self._votes = {}
        self._election_elapsed = 0
        self._randomized_timeout = self._random_timeout()

    def _random_timeout(self) -> int:
        n = self.options.election_ticks
        return n + self._rng.randrange(n)

    # ------------------------------------------------------------------------------------------ elections

    def _campaign(self, pre: bool) -> None:
        self._election_elapsed = 0
        self._randomized_timeout = self._random_timeout()
        self.leader_id = None
        self.progress = {}
        if pre:
            self.role = Role.PRE_CANDIDATE
            term = self.term + 1
        else:
            self.role = Role.CANDIDATE
            self.term += 1
            self.voted_for = self.id
            self._hard_dirty = True
            term = self.term
        self._votes = {self.id: True}
        if self._tally() is True:
            self._won(pre)
            return
        for peer in sorted(self.voters() - {self.id}):
            self._sends.append(
                Send(
                    peer,
                    RequestVoteRequest(
                        source=self.id,
                        destination=peer,
                        term=term,
                        last_log_term=self.log.last_term,
                        last_log_index=self.log.last_index,
                        commit_index=PRE_VOTE_MARKER if pre else self.commit,
                    ),
                )
            )

    def _tally(self) -> bool | None:
        """True if the votes so far win, False if they can no longer win, None while undecided."""
        voters = self.voters()
        granted = sum(1 for v, ok in self._votes.items() if ok and v in voters)
        refused = sum(1 for v, ok in self._votes.items() if not ok and v in voters)
        if granted >= self.quorum():
            return True
        if refused > len(voters) - self.quorum():
            return False
        return None

    def _won(self, pre: bool) -> None:
        if pre:
            self._campaign(pre=False)
        else:
            self._become_leader()

    def _handle_vote(self, m: RequestVoteRequest, handle: int) -> None:
        up_to_date = self.log.is_up_to_date(m.last_log_term, m.last_log_index)
        if m.commit_index == PRE_VOTE_MARKER:
            grant = m.term > self.term and up_to_date
            term = m.term if grant else self.term
            self._reply(handle, m, accepted=grant, term=term, next_index=PRE_VOTE_MARKER)
            return
        can_vote = self.voted_for == m.source or (self.voted_for is None and self.leader_id is None)
        grant = can_vote and up_to_date
        if grant:
            self._election_elapsed = 0
            if self.voted_for != m.source:
                self.voted_for = m.source
                self._hard_dirty = True
        self._reply(handle, m, accepted=grant)

    def _on_vote_response(self, m: RequestVoteResponse) -> None:
        # A pre-vote grant must never count as a vote: it promised nothing and persisted nothing.
        is_pre_vote = m.next_index == PRE_VOTE_MARKER
        if self.role is Role.CANDIDATE and is_pre_vote:
            return
        if self.role is Role.PRE_CANDIDATE and m.accepted and not is_pre_vote:
            return
        if self.role not in (Role.CANDIDATE, Role.PRE_CANDIDATE):
            return
        self._votes.setdefault(m.source, m.accepted)
        outcome = self._tally()
        if outcome is True:
            self._won(self.role is Role.PRE_CANDIDATE)
        elif outcome is False:
            self._become_follower(self.term, None)

    # ------------------------------------------------------------------------------------------ leading

    def _become_leader(self) -> None:
        self.role = Role.LEADER
        self.leader_id = self.id
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._votes = {}
        next_index = self.log.last_index + 1
        self.progress = {peer: Progress(next_index) for peer in self.voters() if peer != self.id}
        # Restating the configuration is our no-op: an entry of this term that commits earlier ones.
        config = self.config
        restated = Configuration(next_index, self.config_index, config.servers)
        self._append_local([LogEntry(self.term, restated)])
        self._maybe_commit()

    def _append_local(self, entries: list[LogEntry]) -> int:
        first = self.log.last_index + 1
        last = self.log.append(entries)
        for offset, entry in enumerate(entries):
            if isinstance(entry.value, Configuration):
                self._configs.append((first + offset, entry.value))
        self._broadcast_pending = True
        return last

    def _quorum_active(self) -> bool:
        voters = self.voters()
        active = 1 if self.id in voters else 0
        for peer, pr in self.progress.items():
            if pr.recent_active and peer in voters:
                active += 1
            pr.recent_active = False
        return active >= self.quorum()

    def _heartbeat(self) -> None:
        for peer, pr in self.progress.items():
            if pr.state is ProgressState.REPLICATE and pr.inflight:
                pr.stalled_beats += 1
                if pr.stalled_beats >= 2:  # responses were lost (a dropped connection): probe again
                    pr.become_probe()
            pr.paused = False
            if not self._send_appends(peer):
                self._send_heartbeat(peer, pr)

    def _send_heartbeat(self, peer: int, pr: Progress) -> None:
        prev = max(pr.match, self.log.snapshot_index) if pr.state is ProgressState.REPLICATE else pr.next - 1
        prev_term = self.log.term_at(prev)
        if prev_term is None:
            return
        self._sends.append(Send(peer, self._append_request(peer, prev, prev_term, [])))

    def _append_request(self, peer: int, prev: int, prev_term: int, entries: list[LogEntry]) -> Request:
        return AppendEntriesRequest(
            source=self.id,
            destination=peer,
            term=self.term,
            last_log_term=prev_term,
            last_log_index=prev,
            commit_index=self.commit,
            entries=tuple(entries),
        )

    def _send_appends(self, peer: int) -> bool:
        """Send what ``peer`` lacks, as far as its progress state allows; True if anything was sent."""
        pr = self.progress[peer]
        sent = False
        while True:
            if pr.state is ProgressState.PROBE and pr.paused:
                return sent
            if pr.state is ProgressState.REPLICATE and (
                len(pr.inflight) >= self.options.max_inflight or pr.next > self.log.last_index
            ):
                return sent
            prev = pr.next - 1
            prev_term = self.log.term_at(prev)
            if prev_term is None:
                # The entries it needs were compacted away; snapshots are not served by this core yet.
                return sent
            entries = self._batch(pr.next)
            self._sends.append(Send(peer, self._append_request(peer, prev, prev_term, entries)))
            sent = True
            if pr.state is ProgressState.PROBE:
                pr.paused = True
                return sent
            pr.next = prev + len(entries) + 1
            pr.inflight.append(pr.next - 1)

    def _batch(self, start: int) -> list[LogEntry]:
        end = min(self.log.last_index + 1, start + self.options.max_entries_per_append)
        entries = self.log.slice(start, end)
        budget = self.options.max_bytes_per_append
        for i, entry in enumerate(entries):
            budget -= _entry_bytes(entry)
            if budget < 0 and i > 0:
                return entries[:i]
        return entries

    def _on_append_response(self, m: AppendEntriesResponse) -> None:
        pr = self.progress.get(m.source)
        if self.role is not Role.LEADER or pr is None:
            return
        pr.recent_active = True
        if m.accepted:
            matched = m.next_index - 1
            if matched > self.log.last_index:
                return  # a response no AppendEntries of ours could have earned
            if pr.acknowledge(matched):
                self._maybe_commit()
            if pr.state is ProgressState.PROBE:
                pr.become_replicate()
            pr.paused = False
        else:
            # next_index is the follower's hint; never go below what it has acknowledged.
            pr.next = max(pr.match + 1, min(m.next_index, pr.next - 1))
            pr.state = ProgressState.PROBE
            pr.inflight.clear()
            pr.paused = False
        self._send_appends(m.source)

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
        # §5.4.2: only an entry of the current term commits by counting replicas.
        if candidate > self.commit and self.log.term_at(candidate) == self.term:
            self.commit = candidate
            self._hard_dirty = True
            self._broadcast_pending = True
            self._resolve_clients()

    # ------------------------------------------------------------------------------------------ following

    def _handle_append(self, m: AppendEntriesRequest, handle: int) -> None:
        if self.role is not Role.FOLLOWER:
            self._become_follower(self.term, m.source)
        self.leader_id = m.source
        self._election_elapsed = 0
        prev, entries = m.last_log_index, list(m.entries)
        prev_term: int | None = m.last_log_term
        if prev < self.commit:
            # Our log up to the commit index matches every leader's: skip what we already hold.
            skip = min(len(entries), self.commit - prev)
            prev, entries = prev + skip, entries[skip:]
            prev_term = self.log.term_at(prev)
            if prev_term is None:  # below our snapshot
                prev, entries, prev_term = self.commit, [], self.log.term_at(self.commit)
        if prev < self.log.snapshot_index or self.log.term_at(prev) != prev_term:
            self._reply(handle, m, accepted=False, next_index=self._conflict_hint(prev))
            return
        self._append_from_leader(prev, entries)
        verified = prev + len(entries)
        commit = min(m.commit_index, verified)
        if commit > self.commit:
            self.commit = commit
            self._hard_dirty = True
            self._resolve_clients()
        self._reply(handle, m, accepted=True, next_index=verified + 1)

    def _conflict_hint(self, prev: int) -> int:
        """Where the leader should retry: past our log's end, or the start of the conflicting term."""
        if prev > self.log.last_index:
            return self.log.last_index + 1
        term = self.log.term_at(prev)
        index = prev
        floor = max(self.commit, self.log.snapshot_index) + 1
        while index > floor and self.log.term_at(index - 1) == term:
            index -= 1
        return max(index, floor)

    def _append_from_leader(self, prev: int, entries: list[LogEntry]) -> None:
        for offset, entry in enumerate(entries):
            index = prev + 1 + offset
            existing = self.log.term_at(index)
            if existing == entry.term:
                continue
            if existing is not None:
                assert index > self.commit, "a leader contradicted a committed entry"
                self._truncate_after(index - 1)
            self._append_local(entries[offset:])
            self._broadcast_pending = False  # followers do not broadcast
            return

    def _truncate_after(self, index: int) -> None:
        self.log.truncate_and_append(index, [])
        while self._configs[-1][0] > index:
            self._configs.pop()

    # ------------------------------------------------------------------------------------------ clients

    def _handle_client(self, m: ClientRequest, handle: int) -> None:
        if self.role is not Role.LEADER:
            self._client_reply(handle, accepted=False)
            return
        if not m.entries:  # a probe: "are you the leader?"
            self._client_reply(handle, accepted=True, next_index=self.log.last_index + 1)
            return
        last = self._append_local([LogEntry(self.term, e.value) for e in m.entries])
        heapq.heappush(self._pending_clients, (last, self.term, handle))
        self._maybe_commit()

    def _resolve_clients(self) -> None:
        while self._pending_clients and self._pending_clients[0][0] <= self.commit:
            index, term, handle = heapq.heappop(self._pending_clients)
            committed = self.log.term_at(index) == term
            self._client_reply(handle, accepted=committed, next_index=index + 1 if committed else 0)

    def _client_reply(self, handle: int, accepted: bool, next_index: int = 0) -> None:
        self._replies.append(
            Reply(
                handle,
                AppendEntriesResponse(
                    source=self.id,
                    destination=self._leader_or_none(),
                    term=self.term,
                    next_index=next_index,
                    accepted=accepted,
                ),
            )
        )

    # ------------------------------------------------------------------------------------------ helpers

    def _step_response(self, m: Response) -> None:
        if m.term > self.term:
            granted_pre_vote = (
                isinstance(m, RequestVoteResponse)
                and self.role is Role.PRE_CANDIDATE
                and m.accepted
                and m.next_index == PRE_VOTE_MARKER
                and m.term == self.term + 1
            )
            if not granted_pre_vote:
                self._become_follower(m.term, None)
                return
        elif m.term < self.term:
            return
        if isinstance(m, RequestVoteResponse):
            self._on_vote_response(m)
        elif isinstance(m, AppendEntriesResponse):
            self._on_append_response(m)

    def _leader_or_none(self) -> int:
        return NO_LEADER if self.leader_id is None else self.leader_id

    def _reply(
        self,
        handle: int,
        request: Request,
        accepted: bool,
        next_index: int = 0,
        term: int | None = None,
        destination: int | None = None,
    ) -> None:
        cls = _response_class(request)
        self._replies.append(
            Reply(
                handle,
                cls(
                    source=self.id,
                    destination=request.source if destination is None else destination,
                    term=self.term if term is None else term,
                    next_index=next_index,
                    accepted=accepted,
                ),
            )
        )
