"""The Raft algorithm as a pure state machine (etcd-io/raft's shape).

The caller steps messages and ticks in and drains a :class:`Ready` of what to persist, send, reply
and apply. No clock, socket, disk or global randomness: time is ``tick()``, randomness is the ``rng``
passed in, persistence is the driver's job, confirmed by :meth:`RaftCore.advance`.

Rules this core keeps that JRaft does not (see docs/raft.md):

* a leader commits by majority *and* only entries of its own term (Raft §5.4.2, Figure 8); a new
  leader appends a Configuration entry restating the current configuration, which doubles as the
  no-op that lets it commit earlier terms' entries;
* a follower commits up to min(leaderCommit, last entry this AppendEntries verified);
* pre-vote (§9.6) and check-quorum (§6.2): a server that was cut off cannot depose a healthy leader
  (with peers that speak pre-vote; a JRaft peer gets plain Raft votes, see docs/raft.md);
* a leader counts its own log only as far as it is durable;
* leadership transfer (§3.10) with peers that negotiated it: the leader stops taking requests, brings
  a voter up to date, then tells it to campaign at once (see :meth:`RaftCore.transfer_leadership`).

Configuration changes take effect when their entry is appended (the Raft dissertation's rule).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from typing import Any

import attrs

from garlicfarm.raft.log import RaftLog
from garlicfarm.raft.progress import Progress, ProgressState
from garlicfarm.raft.types import (
    PRE_VOTE_MARKER,
    TIMEOUT_NOW_MARKER,
    TRANSFER_VOTE_MARKER,
    InstalledSnapshot,
    RaftOptions,
    Ready,
    Reply,
    Role,
    Send,
)
from garlicfarm.storage.interface import HardState, SnapshotMeta, StoredState
from garlicfarm.wire.codec import encode_value
from garlicfarm.wire.messages import (
    AddServerRequest,
    AddServerResponse,
    AppendEntriesRequest,
    AppendEntriesResponse,
    ClientRequest,
    InstallSnapshotRequest,
    InstallSnapshotResponse,
    JoinClusterRequest,
    JoinClusterResponse,
    LeaveClusterRequest,
    Message,
    RemoveServerRequest,
    RemoveServerResponse,
    Request,
    RequestVoteRequest,
    RequestVoteResponse,
    Response,
    SyncLogRequest,
    SyncLogResponse,
)
from garlicfarm.wire.payloads import (
    Application,
    ClusterServer,
    Configuration,
    LogEntry,
    LogPack,
    SnapshotSyncRequest,
)
from garlicfarm.wire.types import NO_LEADER

#: nextIndex in an InstallSnapshotResponse meaning "I already have everything this snapshot covers":
#: past any snapshot's end for us, and for JRaft too, whose signed long would read 2**64-1 as -1
SNAPSHOT_NOT_NEEDED = 0x7FFFFFFFFFFFFFFF


@attrs.define
class _Joining:
    """A server being added: caught up with SyncLog/InstallSnapshot before it becomes a voter."""

    server: ClusterServer
    progress: Progress
    handle: int
    invitation: Configuration
    idle_ticks: int = 0
    #: it answered the JoinClusterRequest: what is resent after silence is the SyncLog, not the invitation
    accepted: bool = False
    #: the last index the latest SyncLog carried: answers to older copies (resent after silence) must
    #: not each trigger another send, or copies pile up behind a slow server
    sent_upto: int = 0


@attrs.define
class _Incoming:
    """A snapshot being received, chunk by chunk."""

    last_index: int
    last_term: int
    data: bytearray


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


#: a probe's entries go again after this many heartbeats without an answer (empty heartbeats go
#: every beat); an answer to anything sends them at once
PROBE_RESEND_BEATS = 4


def _entry_bytes(entry: LogEntry) -> int:
    value = entry.value
    data = getattr(value, "data", None)
    return 13 + (len(data) if isinstance(data, bytes) else 64)


#: each election lost by refusal multiplies the lower end of the election timeout by 2**BACKOFF_SHIFT
#: (4), up to ``max_backoff_ticks``: doubling needed 5 losses to get from the "lan" profile's 150 ms to
#: the 6 s bound, and a farm of 2 JRaft nodes and a lagging garlicfarm node then took 9-12 s to elect
#: (docs/raft.md, "Backing off")
BACKOFF_SHIFT = 2


class RaftCore:
    def __init__(
        self,
        server_id: int,
        stored: StoredState,
        rng: random.Random,
        bootstrap: Configuration | None = None,
        options: RaftOptions | None = None,
        snapshot_data: bytes = b"",
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
        #: elections lost by refusal since this server last heard a leader, granted a vote or won: each
        #: one multiplies the lower end of the election timeout by 4 (BACKOFF_SHIFT), up to
        #: ``max_backoff_ticks`` ("Backing off" in docs/raft.md)
        self.election_backoff = 0
        #: in the current campaign: peers whose pre-vote grant vouched for our log, and peers that asked
        #: us for a real vote in our own candidate term (rivals): their refusals say nothing of our log
        self._vouched: set[int] = set()
        self._rivals: set[int] = set()
        #: the commit index the leader last sent us: a follower without all of it defers its campaign
        self._leader_commit = 0
        #: this pre-vote round belongs to a ranked campaign: it is asked again after a short wait
        self._quick_pre_votes = False
        self._randomized_timeout = self._random_timeout()
        self._hard_dirty = False
        self._broadcast_pending = False
        self._sends: list[Send] = []
        self._replies: list[Reply] = []
        #: Requests waiting for their entry's fate, a heap of (last index, term, handle, response type):
        #: client requests and membership changes. Only a commit index at or past the entry decides:
        #: an entry overwritten here may still commit, from another server that holds it and wins.
        self._pending_clients: list[tuple[int, int, int, type[Response]]] = []
        #: the latest snapshot's bytes (what a lagging follower is sent)
        self._snapshot_data = snapshot_data
        self._incoming: _Incoming | None = None
        #: why a received snapshot cannot be restored, or None (set by the driver from its state
        #: machine: a pure function of the bytes); a refused snapshot is never installed
        self.snapshot_check: Callable[[bytes], str | None] = lambda _data: None
        self._installed: InstalledSnapshot | None = None
        self._joining: _Joining | None = None
        #: servers removed by a configuration entry at this index, to be told to leave once it commits
        self._leaving: dict[int, tuple[int, str | None]] = {}
        #: told to leave the cluster: never campaigns until invited back
        self.removed = False
        #: the leader's commit index when it told this server to leave (see _handle_leave)
        self.removed_by: int | None = None
        #: why the driver stopped this node (see ``halt``), or None while it runs
        self.stopped_by: str | None = None
        #: the configuration a leader sent with JoinClusterRequest, while this server catches up
        self.join_config: Configuration | None = None
        #: why the last catch-up from a leader was refused, if it was
        self.join_refusal: str | None = None
        #: the last membership change this leader refused: (server id, why), for the operator
        self.change_refused: tuple[int, str] | None = None
        #: how long a tick is, when the driver says (messages then speak of seconds, not ticks)
        self.tick_seconds: float | None = None
        #: the last claim to a term's leadership that another server already held (Raft elects one
        #: leader a term: a second claimant is forged or misconfigured), and how many were refused
        self.leader_conflict: str | None = None
        self.leader_conflicts = 0
        #: what the driver learnt from each peer's handshake: does it speak pre-vote?
        self._pre_vote_support: dict[int, bool] = {}
        #: ... and does it take part in leadership transfer (TimeoutNow, transfer votes)?
        self._transfer_support: dict[int, bool] = {}
        #: the voter this leader is handing over to, and for how many ticks it has been trying
        self.transfer_target: int | None = None
        self._transfer_elapsed = 0
        self._timeout_now_sent = False
        #: (snapshot index, log index, position): where that entry's record lies in the JRaft-style data
        #: file of our log (LogPack offsets), remembered so consecutive packs cost O(pack)
        self._data_position: tuple[int, int, int] | None = None

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
        if self.leader_id is None:
            return None
        endpoint = self.config.endpoint_of(self.leader_id)
        if endpoint is None and self.join_config is not None:
            endpoint = self.join_config.endpoint_of(self.leader_id)
        return endpoint

    def electable(self) -> bool:
        """Whether this server may campaign: it is in its configuration, or only configurations not
        yet committed leave it out (a leader's term-start entry may repeat one). Then it may be the one
        server whose log can win (a leader that removed itself and lost its majority before that
        configuration committed: the simulator found a farm stuck so), and it leads without counting
        itself until the configuration commits, as a leader outside C_new does (Raft dissertation
        §4.2.2)."""
        if self.removed:
            return False
        # the configuration in force at the commit index: what is known to be decided
        return self.id in self.voters() or self.id in self.config_at(self.commit).ids()

    def removal_index(self) -> int | None:
        """The index of the committed configuration that left this server out, when a configuration
        before it had it as a member (a server waiting to be invited was never removed); else None."""
        committed = [(at, config) for at, config in self._configs if at <= self.commit]
        if not committed or self.id in committed[-1][1].ids():
            return None
        if not any(self.id in config.ids() for _at, config in committed):
            return None
        return committed[-1][0]

    def change_refusal(self) -> str | None:
        """Why a configuration change cannot start now, or None if it can."""
        if self.role is not Role.LEADER:
            return "not the leader"
        if self.transfer_target is not None:
            return f"handing the leadership over to server {self.transfer_target}"
        if self._joining is not None:
            return f"server {self._joining.server.id} is still joining; one configuration change at a time"
        if self.config_index > self.commit:
            return "a configuration change is still being committed; one configuration change at a time"
        return None

    def snapshot_meta(self) -> SnapshotMeta | None:
        if self.log.snapshot_index == 0:
            return None
        return SnapshotMeta(
            self.log.snapshot_index, self.log.snapshot_term, self.config_at(self.log.snapshot_index)
        )

    def config_at(self, index: int) -> Configuration:
        """The configuration in force at log index ``index``."""
        for at, config in reversed(self._configs):
            if at <= index:
                return config
        return self._configs[0][1]

    def contacts(self) -> frozenset[int]:
        """The servers this node may still need to reach: members, the server joining, servers being
        told to leave, and (while joining) the members of the configuration it was sent."""
        ids = set(self.config.ids())
        if self._joining is not None:
            ids.add(self._joining.server.id)
        ids.update(self._leaving)
        if self.join_config is not None:
            ids.update(self.join_config.ids())
        ids.discard(self.id)
        return frozenset(ids)

    def halt(self, reason: str) -> None:
        """The node stopped: it claims no role and no leader any more (status, 101 headers, console)."""
        self.role = Role.STOPPED
        self.leader_id = None
        self.stopped_by = reason

    def status(self) -> dict[str, Any]:
        return {
            "stopped_by": self.stopped_by,
            "id": self.id,
            "role": self.role.value,
            "removed": self.removed,
            "term": self.term,
            "leader": self.leader_id,
            "commit_index": self.commit,
            "last_log_index": self.log.last_index,
            "applied_index": self.applied,
            "members": [{"id": s.id, "endpoint": s.endpoint} for s in self.config.servers],
            "snapshot_index": self.log.snapshot_index,
            "joining": None if self._joining is None else self._joining.server.id,
            "join_refusal": self.join_refusal,
            "change_refused": None
            if self.change_refused is None
            else {"server": self.change_refused[0], "why": self.change_refused[1]},
            "leader_conflict": self.leader_conflict,
            "leader_conflicts": self.leader_conflicts,
            "election_backoff": self.election_backoff,
            "progress": {
                str(peer): {"match": pr.match, "next": pr.next, "state": pr.state.value}
                for peer, pr in sorted(self.progress.items())
            },
        }

    # ------------------------------------------------------------------------------------------ input

    def set_pre_vote_support(self, peer: int, supported: bool) -> None:
        """The driver learnt from ``peer``'s handshake whether it speaks pre-vote (JRaft does not)."""
        self._pre_vote_support[peer] = supported

    def set_transfer_support(self, peer: int, supported: bool) -> None:
        """The driver learnt from ``peer``'s handshake whether it takes part in leadership transfer."""
        self._transfer_support[peer] = supported

    def link_up(self, peer: int) -> None:
        """A link to ``peer`` came up: what went to it before was lost with the old link, or never
        left. A leader sends it what it lacks now rather than at its next heartbeat (a new leader
        whose link to its only follower came up after its election waited a heartbeat for its
        first commit). Raft lets a leader send AppendEntries when it likes: this only sends sooner
        what its heartbeats would have resent."""
        pr = self.progress.get(peer)  # (only a leader tracks its followers' progress)
        if pr is None or pr.state is ProgressState.SNAPSHOT:
            return  # (a snapshot chunk's resend waits for the heartbeat, as its answer does)
        if pr.state is ProgressState.REPLICATE:
            pr.become_probe()  # what was in flight is gone: from what it acknowledged
        pr.paused = False  # (sending the probe counts its resend from now)
        self._send_appends(peer)

    def _transfers_with(self, peer: int) -> bool:
        """Whether ``peer`` understands TimeoutNow and transfer votes. Unknown peers are not sent them
        when features are negotiated: JRaft would read a marker as a commit index."""
        if not self.options.negotiated_pre_vote:
            return True
        return self._transfer_support.get(peer, False)

    def transfer_leadership(self, target: int | None = None) -> int | None:
        """Hand the leadership over (Raft dissertation §3.10): stop taking client requests and
        configuration changes, bring ``target`` (default: the most caught-up voter that speaks the
        transfer feature) up to date, then send it TimeoutNow so that it campaigns at once. Returns the
        target, or None when no voter can take over. The transfer is abandoned (requests are taken
        again) after an election timeout without a new leader."""
        if self.role is not Role.LEADER:
            return None
        candidates = [
            peer
            for peer, pr in self.progress.items()
            if peer in self.voters() and self._transfers_with(peer) and pr.state is not ProgressState.SNAPSHOT
        ]
        if target is not None:
            candidates = [peer for peer in candidates if peer == target]
        if not candidates:
            return None
        chosen = max(
            candidates, key=lambda peer: (self.progress[peer].match, self.progress[peer].recent_active, -peer)
        )
        self.transfer_target = chosen
        self._transfer_elapsed = 0
        self._timeout_now_sent = False
        self._maybe_timeout_now(chosen)
        return chosen

    def _maybe_timeout_now(self, target: int) -> None:
        """Once the transfer target holds our whole log, tell it to campaign (once; a heartbeat
        allows it again). Until then replication catches it up, and each of its answers looks again."""
        pr = self.progress.get(target)
        if pr is None or self._timeout_now_sent or pr.match < self.log.last_index:
            return
        self._timeout_now_sent = True
        self._sends.append(
            Send(
                target,
                RequestVoteRequest(
                    source=self.id,
                    destination=target,
                    term=self.term,
                    last_log_term=self.log.last_term,
                    last_log_index=self.log.last_index,
                    commit_index=TIMEOUT_NOW_MARKER,
                ),
            )
        )

    def _end_transfer(self) -> None:
        self.transfer_target = None  # transfer_leadership resets the rest when one starts

    def _pre_votes_with(self, peer: int) -> bool:
        """Whether ``peer`` is asked for pre-votes. Unknown peers are asked: the request can only leave
        on a connection whose handshake has shown the peer's features, and the driver drops a pre-vote
        to a peer without them (it never reaches a JRaft node)."""
        if not self.options.negotiated_pre_vote:
            return True
        return self._pre_vote_support.get(peer, True)

    def _lease_refuses(self, candidate: int) -> bool:
        """Whether the lease lets us refuse ``candidate``'s real vote without adopting its term.

        Only for a candidate that speaks pre-vote: it got here by winning a pre-vote round, and the
        refusal stops a server that skips that round (a removed one, §4.2.3) from disrupting a live
        leader. A peer that never pre-votes (JRaft) gets plain Raft: we adopt its term and vote by the
        usual rules; a lower-term refusal would be ignored by it and only slow every failover down.
        Safety never rests on the lease (no lease reads here): terms and the vote rules carry it.
        """
        if not self.options.negotiated_pre_vote:
            return True
        return self._pre_vote_support.get(candidate, False)

    def tick(self, count: int = 1) -> None:
        """``count`` ticks of the clock, exactly as ``count`` calls of one tick each: the ticks that
        :meth:`ticks_until_due` says can only count are counted at once, the others run one by one.
        One tick is always a whole one: a fixed-rate driver and the simulator do not lean on the bound
        (and the tests that compare the two ways with it test the bound)."""
        if count == 1:
            self._tick()
            return
        while count > 0:
            due = self.ticks_until_due()
            if due is None or due > count:
                self._count_ticks(count)
                return
            self._count_ticks(due - 1)
            self._tick()
            count -= due

    def ticks_until_due(self) -> int | None:
        """How many ticks from now the first one comes that may do more than count (campaign, back
        off, send heartbeats, check the quorum, give up a handover, resend to or give up on a joining
        server), or None when no tick will until a message or a call changes this server's state (a
        follower that may not campaign). A lower bound: the ticks before that one only add to the
        counters, so a driver may sleep that long and catch up with one :meth:`tick` call. Never 0."""
        options = self.options
        elapsed = self._election_elapsed
        if self.role is not Role.LEADER:
            if not self.electable():
                return None
            return max(1, self._campaign_after() - elapsed)
        due = min(
            max(1, options.election_ticks - elapsed),
            max(1, options.heartbeat_ticks - self._heartbeat_elapsed),
        )
        if self.transfer_target is not None:
            due = min(due, max(1, options.election_ticks - self._transfer_elapsed))
        joining = self._joining
        if joining is not None:
            every = 2 * options.heartbeat_ticks
            due = min(
                due,
                max(1, options.join_timeout_ticks + 1 - joining.idle_ticks),
                every - joining.idle_ticks % every,
            )
        return due

    def _count_ticks(self, count: int) -> None:
        """``count`` ticks that :meth:`ticks_until_due` said only count (what :meth:`_tick` adds)."""
        if count <= 0:
            return
        self._election_elapsed += count
        if self.role is Role.LEADER:
            self._heartbeat_elapsed += count
            if self.transfer_target is not None:
                self._transfer_elapsed += count
            if self._joining is not None:
                self._joining.idle_ticks += count

    def _tick(self) -> None:
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
                if self.transfer_target is not None:
                    self._timeout_now_sent = False  # a lost TimeoutNow is sent again
                    self._maybe_timeout_now(self.transfer_target)
            if self.transfer_target is not None:
                self._transfer_elapsed += 1
                if self._transfer_elapsed >= self.options.election_ticks:
                    self._end_transfer()  # the target did not take over: lead on
            self._tick_joining()
        elif self._election_elapsed >= self._campaign_after() and self.electable():
            if self.role is Role.CANDIDATE and self._lost_by_refusal():
                # The election timed out, refused by a voter that had no reason but its log: wait
                # longer before the next term instead of starting it now.
                self._back_off()
                return
            self._campaign(pre=self.options.pre_vote)

    def step(self, message: Message, handle: int | None = None) -> None:
        """Feed a message from a peer or client. Every request needs a ``handle``: the driver gets
        exactly one :class:`Reply` for it, in a later :meth:`ready`."""
        if isinstance(message, Response):
            self._step_response(message)
            return
        if handle is None:
            raise ValueError("a request needs a handle to reply to")
        # Requests from clients (and servers acting as clients) carry no meaningful term.
        if isinstance(message, ClientRequest):
            self._handle_client(message, handle)
            return
        if isinstance(message, AddServerRequest):
            self._handle_add_server(message, handle)
            return
        if isinstance(message, RemoveServerRequest):
            self._handle_remove_server(message, handle)
            return
        if not self._step_term(message, handle):
            return
        if not isinstance(message, RequestVoteRequest) and self._second_leader(message, handle):
            return
        if isinstance(message, RequestVoteRequest):
            self._handle_vote(message, handle)
        elif isinstance(message, AppendEntriesRequest | SyncLogRequest):
            self._handle_append(message, handle)
        elif isinstance(message, JoinClusterRequest):
            self._handle_join(message, handle)
        elif isinstance(message, InstallSnapshotRequest):
            self._handle_install_snapshot(message, handle)
        elif isinstance(message, LeaveClusterRequest):
            self._handle_leave(message, handle)

    def propose(self, data: bytes, handle: int) -> None:
        """A local client request: the Reply for ``handle`` says whether ``data`` committed, and where."""
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
            or self._installed is not None
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
            hi = min(self.commit, self.applied + self.options.max_apply_per_ready)
            committed = tuple(zip(range(lo, hi + 1), self.log.slice(lo, hi + 1), strict=True))
            self.applied = hi
        ready = Ready(
            snapshot=self._installed,
            hard_state=hard_state,
            entries_from=entries_from,
            entries=tuple(entries),
            sends=tuple(self._sends),
            replies=tuple(self._replies),
            committed=committed,
            last_index=self.log.last_index,
            last_term=self.log.last_term,
            from_leader=self.role is Role.LEADER,
        )
        self._installed = None
        self._sends = []
        self._replies = []
        return ready

    def advance(self, ready: Ready) -> None:
        """``ready``'s save is durable (and every earlier one): our own log counts towards commit as
        far as the store now holds it. The driver may call this after later Readies were made (its
        writes are asynchronous); a log changed since at ``ready.last_index`` (a truncation and a
        newer term's entry there) agrees with the store only up to the truncation, which
        :meth:`_truncate_after` accounted for (Log Matching: same index and term, same prefix)."""
        if ready.needs_persist() and self.log.term_at(ready.last_index) == ready.last_term:
            self._persisted_index = max(self._persisted_index, ready.last_index)
        if self.role is Role.LEADER:
            self._maybe_commit()

    # ------------------------------------------------------------------------------------------ terms

    def _step_term(self, m: Request, handle: int) -> bool:
        """Apply the term rules to a peer request; False if it was answered here already."""
        if m.term > self.term:
            if isinstance(m, RequestVoteRequest):
                transfer = m.commit_index == TRANSFER_VOTE_MARKER
                if self._in_lease() and self._lease_refuses(m.source) and not transfer:
                    # We hear from a leader: a vote request cannot be legitimate yet (§4.2.3, §6.2).
                    self._reply(handle, m, accepted=False)
                    return False
                if m.commit_index != PRE_VOTE_MARKER:
                    # Adopt the term, but only a granted vote restarts the election timer (Raft
                    # §5.2): a candidate whose log is behind would otherwise hold back, round after
                    # round, the one server that could win (a livelock the simulator found with
                    # plain votes, as with JRaft peers, and a faster-ticking stale server).
                    elapsed = self._election_elapsed if self.role is Role.FOLLOWER else None
                    self._become_follower(m.term, None)
                    if elapsed is not None:
                        self._election_elapsed = elapsed
            else:
                self._become_follower(m.term, m.source)
        elif m.term < self.term:
            # Stale sender; our term in the reply makes a deposed leader or candidate step down.
            self._reply(handle, m, accepted=False)
            return False
        return True

    def _second_leader(self, m: Request, handle: int) -> bool:
        """A leader's message from a server other than the one that leads this term: refused (Raft
        elects at most one leader a term, §5.2). Taken, it would make entries of the same term and
        index differ, and the log matching that lets a follower skip what it holds would keep them."""
        known = self.id if self.role is Role.LEADER else self.leader_id
        if m.term != self.term or known is None or known == m.source:
            return False
        self.leader_conflict = (
            f"server {m.source} sent {type(m).__name__} as leader of term {m.term}, "
            f"which server {known} leads: refused"
        )
        self.leader_conflicts += 1
        self._reply(handle, m, accepted=False)
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
        if self._joining is not None:
            # Not appended yet, so definitely not added: say so now.
            self._abandon_join("this server lost the leadership before it had caught the new server up")
        self.role = Role.FOLLOWER
        self.leader_id = leader
        self.progress = {}
        self._end_transfer()
        self._votes = {}
        self._election_elapsed = 0
        self._randomized_timeout = self._random_timeout()

    def _random_timeout(self) -> int:
        n = self.options.election_ticks
        if self.election_backoff:
            n = min(
                n << min(BACKOFF_SHIFT * self.election_backoff, 64), max(n, self.options.max_backoff_ticks)
            )
        elif self._ranked():
            assert self.leader_id is not None
            gap = self.options.campaign_rank_ticks
            return n + self._campaign_rank(self.leader_id) * gap + self._rng.randrange(max(1, gap // 8))
        return n + self._rng.randrange(n)

    def _ranked(self) -> bool:
        """Whether this server's campaigns are ranked now: a follower that knew a leader of its term.
        Raft leaves the order of candidates free; two survivors whose random timeouts fall within a
        round trip split the vote, which costs a whole election timeout more (over I2P, 10-20 s)."""
        return (
            bool(self.options.campaign_rank_ticks)
            and self.role is Role.FOLLOWER
            and self.leader_id is not None
        )

    def _campaign_rank(self, leader: int) -> int:
        """This server's place among the other voters in the ring of ids that starts after ``leader``:
        every follower of one leader, with the same configuration, takes a different one."""
        voters = self.voters()
        ring = max(voters | {leader, self.id}) + 1
        mine = (self.id - leader) % ring
        return sum(1 for v in voters if v not in (leader, self.id) and (v - leader) % ring < mine)

    def _campaign_after(self) -> int:
        """Ticks without a leader after which this server campaigns: its timeout, later by one rank a
        voter while it lacks entries its leader said were committed (it cannot win against those who
        hold them, and its refused campaign would only delay theirs)."""
        if self._ranked() and self._leader_commit > self.log.last_index:
            return self._randomized_timeout + self.options.campaign_rank_ticks * len(self.voters())
        return self._randomized_timeout

    def _lost_by_refusal(self) -> bool:
        """Whether a voter refused this candidate's real vote for no reason we can see but its log: it
        had not vouched for our log in this campaign's pre-vote round and was not a rival candidate of
        our term. A split vote (rivals, or voters that had vouched for us) or silence is no such loss."""
        voters = self.voters()
        return any(
            not ok and v in voters and v not in self._vouched and v not in self._rivals
            for v, ok in self._votes.items()
        )

    def _back_off(self) -> None:
        """An election lost by refusal: a follower again, in the same term, with a longer timeout."""
        self.election_backoff += 1
        self._become_follower(self.term, None)

    def _heard_leader_or_voted(self) -> None:
        """A leader of our term spoke, we granted a vote, or we won: elections go at normal pace."""
        if self.election_backoff:
            self.election_backoff = 0
            self._randomized_timeout = self._random_timeout()

    # ------------------------------------------------------------------------------------------ elections

    def _campaign(self, pre: bool, transfer: bool = False, vouched: frozenset[int] = frozenset()) -> None:
        self._end_transfer()
        self._vouched = set(vouched)
        self._rivals = set()
        self._election_elapsed = 0
        self._randomized_timeout = self._random_timeout()
        # a pre-vote round of a ranked campaign (begun as a follower of a known leader) is asked
        # again soon: a voter still in its lease refuses it (its leader's last words reached it
        # later), and a whole election timeout before asking again cost 10-15 s over I2P links
        quick = pre and (self._ranked() or (self.role is Role.PRE_CANDIDATE and self._quick_pre_votes))
        self._quick_pre_votes = quick
        if quick:
            self._randomized_timeout = max(
                self.options.heartbeat_ticks, self.options.campaign_rank_ticks // 2
            )
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
        peers = sorted(self.voters() - {self.id})
        if pre:
            # A peer without pre-vote decides in the real round; here it is counted as a grant (its
            # real vote is the check). Only pre-vote speakers can refuse a pre-vote round.
            for peer in peers:
                if not self._pre_votes_with(peer):
                    self._votes[peer] = True
            peers = [peer for peer in peers if self._pre_votes_with(peer)]
        if self._tally() is True:
            self._won(pre)
            return
        for peer in peers:
            self._sends.append(
                Send(
                    peer,
                    RequestVoteRequest(
                        source=self.id,
                        destination=peer,
                        term=term,
                        last_log_term=self.log.last_term,
                        last_log_index=self.log.last_index,
                        commit_index=self._vote_marker(peer, pre, transfer),
                    ),
                )
            )

    def _vote_marker(self, peer: int, pre: bool, transfer: bool) -> int:
        """The commitIndex of a vote request: the pre-vote or transfer marker, or our commit index."""
        if pre:
            return PRE_VOTE_MARKER
        if transfer and self._transfers_with(peer):
            return TRANSFER_VOTE_MARKER
        return self.commit

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
            self._campaign(pre=False, vouched=frozenset(self._vouched))
        else:
            self._become_leader()

    def _handle_vote(self, m: RequestVoteRequest, handle: int) -> None:
        if m.commit_index == TIMEOUT_NOW_MARKER:
            self._handle_timeout_now(m, handle)
            return
        up_to_date = self.log.is_up_to_date(m.last_log_term, m.last_log_index)
        if m.commit_index == PRE_VOTE_MARKER:
            grant = m.term > self.term and up_to_date
            term = m.term if grant else self.term
            if grant and self.options.campaign_rank_ticks and self.role is Role.FOLLOWER:
                # Ranked campaigns: we vouched that its leader is gone; let it finish (its vote
                # request may be a slow round trip away) before our own turn, and out of the
                # lease, so that its real vote is not refused for the leader we no longer hear.
                self.leader_id = None
                self._election_elapsed = 0
            self._reply(handle, m, accepted=grant, term=term, next_index=PRE_VOTE_MARKER)
            return
        if self.role is Role.CANDIDATE and self.voted_for == self.id and m.source != self.id:
            self._rivals.add(m.source)  # it campaigns in our term: its refusal to us is a split vote
        can_vote = self.voted_for == m.source or (self.voted_for is None and self.leader_id is None)
        grant = can_vote and up_to_date
        if grant:
            self._heard_leader_or_voted()
            self._election_elapsed = 0
            if self.voted_for != m.source:
                self.voted_for = m.source
                self._hard_dirty = True
        self._reply(handle, m, accepted=grant)

    def _handle_timeout_now(self, m: RequestVoteRequest, handle: int) -> None:
        """Our leader hands over to us: campaign now, with a real vote that skips the lease. Only from
        the leader of our term, and only if we hold its whole log (else a vote could not be won)."""
        ok = (
            self.role is Role.FOLLOWER
            and m.source == self.leader_id
            and m.term == self.term
            and self.electable()
            and self.log.last_index >= m.last_log_index
            and self.log.term_at(m.last_log_index) == m.last_log_term
        )
        self._reply(handle, m, accepted=ok, next_index=TIMEOUT_NOW_MARKER)
        if ok:
            self._campaign(pre=False, transfer=True)

    def _on_vote_response(self, m: RequestVoteResponse) -> None:
        # A pre-vote grant must never count as a vote: it promised nothing and persisted nothing.
        if m.next_index == TIMEOUT_NOW_MARKER:
            return  # the answer to our TimeoutNow: the election it started will tell
        is_pre_vote = m.next_index == PRE_VOTE_MARKER
        campaigning = self.role in (Role.CANDIDATE, Role.PRE_CANDIDATE)
        if (
            is_pre_vote
            and m.accepted
            and campaigning
            and m.term == self.term + (self.role is Role.PRE_CANDIDATE)
        ):
            self._vouched.add(m.source)  # it found our log up to date for the term we campaign in
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
            if self.role is Role.CANDIDATE and self._lost_by_refusal():
                self._back_off()
            else:
                self._become_follower(self.term, None)

    # ------------------------------------------------------------------------------------------ leading

    def _become_leader(self) -> None:
        self.role = Role.LEADER
        self.leader_id = self.id
        self._heard_leader_or_voted()
        self._end_transfer()
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        granted = [peer for peer, ok in self._votes.items() if ok]
        self._votes = {}
        next_index = self.log.last_index + 1
        self.progress = {peer: Progress(next_index) for peer in self.voters() if peer != self.id}
        # The servers that just voted for us were heard from: they count for the first quorum check
        # (§6.2), which otherwise needed our first AppendEntries answered within one election
        # timeout. Over I2P one round trip can take longer (a late chunk), and a new leader that
        # stepped down for it cost the farm another election (a 90 s failover, measured).
        for peer in granted:
            if peer in self.progress:
                self.progress[peer].recent_active = True
        # Restating the configuration is our no-op: an entry of this term that commits earlier ones.
        config = self.config
        restated = Configuration(next_index, self.config_index, config.servers)
        self._append_local([LogEntry(self.term, restated)])
        self._maybe_commit()

    def _append_local(self, entries: list[LogEntry]) -> int:
        first = self.log.last_index + 1
        last = self.log.append(entries)
        changed = False
        for offset, entry in enumerate(entries):
            if isinstance(entry.value, Configuration):
                self._configs.append((first + offset, entry.value))
                changed = True
        if changed and self.role is Role.LEADER:
            self._sync_progress()
        self._broadcast_pending = True
        return last

    def _sync_progress(self) -> None:
        """A configuration took effect (on append): track exactly its voters."""
        voters = self.voters()
        for peer in list(self.progress):
            if peer not in voters:
                del self.progress[peer]
        for peer in voters - {self.id} - self.progress.keys():
            self.progress[peer] = Progress(self.log.last_index + 1)

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
            elif pr.state is ProgressState.PROBE and pr.paused:
                # The probe is unanswered: its entries go again only every PROBE_RESEND_BEATS beats
                # (etcd: a probe waits for an answer); an empty heartbeat goes every beat. A peer
                # that stopped reading would otherwise get a full batch each heartbeat (measured:
                # a stopped follower cost the leader 1 GB in 30 s).
                pr.stalled_beats += 1
                if pr.stalled_beats >= PROBE_RESEND_BEATS or self.log.term_at(pr.next - 1) is None:
                    pr.paused = False  # (compacted away: the snapshot starts now, not a beat later)
            else:
                pr.paused = False
            if not self._send_appends(peer):
                self._send_heartbeat(peer, pr)

    def _send_heartbeat(self, peer: int, pr: Progress) -> None:
        if pr.state is ProgressState.SNAPSHOT:
            return  # a snapshot chunk is in flight; its resend is the heartbeat
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
        pr = self.progress.get(peer)
        if pr is None or self.role is not Role.LEADER:
            return False  # e.g. the commit that just happened removed it, or us
        sent = False
        while True:
            if pr.state is ProgressState.PROBE and pr.paused:
                return sent
            if pr.state is ProgressState.REPLICATE and (
                len(pr.inflight) >= self.options.max_inflight or pr.next > self.log.last_index
            ):
                return sent
            if pr.state is ProgressState.SNAPSHOT:
                if not pr.paused:
                    self._send_snapshot_chunk(peer, pr)
                    return True
                return sent
            prev = pr.next - 1
            prev_term = self.log.term_at(prev)
            if prev_term is None:  # what it needs was compacted away: send the snapshot instead
                pr.become_snapshot(self.log.snapshot_index)
                continue
            entries = self._batch(pr.next)
            self._sends.append(Send(peer, self._append_request(peer, prev, prev_term, entries)))
            sent = True
            if pr.state is ProgressState.PROBE:
                pr.paused = True
                pr.stalled_beats = 0
                return sent
            pr.next = prev + len(entries) + 1
            pr.inflight.append(pr.next - 1)

    def _batch(self, start: int, most: int | None = None, budget: int | None = None) -> list[LogEntry]:
        end = min(self.log.last_index + 1, start + (most or self.options.max_entries_per_append))
        entries = self.log.slice(start, end)
        budget = budget or self.options.max_bytes_per_append
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
        if m.source == self.transfer_target:
            self._maybe_timeout_now(m.source)

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
            self._after_leader_commit()

    def _after_leader_commit(self) -> None:
        for server_id, (index, endpoint) in list(self._leaving.items()):
            if index <= self.commit:
                del self._leaving[server_id]
                if server_id != self.id and server_id not in self.voters():
                    leave = LeaveClusterRequest(
                        source=self.id,
                        destination=server_id,
                        term=self.term,
                        last_log_term=self.log.last_term,
                        last_log_index=self.log.last_index,
                        commit_index=self.commit,
                    )
                    self._sends.append(Send(server_id, leave, endpoint))
        if self.id not in self.voters() and self.config_index <= self.commit:
            # We committed the configuration that removes us: hand over by stepping down.
            self.removed = True
            self._become_follower(self.term, None)

    # ------------------------------------------------------------------------------------------ following

    def _follow(self, leader: int) -> None:
        """The leader of our term speaks: follow it, and restart the election timer."""
        if self.role is not Role.FOLLOWER:
            self._become_follower(self.term, leader)
        if self.leader_id != leader:
            self.leader_id = leader
            if self.options.campaign_rank_ticks:
                self._randomized_timeout = self._random_timeout()  # ranked after this leader now
        self._heard_leader_or_voted()
        self._election_elapsed = 0

    def _handle_append(self, m: AppendEntriesRequest | SyncLogRequest, handle: int) -> None:
        self._follow(m.source)
        if isinstance(m, AppendEntriesRequest):
            self._leader_commit = m.commit_index
        prev = m.last_log_index
        if isinstance(m, SyncLogRequest):
            pack = m.entries[0].value
            assert isinstance(pack, LogPack)
            entries = list(pack.entries)
        else:
            entries = list(m.entries)
        prev_term: int | None = m.last_log_term
        if isinstance(m, SyncLogRequest):
            if self._contradicts_committed(prev, entries):
                # We hold committed entries of another farm. JRaft overwrites them and keeps its state
                # machine as it was; we cannot: refuse, and say why in status (wipe the data to join).
                self.join_refusal = "this server's committed log differs from the leader's; wipe its data"
                self._reply(handle, m, accepted=False, next_index=0)
                return
            if prev <= self.commit:
                prev_term = self.log.term_at(prev)  # JRaft's SyncLog carries no term (lastLogTerm 0)
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

    def _contradicts_committed(self, prev: int, entries: list[LogEntry]) -> bool:
        """Whether ``entries`` (from ``prev + 1``) differ from any committed entry we still hold."""
        lo = max(prev + 1, self.log.first_index)
        hi = min(prev + len(entries), self.commit)
        if lo > hi:
            return False
        return self.log.slice(lo, hi + 1) != entries[lo - prev - 1 : hi - prev]

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
        self._data_position = None
        self.log.truncate_and_append(index, [])
        self._persisted_index = min(self._persisted_index, index)
        while self._configs[-1][0] > index:
            self._configs.pop()

    # ------------------------------------------------------------------------------------------ clients

    def _handle_client(self, m: ClientRequest, handle: int) -> None:
        if self.role is not Role.LEADER:
            self._client_reply(handle, accepted=False)
            return
        if self.transfer_target is not None:
            # Handing over: new entries would only delay it. The refusal names the next leader.
            self._pending_reply(handle, AppendEntriesResponse, accepted=False, leader=self.transfer_target)
            return
        if not m.entries:  # a probe: "are you the leader?"
            self._client_reply(handle, accepted=True, next_index=self.log.last_index + 1)
            return
        last = self._append_local([LogEntry(self.term, e.value) for e in m.entries])
        self._await_commit(last, handle, AppendEntriesResponse)
        # No commit can follow from this alone: new entries count only once written (advance) or
        # acknowledged, and a client's entries are Application values, never a configuration.

    def _await_commit(self, index: int, handle: int, cls: type[Response]) -> None:
        """Answer ``handle`` with a ``cls`` once the commit index decides the entry at ``index``."""
        entry: tuple[int, int, int, type[Response]] = (index, self.term, handle, cls)
        heapq.heappush(self._pending_clients, entry)

    def _resolve_clients(self) -> None:
        while self._pending_clients and self._pending_clients[0][0] <= self.commit:
            index, term, handle, cls = heapq.heappop(self._pending_clients)
            known = self.log.term_at(index)
            if known is None:
                # Covered by a snapshot that replaced our log: whether our entry or another committed
                # there is unknown here. "Not accepted" would say it did not commit (a client retries:
                # a duplicate if it did; the simulator found it), so no answer: the requester's
                # timeout reports the outcome as unknown (the driver's CommitTimeout).
                continue
            committed = known == term
            self._pending_reply(handle, cls, accepted=committed, next_index=index + 1 if committed else 0)

    def _client_reply(self, handle: int, accepted: bool, next_index: int = 0) -> None:
        self._pending_reply(handle, AppendEntriesResponse, accepted, next_index)

    def _pending_reply(
        self, handle: int, cls: type[Response], accepted: bool, next_index: int = 0, leader: int | None = None
    ) -> None:
        """Answer a client-style request; ``destination`` is the leader, as the proposal says."""
        self._replies.append(
            Reply(
                handle,
                cls(
                    source=self.id,
                    destination=self._leader_or_none() if leader is None else leader,
                    term=self.term,
                    next_index=next_index,
                    accepted=accepted,
                ),
            )
        )

    # ------------------------------------------------------------------------------------------ membership

    def _handle_add_server(self, m: AddServerRequest, handle: int) -> None:
        server = m.entries[0].value
        assert isinstance(server, ClusterServer) and server.endpoint is not None
        if self.role is Role.LEADER and self.config.endpoint_of(server.id) == server.endpoint:
            self._answer_when_config_commits(handle, AddServerResponse)  # a retry: done once committed
            return
        refusal = self.change_refusal()
        if refusal is None and server.id in self.voters():
            refusal = f"server {server.id} is already a member, at {self.config.endpoint_of(server.id)}"
        if refusal is not None:
            self.change_refused = (server.id, refusal)
            self._pending_reply(handle, AddServerResponse, accepted=False)
            return
        self.change_refused = None
        invitation = Configuration(self.log.last_index + 1, self.config_index, (*self.config.servers, server))
        self._joining = _Joining(server, Progress(self.log.last_index + 1), handle, invitation)
        self._invite(self._joining)

    def _answer_when_config_commits(self, handle: int, cls: type[Response]) -> None:
        """A change already in the configuration is done only once that configuration commits: an
        appended one may still be overwritten by a new leader (a retried AddServer was told "added")."""
        term = self.log.term_at(self.config_index)
        if self.config_index <= self.commit or term is None:
            self._pending_reply(handle, cls, accepted=True)
        else:
            heapq.heappush(self._pending_clients, (self.config_index, term, handle, cls))

    def _invite(self, joining: _Joining) -> None:
        join = JoinClusterRequest(
            source=self.id,
            destination=joining.server.id,
            term=self.term,
            last_log_term=self.log.last_term,
            last_log_index=self.log.last_index,
            commit_index=self.commit,
            entries=(LogEntry(self.term, joining.invitation),),
        )
        joining.progress.paused = True  # until it answers the invitation
        self._sends.append(Send(joining.server.id, join, joining.server.endpoint))

    def _handle_remove_server(self, m: RemoveServerRequest, handle: int) -> None:
        value = m.entries[0].value
        assert isinstance(value, ClusterServer)
        server_id = value.id
        if self.role is Role.LEADER and server_id not in self.voters() and self.change_refusal() is None:
            self._answer_when_config_commits(handle, RemoveServerResponse)  # not a member: done
            return
        refusal = self.change_refusal()
        if refusal is None and len(self.voters()) == 1:
            refusal = f"server {server_id} is the farm's only member"
        if refusal is not None:
            self.change_refused = (server_id, refusal)
            self._pending_reply(handle, RemoveServerResponse, accepted=False)
            return
        self.change_refused = None
        endpoint = self.config.endpoint_of(server_id)
        remaining = tuple(s for s in self.config.servers if s.id != server_id)
        index = self.log.last_index + 1
        self._append_local([LogEntry(self.term, Configuration(index, self.config_index, remaining))])
        self._leaving[server_id] = (index, endpoint)
        self._await_commit(index, handle, RemoveServerResponse)
        self._maybe_commit()

    def _handle_join(self, m: JoinClusterRequest, handle: int) -> None:
        self._follow(m.source)
        config = m.entries[0].value
        assert isinstance(config, Configuration)
        self.join_config = config
        self.removed = False
        self._reply(handle, m, accepted=True, next_index=self.log.last_index + 1)

    def _handle_leave(self, m: LeaveClusterRequest, handle: int) -> None:
        self.removed = True
        # the leader commits the configuration that leaves us out before it says so: by this index
        # (we never receive that configuration: a leader replicates it to its members only)
        self.removed_by = m.commit_index or None
        self.leader_id = None
        self._reply(handle, m, accepted=True)

    def _on_join_progress(self, m: JoinClusterResponse | SyncLogResponse) -> None:
        joining = self._joining
        if self.role is not Role.LEADER or joining is None or m.source != joining.server.id:
            return
        if isinstance(m, SyncLogResponse) and not joining.accepted:
            return  # an answer to a pack never sent: none is before the invitation is accepted
        if m.accepted or isinstance(m, JoinClusterResponse):
            # (a joiner that refuses every pack answers, but makes no progress: the join timeout
            # ends that exchange instead of letting it run until the change's own timeout)
            joining.idle_ticks = 0
        pr = joining.progress
        pr.paused = False
        if isinstance(m, JoinClusterResponse):
            if not m.accepted:
                self._abandon_join(f"server {m.source} declined the invitation to join (its log says why)")
                return
            if joining.accepted:
                return  # the answer to a resent invitation: the SyncLog it asked for is on its way
            joining.accepted = True
            # Catch-up starts at index 1 whatever the joiner says, as JRaft's leader does: its log may
            # hold a prefix of its own (a JRaft node started alone elects itself and commits index 1),
            # and only a resync from 1 overwrites it. A compacted start means the snapshot first.
            pr.next = 1
        elif m.accepted:
            pr.acknowledge(min(m.next_index - 1, joining.sent_upto))
            if m.next_index - 1 < joining.sent_upto:
                return  # an answer to an older copy: the latest SyncLog is still on its way
        else:
            if pr.next <= 1:
                # Refused from index 1: its committed log contradicts ours (it belonged to another
                # farm). Retrying cannot help; it must be wiped (it logs why).
                self._abandon_join(
                    f"server {m.source} refused the catch-up: its log contradicts the farm's (it belonged "
                    "to another farm?); wipe its data directory and add it again"
                )
                return
            # The same pack again: one is in flight at a time, so next is already match + 1 (a joiner
            # that refuses what it acknowledged lost its log, which no hint of its own can mend).
            pr.next = pr.match + 1
        if pr.match >= self.log.last_index - self.options.catch_up_margin and pr.match >= self.commit:
            self._finish_join()
        else:
            self._send_sync()

    def _send_sync(self) -> None:
        """Catch the joining server up: a LogPack of entries, or the snapshot if they are compacted."""
        joining = self._joining
        assert joining is not None
        pr, server = joining.progress, joining.server
        if pr.paused:
            return
        prev = pr.next - 1
        prev_term = self.log.term_at(prev)
        if pr.state is ProgressState.SNAPSHOT or prev_term is None:
            if pr.state is not ProgressState.SNAPSHOT:
                pr.become_snapshot(self.log.snapshot_index)
            self._send_snapshot_chunk(server.id, pr, server.endpoint)
            return
        # Only committed entries: a JRaft joiner commits everything a LogPack carries.
        most = min(self.options.sync_log_entries, self.commit - prev)
        if most <= 0:
            return  # nothing committed to send yet; the join tick resends
        entries = self._batch(pr.next, most, 4 * self.options.max_bytes_per_append)
        pack = LogPack(tuple(entries), self._jraft_data_position(pr.next))
        sync = SyncLogRequest(
            source=self.id,
            destination=server.id,
            term=self.term,
            last_log_term=prev_term,
            last_log_index=prev,
            commit_index=self.commit,
            entries=(LogEntry(self.term, pack),),
        )
        self._sends.append(Send(server.id, sync, server.endpoint))
        joining.sent_upto = prev + len(entries)
        pr.paused = True

    def _jraft_data_position(self, index: int) -> int:
        """Where entry ``index`` would lie in a JRaft data file holding our log from its first entry:
        the sum of the records (term 8, type 1, value) before it. JRaft writes LogPack offsets as such
        positions and its receiver copies them into its index file (docs/protocol.md, "LogPack")."""
        start, position = self.log.first_index, 0
        cached = self._data_position
        if cached is not None and cached[0] == self.log.snapshot_index and start <= cached[1] <= index:
            start, position = cached[1], cached[2]
        for entry in self.log.slice(start, index):
            position += 9 + len(encode_value(entry.value))
        self._data_position = (self.log.snapshot_index, index, position)
        return position

    def _finish_join(self) -> None:
        joining = self._joining
        assert joining is not None
        self._joining = None
        servers = (*self.config.servers, joining.server)
        index = self.log.last_index + 1
        joining.progress.become_probe()
        # Catch-up answers name no snapshot or pack (a late "not needed" from an earlier transfer
        # reads like a fresh one): good enough to decide it caught up, not to count it towards a
        # commit. Its first AppendEntries answer proves its matchIndex.
        joining.progress.match = 0
        self.progress[joining.server.id] = joining.progress
        self._append_local([LogEntry(self.term, Configuration(index, self.config_index, servers))])
        self._await_commit(index, joining.handle, AddServerResponse)
        self._maybe_commit()

    def _ticks_text(self, ticks: int) -> str:
        if self.tick_seconds is None:
            return f"{ticks} ticks"
        return f"{ticks * self.tick_seconds:g} s"

    def _abandon_join(self, why: str) -> None:
        joining = self._joining
        assert joining is not None
        self._joining = None
        self.change_refused = (joining.server.id, why)
        self._pending_reply(joining.handle, AddServerResponse, accepted=False)

    def _tick_joining(self) -> None:
        joining = self._joining
        if joining is None:
            return
        joining.idle_ticks += 1
        if joining.idle_ticks > self.options.join_timeout_ticks:
            server, ticks = joining.server, self._ticks_text(self.options.join_timeout_ticks)
            if not joining.accepted:
                why = (
                    f"server {server.id} did not answer the invitation to join within {ticks}: it "
                    f"is unreachable at {server.endpoint} (not running, wrong endpoint, or refusing our "
                    "connection: its log says which)"
                )
            else:
                why = (
                    f"the catch-up of server {server.id} timed out: no progress in {ticks} "
                    f"(at index {joining.progress.match} of {self.log.last_index})"
                )
            self._abandon_join(why)
        elif joining.idle_ticks % (2 * self.options.heartbeat_ticks) == 0:
            # Silent for two heartbeats: the last request or its answer was lost (a link dropped),
            # or a large LogPack is still being written. Send it again (both are idempotent); never
            # on every heartbeat regardless, which would pile up LogPacks behind a slow one.
            joining.progress.paused = False
            if joining.accepted:
                self._send_sync()
            else:
                self._invite(joining)

    # ------------------------------------------------------------------------------------------ snapshots

    def compact(self, index: int, data: bytes) -> SnapshotMeta:
        """The state machine's snapshot ``data`` covers everything up to ``index`` (<= applied): drop
        the log up to there. The driver stores ``data`` durably and compacts its log store first."""
        if not self.log.snapshot_index < index <= self.applied:
            raise ValueError(f"can compact up to the applied index {self.applied}, not {index}")
        term = self.log.term_at(index)
        assert term is not None
        meta = SnapshotMeta(index, term, self.config_at(index))
        self._set_snapshot(meta, data)
        return meta

    def _set_snapshot(self, meta: SnapshotMeta, data: bytes) -> None:
        self.log.compact(meta.last_index, meta.last_term)
        self._persisted_index = min(self._persisted_index, self.log.last_index)
        later = [(i, c) for i, c in self._configs if meta.last_index < i <= self.log.last_index]
        self._configs = [(meta.last_index, meta.config), *later]
        self._snapshot_data = data

    def _send_snapshot_chunk(self, peer: int, pr: Progress, endpoint: str | None = None) -> None:
        if pr.snapshot_index != self.log.snapshot_index:  # a newer snapshot was taken: start over
            pr.become_snapshot(self.log.snapshot_index)
        data = self._snapshot_data
        offset = min(pr.snapshot_offset, len(data))
        chunk = data[offset : offset + self.options.snapshot_chunk]
        meta = self.snapshot_meta()
        assert meta is not None
        value = SnapshotSyncRequest(
            meta.last_index, meta.last_term, meta.config, offset, chunk, offset + len(chunk) >= len(data)
        )
        request = InstallSnapshotRequest(
            source=self.id,
            destination=peer,
            term=self.term,
            last_log_term=meta.last_term,
            last_log_index=meta.last_index,
            commit_index=self.commit,
            entries=(LogEntry(self.term, value),),
        )
        self._sends.append(Send(peer, request, endpoint))
        pr.paused = True
        pr.snapshot_expect = offset + len(chunk)

    def _on_snapshot_response(self, m: InstallSnapshotResponse) -> None:
        if self.role is not Role.LEADER:
            return
        joining = self._joining
        if joining is not None and m.source == joining.server.id:
            pr = joining.progress
            joining.idle_ticks = 0
        elif m.source in self.progress:
            pr = self.progress[m.source]
            pr.recent_active = True
        else:
            return
        if pr.state is not ProgressState.SNAPSHOT:
            return
        expect = pr.snapshot_expect
        if expect is None or (m.accepted and m.next_index not in (expect, SNAPSHOT_NOT_NEEDED)):
            return  # a duplicated or late answer (another chunk, an older transfer): it proves nothing
        pr.snapshot_expect = None
        pr.paused = False
        if m.accepted and m.next_index >= len(self._snapshot_data):
            # Installed (or not needed). The answer names no snapshot: a late one from an earlier
            # transfer of another snapshot of the same size reads the same (the simulator found a
            # leader counting entries its follower never had). So a voter's matchIndex is not moved
            # here: a probe at the snapshot's end confirms it (its answer proves the log position).
            if joining is not None and pr is joining.progress:
                pr.acknowledge(pr.snapshot_index)
                pr.become_probe()
            else:
                pr.become_probe()
                pr.next = max(pr.next, pr.snapshot_index + 1)
        else:
            pr.snapshot_offset = m.next_index
        if joining is not None and pr is joining.progress:
            self._on_join_caught_up_or_continue()
        else:
            self._send_appends(m.source)

    def _on_join_caught_up_or_continue(self) -> None:
        joining = self._joining
        assert joining is not None
        pr = joining.progress
        if pr.match >= self.log.last_index - self.options.catch_up_margin and pr.match >= self.commit:
            self._finish_join()
        else:
            self._send_sync()

    def _handle_install_snapshot(self, m: InstallSnapshotRequest, handle: int) -> None:
        self._follow(m.source)
        chunk = m.entries[0].value
        assert isinstance(chunk, SnapshotSyncRequest)
        if chunk.last_log_index <= self.commit:
            self._reply(handle, m, accepted=True, next_index=SNAPSHOT_NOT_NEEDED)
            return
        incoming = self._incoming
        same = incoming is not None and (incoming.last_index, incoming.last_term) == (
            chunk.last_log_index,
            chunk.last_log_term,
        )
        if not same:
            if chunk.offset != 0:
                self._reply(handle, m, accepted=False, next_index=0)
                return
            incoming = self._incoming = _Incoming(chunk.last_log_index, chunk.last_log_term, bytearray())
        assert incoming is not None
        if chunk.offset != len(incoming.data):
            # A resend, or a new leader starting over: ask for where we are (snapshots of one index
            # are byte-identical, the state machine's snapshot being deterministic).
            self._reply(handle, m, accepted=False, next_index=len(incoming.data))
            return
        if len(incoming.data) + len(chunk.data) > self.options.max_snapshot_bytes:
            self._incoming = None
            self._reply(handle, m, accepted=False, next_index=0)
            return
        incoming.data += chunk.data
        if chunk.done and self.snapshot_check(bytes(incoming.data)) is not None:
            self._incoming = None  # forged or foreign: keep what we hold, the sender may start over
            self._reply(handle, m, accepted=False, next_index=0)
            return
        if chunk.done:
            self._install(
                SnapshotMeta(chunk.last_log_index, chunk.last_log_term, chunk.config), bytes(incoming.data)
            )
        self._reply(handle, m, accepted=True, next_index=len(incoming.data))

    def _install(self, meta: SnapshotMeta, data: bytes) -> None:
        self._incoming = None
        if self.log.term_at(meta.last_index) == meta.last_term:
            self._resolve_clients_upto(meta.last_index)
        self._set_snapshot(meta, data)
        self.commit = max(self.commit, meta.last_index)
        self.applied = max(self.applied, meta.last_index)
        self._hard_dirty = True
        self._installed = InstalledSnapshot(meta, data)
        self._resolve_clients()  # requests for entries the snapshot replaced: left to time out

    def _resolve_clients_upto(self, index: int) -> None:
        saved, self.commit = self.commit, max(self.commit, index)
        self._resolve_clients()
        self.commit = saved

    # ------------------------------------------------------------------------------------------ helpers

    def _step_response(self, m: Response) -> None:
        if m.term > self.term:
            if isinstance(m, RequestVoteResponse) and m.accepted and m.next_index == PRE_VOTE_MARKER:
                # A pre-vote grant carries the term we *would* campaign in, not the responder's: it
                # never changes our term. Counted only while we are that pre-candidate.
                if self.role is not Role.PRE_CANDIDATE or m.term != self.term + 1:
                    return
            else:
                self._become_follower(m.term, None)
                return
        elif m.term < self.term:
            return
        if isinstance(m, RequestVoteResponse):
            self._on_vote_response(m)
        elif isinstance(m, AppendEntriesResponse):
            self._on_append_response(m)
        elif isinstance(m, InstallSnapshotResponse):
            self._on_snapshot_response(m)
        elif isinstance(m, JoinClusterResponse | SyncLogResponse):
            self._on_join_progress(m)
        # LeaveClusterResponse: nothing to do, the server is gone either way

    def _leader_or_none(self) -> int:
        return NO_LEADER if self.leader_id is None else self.leader_id

    def _reply(
        self,
        handle: int,
        request: Request,
        accepted: bool,
        next_index: int = 0,
        term: int | None = None,
    ) -> None:
        cls = _response_class(request)
        self._replies.append(
            Reply(
                handle,
                cls(
                    source=self.id,
                    destination=request.source,
                    term=self.term if term is None else term,
                    next_index=next_index,
                    accepted=accepted,
                ),
            )
        )
