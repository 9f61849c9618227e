"""The Raft core's vocabulary: options, roles, and the Ready batch it hands its driver."""

from __future__ import annotations

import enum

import attrs

from garlicfarm.storage.interface import HardState, SnapshotMeta
from garlicfarm.wire.messages import Request, RequestVoteResponse, Response
from garlicfarm.wire.payloads import LogEntry

#: A RequestVoteRequest whose commitIndex is 2**64-1 (JRaft's -1) is a pre-vote (Raft dissertation
#: §9.6): "would you vote for me in term T?" without anyone changing term. JRaft never sends it and
#: takes it for an ordinary vote (it raises its term and grants a real vote, which wrecks elections),
#: so pre-votes go only to peers that negotiated them (see docs/raft.md, "Pre-vote with JRaft").
#: Pre-vote answers carry the marker in nextIndex, so that a late pre-vote grant can never be counted
#: as a real vote.
PRE_VOTE_MARKER = 0xFFFFFFFFFFFFFFFF
#: Leadership transfer (Raft dissertation §3.10) in JRaft's messages, only with peers whose handshake
#: offered ``transfer``: a RequestVoteRequest from the leader, in its own term, with this commitIndex
#: means "you are caught up: campaign now" (etcd's TimeoutNow). Its answer carries it in nextIndex.
TIMEOUT_NOW_MARKER = 0xFFFFFFFFFFFFFFFD
#: A real vote request with this commitIndex comes from a candidate the leader handed over to: the
#: voter grants it despite still hearing from that leader (the lease would refuse it, §4.2.3).
TRANSFER_VOTE_MARKER = 0xFFFFFFFFFFFFFFFE


def is_vote_grant(response: RequestVoteResponse) -> bool:
    """A real vote: granted, and neither a pre-vote's nor a TimeoutNow's answer."""
    return response.accepted and response.next_index not in (PRE_VOTE_MARKER, TIMEOUT_NOW_MARKER)


class Role(enum.Enum):
    FOLLOWER = "follower"
    PRE_CANDIDATE = "pre-candidate"
    CANDIDATE = "candidate"
    LEADER = "leader"
    #: the driver stopped the node (a storage failure, a bug): it leads nothing and says so
    STOPPED = "stopped"


@attrs.frozen
class RaftOptions:
    """Tuning. Times are in ticks; the driver decides how long a tick is."""

    #: a follower campaigns after a random timeout in [election_ticks, 2 * election_ticks)
    election_ticks: int = 10
    heartbeat_ticks: int = 2
    #: ranked campaigns (docs/raft.md, "Who campaigns first"): a follower that knew a leader campaigns
    #: after election_ticks + its rank x this many ticks (+ a jitter under an eighth of it) instead of a
    #: random timeout, its rank its place after the leader in the ring of voters, and a follower missing
    #: entries the leader said were committed waits one rank per voter longer. 0: random timeouts only.
    campaign_rank_ticks: int = 0
    max_entries_per_append: int = 200
    max_bytes_per_append: int = 1024 * 1024
    #: AppendEntries a leader may have in flight to one follower (pipelining)
    max_inflight: int = 32
    #: committed entries handed to the state machine per Ready: the driver yields to the reactor
    #: between Readies, so a big backlog cannot hold heartbeats back for seconds
    max_apply_per_ready: int = 1024
    pre_vote: bool = True
    #: pre-vote only with peers the driver reported as supporting it (:meth:`RaftCore.set_pre_vote_support`,
    #: from the handshake's ``GarlicFarm-Features``); peers known not to (JRaft) get plain votes and
    #: escape the lease-based vote refusal. False: every peer is assumed to support pre-vote.
    negotiated_pre_vote: bool = False
    check_quorum: bool = True
    #: a candidate that lost an election by refusals (docs/raft.md, "Backing off") waits longer
    #: before campaigning again: the lower end of its random timeout is multiplied by 4 with each such
    #: election, up to this many ticks. 120: 6 s at the driver's default 50 ms tick, above JRaft's
    #: longest election timeout (dmprinter's 5 s), so that a JRaft node's own timer fires first (the
    #: config computes it from ``tick_ms``). Never below ``election_ticks`` (then no backing off).
    max_backoff_ticks: int = 120
    #: bytes of snapshot per InstallSnapshotRequest (JRaft sends 4 KiB)
    snapshot_chunk: int = 64 * 1024
    #: largest snapshot a follower accepts (a peer cannot make us buffer more)
    max_snapshot_bytes: int = 256 * 1024 * 1024
    #: entries per LogPack when catching up a joining server
    sync_log_entries: int = 1000
    #: a joining server becomes a voter once its log is within this many entries of ours
    catch_up_margin: int = 50
    #: ticks without a response from a joining server before its addition is abandoned
    join_timeout_ticks: int = 200

    def __attrs_post_init__(self) -> None:
        if self.heartbeat_ticks < 1 or self.election_ticks <= self.heartbeat_ticks:
            raise ValueError("need 1 <= heartbeat_ticks < election_ticks")
        if self.max_backoff_ticks < 1:
            raise ValueError("max_backoff_ticks must be at least 1")
        if self.campaign_rank_ticks < 0:
            raise ValueError("campaign_rank_ticks must not be negative")
        if self.max_entries_per_append < 1 or self.max_inflight < 1:
            raise ValueError("max_entries_per_append and max_inflight must be at least 1")


@attrs.frozen
class Send:
    """Send ``message`` to server ``to`` (on a connection this node opened). ``endpoint`` is given for
    servers that are not (yet, or any more) in the configuration: a joining or a departing one."""

    to: int
    message: Request
    endpoint: str | None = None


@attrs.frozen
class InstalledSnapshot:
    """A snapshot received from the leader: store it, compact the log store, restore the state machine."""

    meta: SnapshotMeta
    data: bytes


@attrs.frozen
class Reply:
    """Answer the request the driver stepped in with ``handle``."""

    handle: int
    message: Response


@attrs.frozen
class Ready:
    """What the driver must do, in this order: install ``snapshot`` (if any), persist (hard state,
    then entries), call :meth:`RaftCore.advance` once that is durable, then send, reply and apply.
    Nothing in ``sends`` or ``replies`` may leave before the persistence it depends on is durable,
    with one exception (:meth:`leader_may_send_early`)."""

    snapshot: InstalledSnapshot | None = None
    hard_state: HardState | None = None
    entries_from: int | None = None
    entries: tuple[LogEntry, ...] = ()
    sends: tuple[Send, ...] = ()
    replies: tuple[Reply, ...] = ()
    committed: tuple[tuple[int, LogEntry], ...] = ()
    #: the log's last index and its term when this Ready was made: once its save is durable, the
    #: store holds that log up to there (:meth:`RaftCore.advance`)
    last_index: int = 0
    last_term: int = 0
    #: made by a leader (see :meth:`leader_may_send_early`)
    from_leader: bool = False

    def needs_persist(self) -> bool:
        return self.hard_state is not None or self.entries_from is not None

    def needs_sync(self, durable_vote: tuple[int, int | None]) -> bool:
        """Whether the save must be durable before anything leaves: it holds entries, or a term or
        vote other than ``durable_vote`` (what the store holds durably). The commit index alone is
        Raft's volatile state: a crash may lose it, and the leader tells it again."""
        return self.entries_from is not None or self.changes_vote(durable_vote)

    def only_commit(self, durable_vote: tuple[int, int | None]) -> bool:
        """Whether all this Ready would persist is a new commit index (no entries, snapshot, term or
        vote): Raft's volatile state, which the driver may keep for a later save."""
        return (
            self.hard_state is not None
            and self.entries_from is None
            and self.snapshot is None
            and not self.changes_vote(durable_vote)
        )

    def changes_vote(self, durable_vote: tuple[int, int | None]) -> bool:
        hard = self.hard_state
        return hard is not None and (hard.term, hard.voted_for) != durable_vote

    def leader_may_send_early(self, durable_vote: tuple[int, int | None]) -> bool:
        """A leader's Ready whose messages need not wait for its own save (Raft dissertation §10.2.1):
        it only appends the leader's new entries (and the commit index), so its AppendEntries may
        carry them while they are being written, and its answers to clients follow commits, which
        count the leader's own log only as far as :meth:`RaftCore.advance` says it is durable. Its
        messages still wait for earlier saves that were not a leader's own entries (a vote, a term)."""
        return self.from_leader and self.snapshot is None and not self.changes_vote(durable_vote)
