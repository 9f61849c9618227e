"""Runs a :class:`RaftCore` under Twisted: ticks from ``IReactorTime``, persistence through a
:class:`LogStore`, messages through a :class:`PeerTransport`, results as Deferreds.

The order in :meth:`RaftDriver._handle` is the safety contract: persist, then ``advance``, then send,
reply and apply. Nothing leaves this node before what it depends on is durable. The store's writes
run through a :class:`Writer` (on a thread of their own in a running node), so "durable" comes later
than "handled": the messages of a Ready wait, in order, for the writes they depend on, while the
driver goes on with the next Readies. The one exception is the leader's (Raft dissertation §10.2.1):
AppendEntries carry its new entries while they are being written, because its own log counts
towards a commit only once :meth:`RaftCore.advance` says it is durable.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from twisted.internet.defer import CancelledError, Deferred, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.types import Ready
from garlicfarm.raft.writers import InlineWriter, Writer
from garlicfarm.storage.interface import HardState, LogStore, SnapshotMeta, StorageError
from garlicfarm.storage.snapshots import SnapshotStore
from garlicfarm.wire.messages import (
    AddServerRequest,
    AppendEntriesResponse,
    ClientRequest,
    RemoveServerRequest,
    Request,
    Response,
)
from garlicfarm.wire.payloads import Application, ClusterServer, LogEntry
from garlicfarm.wire.types import NO_LEADER


class NotLeader(Exception):
    """This node is not the leader; ``leader_id``/``endpoint`` name the one it knows, if any."""

    def __init__(self, leader_id: int | None, endpoint: str | None = None) -> None:
        self.leader_id = leader_id
        self.endpoint = endpoint
        if leader_id is None:
            message = "not the leader, and no leader is known"
        else:
            message = f"not the leader; the leader is server {leader_id}" + (
                f" at {endpoint}" if endpoint else ""
            )
        super().__init__(message)


class CommitTimeout(Exception):
    """No commit decision in time; the entry may still commit later (outcome unknown)."""


class NodeStopped(Exception):
    """The node stopped (shutdown or a storage failure) before answering."""


class ChangeRefused(Exception):
    """A membership change was refused (another one is under way, the server did not catch up, ...)."""


class EntryRefused(Exception):
    """The leader refused to append an entry the state machine would reject (``check``)."""


class PeerTransport(Protocol):
    def send(self, to: int, message: Request, endpoint: str | None = None) -> Deferred[Response]:
        """Send a request to server ``to`` (at ``endpoint`` if it is not in the configuration); fires
        with its response, or fails (timeout, no connection)."""


class StateMachine(Protocol):
    """The application the log drives. ``snapshot`` must be deterministic: the same state gives the
    same bytes on every server (a snapshot transfer resumes across leaders on that promise).

    ``apply`` is total: a committed entry is applied or rejected with a reason kept in the state, the
    same on every server. An exception from it is a bug: the driver stops the node, naming the entry.
    ``check`` is what a leader asks before appending a client's entry: why not, or None."""

    def apply(self, index: int, entry: LogEntry) -> None: ...

    def check(self, entry: LogEntry) -> str | None: ...

    def check_snapshot(self, data: bytes) -> str | None:
        """Why ``data`` (a snapshot received from a leader) cannot be restored, or None."""

    def snapshot(self) -> bytes: ...

    def restore(self, data: bytes) -> None: ...


ApplyFn = Callable[[int, LogEntry], None]


class ProposalCounts:
    """How the proposals this node took as leader (its own submissions, clients' requests) ended:
    counters read by the metrics endpoint (garlicfarm.metrics), never reset."""

    __slots__ = ("committed", "failed", "refused")

    def __init__(self) -> None:
        #: committed: the request got its index
        self.committed = 0
        #: not committed: leadership lost, a handover under way, no decision in time, the node stopped
        self.failed = 0
        #: refused before they were appended: the state machine would reject them (``check``)
        self.refused = 0


_INLINE = InlineWriter()

#: the sleeping clock looks at the time at least this often (seconds), so that ``last_tick`` tells a
#: turning reactor from a stuck one (/livez: 5 s at least) even on a node that nothing wakes; longer
#: than the "i2p" profile's heartbeat (1 s), whose arrivals re-arm a follower's timer first
MAX_SLEEP = 2.0


class RaftDriver:
    log = Logger()

    def __init__(
        self,
        core: RaftCore,
        store: LogStore,
        reactor: IReactorTime,
        transport: PeerTransport,
        tick_seconds: float = 0.05,
        on_apply: ApplyFn | None = None,
        submit_timeout: float = 10.0,
        state_machine: StateMachine | None = None,
        snapshots: SnapshotStore | None = None,
        snapshot_every: int = 5000,
        group_commit: bool = False,
        change_timeout: float = 3600.0,
        writer: Writer | None = None,
        fixed_rate: bool = False,
    ) -> None:
        self.core = core
        #: runs the store's writes, in order (default: at once, on this thread)
        self.writer: Writer = writer or _INLINE
        #: writes given to the writer / ended, counted; messages held until the write they need ended
        self._writes_given = 0
        self._writes_done = 0
        #: the last write that was not a leader's own entries: a leader's messages wait for it
        self._floor = 0
        self._held: deque[tuple[int, Ready]] = deque()
        #: the last index applied to the state machine (a snapshot covers exactly that)
        self._machine_index = core.applied
        #: committed entries the core handed out, applied two reactor turns later (_apply_soon)
        self._to_apply: deque[tuple[int, LogEntry]] = deque()
        #: the reactor call that applies them (cancelled by stop: a stopped node schedules nothing)
        self._apply_call: IDelayedCall | None = None
        #: a hard state that changed only the commit index, not saved yet (_keep_commit)
        self._unsaved_commit: HardState | None = None
        self._commit_timer: IDelayedCall | None = None
        #: the term and vote the store holds durably (a save that changes them is synced)
        self._durable_vote: tuple[int, int | None] = (core.term, core.voted_for)
        self.store = store
        self.reactor = reactor
        self.transport = transport
        self.tick_seconds = tick_seconds
        core.tick_seconds = tick_seconds
        self.submit_timeout = submit_timeout
        #: how long an Add/RemoveServerRequest may wait for its outcome
        self.change_timeout = change_timeout
        self._on_apply: list[ApplyFn] = [on_apply] if on_apply else []
        self.state_machine = state_machine
        self.snapshots = snapshots
        #: take a snapshot and compact the log once this many entries are applied past the last one
        self.snapshot_every = snapshot_every
        if state_machine is not None:
            self._on_apply.insert(0, state_machine.apply)
            # A snapshot that cannot be restored is refused before it is stored or installed
            core.snapshot_check = self._check_snapshot
        self._pending: dict[int, Deferred[Response]] = {}
        self._next_handle = 0
        self._processing = False
        self._again = False
        #: drain the core once per reactor turn instead of once per message: everything that arrived
        #: in one turn shares one store transaction (one fsync) and one AppendEntries per peer
        self.group_commit = group_commit
        self._drain: IDelayedCall | None = None
        #: the log index being applied, to name it if the state machine fails
        self._applying: int | None = None
        self._last_refusal_log = float("-inf")
        self._conflicts_logged = 0
        self._conflict_message: str | None = None
        self._conflict_logged_at = float("-inf")
        self._refusals = 0
        #: tick every tick_seconds whatever happens (a LoopingCall), instead of sleeping until the
        #: core's next due tick (the default: a node at rest wakes for heartbeats, not 100 times a second)
        self.fixed_rate = fixed_rate
        self._ticker = LoopingCall(self._tick)
        self._ticker.clock = reactor
        #: the sleeping clock: ticks fall at _origin + k * tick_seconds; _ticks_timed of them have
        #: passed (given to the core, or skipped when the reactor was late, as a LoopingCall skips)
        self._origin = 0.0
        self._ticks_timed = 0
        self._timer: IDelayedCall | None = None
        #: the tick the timer was set for (it fired: that tick passed, whatever float rounding says)
        self._wake_tick = 0
        #: a due tick was put off once after a stall: the next catch-up runs it, late or not (a
        #: reactor whose every turn is longer than a tick still ticks)
        self._deferred = False
        self.running = False
        self.stopped_by: Failure | None = None
        #: called with the failure when the node stops because of one (storage, a bug)
        self.on_failure: list[Callable[[Failure], None]] = []
        #: called with the new leader's id (None: none known) when it changes
        self.on_leader_change: list[Callable[[int | None], None]] = []
        self._seen: tuple[str, int, int | None] = (core.role.value, core.term, core.leader_id)
        #: the index of the configuration that removed this server, once said (see _check_removed)
        self._removed_at: int | None = None
        #: callers of transfer_leadership waiting for the handover (or for it to be abandoned)
        self._transfers: list[Deferred[int | None]] = []
        #: timeout length -> (deadline, handle) of requests that fail with CommitTimeout then
        self._deadlines: dict[float, deque[tuple[float, int]]] = {}
        self._handing_to: int | None = None
        #: for the metrics endpoint: how proposals ended, how often a new leader was seen, and when the
        #: driver last looked at its clock (a tick, a wake, a message: at most MAX_SLEEP apart)
        self.proposals = ProposalCounts()
        self.leader_changes = 0
        self.last_tick: float | None = None

    # ------------------------------------------------------------------------------------------ life

    def start(self) -> None:
        self.running = True
        if self.fixed_rate:
            self._ticker.start(self.tick_seconds, now=False)
        else:
            self._origin = self.last_tick = self.reactor.seconds()
            self._ticks_timed = 0
            self._rearm()
        self.log.info("raft node {id} started in term {term}", id=self.core.id, term=self.core.term)
        self._process()

    def stop(self, reason: Failure | None = None) -> None:
        if not self.running:
            return
        if self._commit_timer is not None and self._commit_timer.active():
            self._commit_timer.cancel()
        if reason is None:
            self._save_commit()  # a node stopped in order restarts from the commit it knew
        self.running = False
        self.stopped_by = reason
        if reason is not None:
            self.core.halt(str(reason.value) or type(reason.value).__name__)
        if self._ticker.running:
            self._ticker.stop()
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        if self._drain is not None and self._drain.active():
            self._drain.cancel()
        if self._apply_call is not None and self._apply_call.active():
            self._apply_call.cancel()
        self._apply_call = None
        self._held.clear()  # what was waiting for a write never leaves
        self._to_apply.clear()
        self._end_transfers(None)
        pending, self._pending = self._pending, {}
        for d in pending.values():
            d.errback(
                NodeStopped("the node stopped" if reason is None else f"the node stopped: {reason.value}")
            )
        if reason is not None:
            for callback in self.on_failure:
                callback(reason)

    def add_apply_callback(self, fn: ApplyFn) -> None:
        self._on_apply.append(fn)

    # ------------------------------------------------------------------------------------------ public

    def submit(self, data: bytes) -> Deferred[int]:
        """Append ``data`` as an Application entry; fires with its index once committed.

        Fails with :class:`NotLeader` (naming the leader) when this node does not lead, with
        :class:`CommitTimeout` when no decision comes within ``submit_timeout`` seconds.
        """
        if not self.running:
            return _failed(NodeStopped("the node is not running"))
        self._catch_up()
        if not self.core.is_leader():
            return _failed(NotLeader(self.core.leader_id, self.core.leader_endpoint()))
        refusal = self._refusal((LogEntry(0, Application(data)),))
        if refusal is not None:
            self.proposals.refused += 1
            return _failed(EntryRefused(refusal))
        handle = self._new_handle()
        reply = self._pending[handle] = Deferred()
        self.core.propose(data, handle)
        self._soon()
        result: Deferred[int] = self._tally(reply).addCallback(self._committed_index)
        self._expire_after(handle, self.submit_timeout)
        self._rearm()
        return result

    def add_server(self, server_id: int, endpoint: str) -> Deferred[None]:
        """Add a server (it is caught up first); fires once the new configuration is committed."""
        entry = LogEntry(0, ClusterServer(server_id, endpoint))
        return self._change(AddServerRequest(entries=(entry,)), f"add server {server_id}")

    def remove_server(self, server_id: int) -> Deferred[None]:
        """Remove a server (possibly this one); fires once the new configuration is committed."""
        entry = LogEntry(0, ClusterServer(server_id))
        return self._change(RemoveServerRequest(entries=(entry,)), f"remove server {server_id}")

    def transfer_leadership(self, target: int | None = None) -> Deferred[int | None]:
        """Hand this node's leadership to another voter without an election timeout in between
        (Raft dissertation §3.10): for a restart, a shutdown, or an operator's request.

        Fires with the server this node handed over to once it no longer leads, or with None: at once
        when this node does not lead or no voter can take over (none speaks the ``transfer`` feature,
        e.g. JRaft), or after an election timeout when the target did not take over (it leads on).
        """
        if not self.running:
            return succeed(None)
        self._catch_up()
        if not self.core.is_leader():
            return succeed(None)
        if self.core.transfer_target is None:
            chosen = self.core.transfer_leadership(target)
            if chosen is None:
                self.log.info("no voter can take the leadership over now (it needs the transfer feature)")
                return succeed(None)
            self.log.info("handing the leadership over to server {target}", target=chosen)
            self._handing_to = chosen
        d: Deferred[int | None] = Deferred()
        self._transfers.append(d)
        self._process()
        return d

    def _check_transfer(self) -> None:
        if not self._transfers:
            return
        core = self.core
        if not core.is_leader():
            self._end_transfers(self._handing_to)
        elif core.transfer_target is None:
            # nothing to act on: this node leads on (a stopping node stops, and the farm elects)
            self.log.info("the leadership handover did not complete within an election timeout; leading on")
            self._end_transfers(None)

    def _end_transfers(self, result: int | None) -> None:
        waiting, self._transfers = self._transfers, []
        for d in waiting:
            d.callback(result)

    def _change(self, request: Request, what: str) -> Deferred[None]:
        if self.running:
            self._catch_up()
        if not self.core.is_leader():
            return _failed(NotLeader(self.core.leader_id, self.core.leader_endpoint()))

        def done(response: Response) -> None:
            if not response.accepted:
                if not self.core.is_leader():
                    raise NotLeader(self.core.leader_id, self.core.leader_endpoint())
                raise ChangeRefused(f"cannot {what}: {self._change_refusal(request)}")

        # handle_request logs the change when asked and when decided (_log_change): one line each
        return self.handle_request(request).addCallback(done)

    def _change_refusal(self, request: Request) -> str:
        """Why the leader refused the membership change ``request`` (the core keeps the last cause)."""
        refused = self.core.change_refused
        value = request.entries[0].value
        if refused is not None and isinstance(value, ClusterServer) and refused[0] == value.id:
            return refused[1]
        # The core names the cause of each change it refuses; the one it cannot name is an entry
        # appended while this server led and replaced by another leader's before it committed.
        return "another leader's entry replaced it before it committed"

    def handle_request(self, request: Request) -> Deferred[Response]:
        """Serve a request from a peer or client; fires with the response to send back."""
        if not self.running:
            return _failed(NodeStopped("the node is not running"))
        self._catch_up()
        proposal = isinstance(request, ClientRequest) and self.core.is_leader()
        if proposal and isinstance(request, ClientRequest):
            refusal = self._refusal(request.entries)
            if refusal is not None:
                self.proposals.refused += 1
                return succeed(self._refuse(refusal))
        handle = self._new_handle()
        d = self._pending[handle] = Deferred()
        if proposal:
            self._tally(d)
        change = isinstance(request, AddServerRequest | RemoveServerRequest)
        if isinstance(request, AddServerRequest | RemoveServerRequest) and request.entries:
            self._log_change(request, d)
        self._guarded(self.core.step, request, handle)
        self._soon()
        if handle not in self._pending:
            self._rearm_unless_draining()
            return d  # answered at once (most peer requests)
        # Every request is answered or fails: nothing waits forever (a membership change may take
        # as long as a catch-up; the leader gives up on a join that stops making progress first).
        self._expire_after(handle, self.change_timeout if change else self.submit_timeout)
        self._rearm_unless_draining()
        return d

    def _check_snapshot(self, data: bytes) -> str | None:
        assert self.state_machine is not None
        reason = self.state_machine.check_snapshot(data)
        if reason is not None:
            self.log.warn(
                "refused a snapshot from server {leader}: {reason}", leader=self.core.leader_id, reason=reason
            )
        return reason

    def _refusal(self, entries: Sequence[LogEntry]) -> str | None:
        """Why the leader must not append ``entries`` (all or none: a request is one decision)."""
        if self.state_machine is None:
            return None
        for i, entry in enumerate(entries):
            reason = self.state_machine.check(entry)
            if reason is not None:
                return f"entry {i + 1} of {len(entries)}: {reason}"
        return None

    def _refuse(self, reason: str) -> Response:
        """accepted=0 naming this leader itself: "refused", not "ask the leader" (net/client.py)."""
        now = self.reactor.seconds()
        if now - self._last_refusal_log >= 10.0:
            self.log.warn(
                "refused a client request ({count} since the last line): {reason}",
                count=self._refusals + 1,
                reason=reason,
            )
            self._last_refusal_log, self._refusals = now, 0
        else:
            self._refusals += 1
        return AppendEntriesResponse(
            source=self.core.id, destination=self.core.id, term=self.core.term, next_index=0, accepted=False
        )

    def _log_change(self, request: AddServerRequest | RemoveServerRequest, d: Deferred[Response]) -> None:
        """Membership changes are rare and matter: say when one is asked for and how it ended."""
        server = request.entries[0].value
        what = (
            f"add server {getattr(server, 'id', '?')} at {getattr(server, 'endpoint', '?')}"
            if isinstance(request, AddServerRequest)
            else f"remove server {getattr(server, 'id', '?')}"
        )
        self.log.info("{what}: asked", what=what)

        def ended(response: Response) -> Response:
            result = "done" if response.accepted else f"refused: {self._change_refusal(request)}"
            self.log.info("{what}: {result}", what=what, result=result)
            return response

        d.addCallback(ended)

    def set_pre_vote_support(self, peer: int, supported: bool) -> None:
        """What ``peer``'s handshake said about pre-vote (JRaft: nothing, so False)."""
        self.core.set_pre_vote_support(peer, supported)

    def set_transfer_support(self, peer: int, supported: bool) -> None:
        """What ``peer``'s handshake said about leadership transfer (JRaft: nothing, so False)."""
        self.core.set_transfer_support(peer, supported)

    def link_up(self, peer: int) -> None:
        """A link to ``peer`` came up: a leader sends it what it lacks now, not at its next heartbeat."""
        if not self.running:
            return
        self._catch_up()
        if self._guarded(self.core.link_up, peer):
            self._soon()  # (its drain re-arms the timer)

    def status(self) -> dict[str, Any]:
        return self.core.status()

    def waiting(self) -> int:
        """Requests (submissions, peers', clients') still waiting for their answer."""
        return len(self._pending)

    # ------------------------------------------------------------------------------------------ inside

    def _tally(self, d: Deferred[Response]) -> Deferred[Response]:
        """Count how a proposal's request ended (accepted: committed), passing its result on."""

        def decided(response: Response) -> Response:
            if response.accepted:
                self.proposals.committed += 1
            else:
                self.proposals.failed += 1
            return response

        def failed(failure: Failure) -> Failure:
            self.proposals.failed += 1
            return failure

        return d.addCallbacks(decided, failed)

    def _new_handle(self) -> int:
        self._next_handle += 1
        return self._next_handle

    def _committed_index(self, response: Response) -> int:
        if response.accepted:
            return response.next_index - 1
        leader = None if response.destination == NO_LEADER else response.destination
        endpoint = None if leader is None else self.core.config.endpoint_of(leader)
        raise NotLeader(leader, endpoint)

    def _expire_after(self, handle: int, seconds: float) -> None:
        """Fail ``handle`` with CommitTimeout if it is still unanswered ``seconds`` from now. One queue
        per timeout length, in deadline order, checked every tick: no reactor timer per request."""
        queue = self._deadlines.get(seconds)
        if queue is None:
            queue = self._deadlines[seconds] = deque()
        queue.append((self.reactor.seconds() + seconds, handle))

    def _expire(self) -> None:
        now = self.reactor.seconds()
        # a copy: an errback of the timeout may start a request with a timeout length not seen yet
        for seconds, queue in list(self._deadlines.items()):
            while queue and queue[0][0] <= now:
                self._time_out(queue.popleft()[1], seconds)

    def _time_out(self, handle: int, seconds: float) -> None:
        d = self._pending.pop(handle, None)
        if d is not None:
            d.errback(CommitTimeout(f"no commit decision within {seconds:g}s; it may still commit"))

    def _tick(self, count: int = 1) -> None:
        """``count`` ticks now (the fixed-rate LoopingCall's one; the simulator's; a wake's)."""
        # The LoopingCall must never die: a failure here stops the node loudly instead.
        self.last_tick = self.reactor.seconds()
        if not self._guarded(self.core.tick, count):
            return
        self._process()
        try:
            self._check_transfer()
            self._expire()
        except Exception:
            self._fail(Failure(), "the driver's handover or request deadlines failed")
        self._rearm()

    # -------------------------------------------------------------------------- the sleeping clock
    #
    # Instead of a tick every tick_seconds, one timer for the next tick at which anything can happen:
    # the core's next due tick (RaftCore.ticks_until_due), the tick that checks the earliest request
    # deadline, or MAX_SLEEP. The ticks in between only count, so they are given to the core when the
    # timer fires, or before anything else reaches the core (a message, a submission), exactly as a
    # fixed-rate ticker would have given them by then. Every change to the core re-arms the timer.

    def _grid_ticks(self, now: float) -> int:
        """The ticks of the grid that have fallen by ``now`` (as LoopingCall counts intervals)."""
        return int((now - self._origin) / self.tick_seconds)

    def _catch_up(self, woken: bool = False) -> None:
        """Give the core the ticks that have fallen since it last had one, before anything else
        reaches it: up to and including its next due tick, which runs as it would have on time.

        When the reactor was late by a whole tick or more past that due tick (it stalled: a long
        burst, a pause of the process), the ticks up to it only count and it runs at the next tick
        of the grid (once: the catch-up after that runs it however late), the rest are skipped: a
        late LoopingCall also gives one tick, not all it missed. The messages that queued up
        meanwhile are read first: a follower that was paused hears its leader's heartbeats before
        its election timer runs out, as with a fixed rate."""
        if self.fixed_rate or self._processing:
            return  # (inside a drain: a fixed-rate tick could not come in between either)
        now = self.reactor.seconds()
        self.last_tick = now
        fallen = self._grid_ticks(now)
        if woken:
            fallen = max(fallen, self._wake_tick)
        due = fallen - self._ticks_timed
        if due <= 0:
            return
        self._ticks_timed = fallen
        bound = self.core.ticks_until_due()
        if bound is not None and due > bound and not self._deferred:
            count, self._deferred = bound - 1, True  # stalled: see above
        else:
            count, self._deferred = (due if bound is None else min(due, bound)), False
        deadline = self._next_deadline()
        if woken or count == bound or (deadline is not None and deadline <= now):
            self._tick(count)
        else:
            self._guarded(self.core.tick, count)  # they only count: nothing to send, nothing expires

    def _wake(self) -> None:
        self._timer = None
        if not self.running:
            return
        # The timer must never die silently: a failure here (the core asked what is due) stops the
        # node loudly, as one in a tick does.
        try:
            self._catch_up(woken=True)
            self._rearm()
        except Exception:
            self._fail(Failure(), "the Raft core failed")

    def _rearm(self) -> None:
        """Set the timer for the next tick at which anything can happen (or MAX_SLEEP from now)."""
        if self.fixed_rate or not self.running:
            return
        now = self.reactor.seconds()
        bound = self.core.ticks_until_due()
        at = None if bound is None else self._ticks_timed + bound
        deadline = self._next_deadline()
        if self.stopped_by is not None:
            return  # the deadline queue failed: the node stopped
        if deadline is not None:
            k = max(self._ticks_timed + 1, self._grid_ticks(deadline))
            while self._origin + k * self.tick_seconds < deadline:
                k += 1
            at = k if at is None else min(at, k)
        when = now + MAX_SLEEP
        if at is not None and self._origin + at * self.tick_seconds <= when:
            when = self._origin + at * self.tick_seconds
        else:
            at = self._ticks_timed  # a wake to look at the clock: no tick falls due
        self._wake_tick = at
        timer = self._timer
        if timer is not None and timer.active():
            if timer.getTime() != when:
                timer.reset(max(0.0, when - now))
        else:
            self._timer = self.reactor.callLater(max(0.0, when - now), self._wake)

    def _rearm_unless_draining(self) -> None:
        """Re-arm the timer, unless a drain is due this reactor turn: it re-arms when it ends, so a
        burst of requests read at once costs one computation of the next due tick, not one each."""
        drain = self._drain
        if drain is None or not drain.active():
            self._rearm()

    def _next_deadline(self) -> float | None:
        """The earliest deadline of a request still waiting (None: none); a failure here stops the
        node loudly. Answered requests leave the front of their queues here (their deadlines would
        wake the node for nothing: a peer's request is queued before its answer is made)."""
        earliest = None
        pending = self._pending
        try:
            for queue in self._deadlines.values():
                while queue and queue[0][1] not in pending:
                    queue.popleft()
                if queue and (earliest is None or queue[0][0] < earliest):
                    earliest = queue[0][0]
        except Exception:
            self._fail(Failure(), "the driver's handover or request deadlines failed")
        return earliest

    def _on_response(self, response: Response) -> None:
        if not self.running:
            return
        self._catch_up()
        if self._guarded(self.core.step, response):
            self._soon()
        self._rearm_unless_draining()

    def _guarded(self, fn: Callable[..., object], *args: object) -> bool:
        """Run a step of the core; an exception is a bug that may have left it half-changed, so the
        node stops (fail-stop) rather than act on that state. False if it stopped."""
        try:
            fn(*args)
        except Exception:
            self._fail(Failure(), "the Raft core failed")
            return False
        return True

    def _fail(self, failure: Failure, what: str) -> None:
        self.log.failure("{what}; stopping this node", failure, what=what)
        self.stop(failure)

    def _on_send_failure(self, failure: Failure, to: int) -> None:
        if not failure.check(CancelledError):
            self.log.debug("request to server {to} failed: {why}", to=to, why=failure.getErrorMessage())

    def _soon(self) -> None:
        """Drain the core now, or (group commit) at the end of this reactor turn."""
        if not self.group_commit:
            self._process()
        elif self._drain is None or not self._drain.active():
            if not self._again and not self.core.has_ready():
                return  # nothing to drain (a heartbeat's answer taken in): no reactor turn for it
            self._drain = self.reactor.callLater(0, self._process)

    def _process(self) -> None:
        """Drain the core. Re-entrant calls (a response firing synchronously) just ask for another pass."""
        if self._processing:
            self._again = True
            return
        self._processing = True
        handled = 0
        try:
            while self.running and (self._again or self.core.has_ready()):
                if self.group_commit and handled >= 2:
                    # A backlog (thousands of entries to apply): let ticks and I/O run between
                    # Readies, or heartbeats wait behind it and followers start elections.
                    self._soon()
                    break
                self._again = False
                if self.core.has_ready():
                    self._handle(self.core.ready())
                    handled += 1
        except StorageError:  # the snapshot file (the log store's writes fail through the writer)
            self._fail(Failure(), "storage failed, so that it cannot act on lost state")
        except Exception:  # the state machine's failures are caught and named in _dispatch
            self._fail(Failure(), "the Raft core failed")
        finally:
            self._processing = False
        self._rearm()

    def _handle(self, ready: Ready) -> None:
        if ready.snapshot is not None:
            self._install(ready)
            if not self.running:
                return  # a write failed: nothing more may reach the disk or leave
        # The writes this Ready's messages wait for: every one given so far, and its own save unless
        # that is only the commit index (volatile). A leader's (§10.2.1) wait only for writes that
        # were not a leader's own entries: its AppendEntries carry entries still being written, and
        # its answers follow commits, which count its own log only as far as it is written.
        early = ready.leader_may_send_early(self._durable_vote)
        needed = self._writes_given
        if ready.only_commit(self._durable_vote):
            self._keep_commit(ready.hard_state)
        elif ready.needs_persist():
            hard, sync = ready.hard_state, ready.needs_sync(self._durable_vote)
            if hard is None:
                hard = self._unsaved_commit  # it rides along (the same state, saved later)
            self._unsaved_commit = None
            self._write(
                lambda: self.store.save(hard, ready.entries_from, ready.entries, sync=sync),
                lambda: self._saved(ready),
                background=early,
            )
            if sync and hard is not None:
                # the store holds it once this write ends; every later write comes after it
                if hard.voted_for is not None and (hard.term, hard.voted_for) != self._durable_vote:
                    # a line per vote, so that a vote given twice in one term (across a crash) shows
                    self.log.info(
                        "vote in term {term}: server {candidate}", term=hard.term, candidate=hard.voted_for
                    )
                self._durable_vote = (hard.term, hard.voted_for)
            if not early:
                self._floor = self._writes_given
                if sync:
                    needed = self._writes_given
            if not self.running:
                return
        else:
            self.core.advance(ready)
        if early:
            needed = self._floor
        if needed > self._writes_done or self._held:
            self._held.append((needed, ready))
        else:
            self._dispatch(ready)

    def _keep_commit(self, hard: HardState | None) -> None:
        """A save of the commit index alone waits for the next save, or a tick at most: a write of
        its own (a transaction, and on a leader a thread's turn) in every unloaded commit's path
        bought nothing, as a crash may lose it anyway (Raft's volatile state: the leader tells it
        again). Nothing waits for it, and it is written in its turn, after every earlier save."""
        self._unsaved_commit = hard
        if self._commit_timer is None:
            self._commit_timer = self.reactor.callLater(self.tick_seconds, self._save_commit)

    def _save_commit(self) -> None:
        self._commit_timer = None
        hard, self._unsaved_commit = self._unsaved_commit, None
        if hard is not None and self.running:
            self._write(lambda: self.store.save(hard, None, (), sync=False), None, background=False)

    def _write(self, job: Callable[[], None], then: Callable[[], None] | None, *, background: bool) -> None:
        """Give ``job`` to the writer. When it ended: ``then``, and the messages that waited for it
        leave. When it failed, the node stops: it cannot act on state it may have lost.

        Only a leader's own entries (``background``) go to the writer when no write is pending: the
        messages of any other write wait for it, and handing it to a thread and back costs more than
        it saves."""
        if not self.running:
            return  # stopped (a write failed): the disk gets nothing after that failure
        writer = self.writer if background or self._writes_done < self._writes_given else _INLINE
        self._writes_given += 1
        number = self._writes_given

        def ended(_: None) -> None:
            if not self.running:
                return
            self._writes_done = number
            # Inside _process already (an inline write) or not: a drain asked for meanwhile waits
            # until the held messages left, so that they leave in the order they were made.
            was, self._processing = self._processing, True
            try:
                if then is not None:
                    then()
                self._release()
            except Exception:
                self._fail(Failure(), "the driver failed after a write to the log store")
                return
            finally:
                self._processing = was
            if not was and self._again:
                self._process()
            self._rearm()

        def failed(failure: Failure) -> None:
            if self.running:
                what = "storage failed" if failure.check(StorageError) else "a write to the log store failed"
                self._fail(failure, what + ", so that it cannot act on lost state")

        writer.write(job).addCallbacks(ended, failed)

    def _saved(self, ready: Ready) -> None:
        self._catch_up()
        self.core.advance(ready)  # our own log now counts as far as this save went: a commit may follow
        if self.core.has_ready():
            self._again = True

    def _release(self) -> None:
        while self._held and self._held[0][0] <= self._writes_done and self.running:
            self._dispatch(self._held.popleft()[1])

    def _dispatch(self, ready: Ready) -> None:
        """Send, reply and apply: what ``ready`` depended on is durable."""
        try:
            self._deliver(ready)
        except Exception:
            self._fail_blaming()

    def _deliver(self, ready: Ready) -> None:
        for send in ready.sends:
            d = self.transport.send(send.to, send.message, send.endpoint)
            d.addCallbacks(self._on_response, self._on_send_failure, errbackArgs=(send.to,))
        for reply in ready.replies:
            pending = self._pending.pop(reply.handle, None)
            if pending is not None:
                pending.callback(reply.message)
        if ready.snapshot is not None:
            self._apply()  # what committed before it, in order, first
            self._machine_index = ready.snapshot.meta.last_index
            if self.state_machine is not None:
                self._applying = ready.snapshot.meta.last_index
                self.state_machine.restore(ready.snapshot.data)
        if ready.committed:
            self._to_apply.extend(ready.committed)
            self._apply_soon()
        self._applying = None
        self._observe()

    def _apply_soon(self) -> None:
        """Apply what committed once this Ready's messages left: a follower's acknowledgement and a
        leader's answers and AppendEntries are written this turn (TLS: at the start of the next),
        the socket sends them in the next turn's I/O, and only the turn after that applies. Applying
        first held them back for as long as the state machine took (a follower parses every entry),
        and with them the next commit: every node's work in series instead of overlapping."""
        if self._apply_call is None:
            self._apply_call = self.reactor.callLater(0, self._apply_next_turn)

    def _apply_next_turn(self) -> None:
        self._apply_call = self.reactor.callLater(0, self._apply_queued)

    def _apply_queued(self) -> None:
        self._apply_call = None
        if not self.running:
            return
        try:
            # a backlog a few Readies' worth at a time: ticks (heartbeats) and I/O run in between
            self._apply(2 * self.core.options.max_apply_per_ready)
            if self._to_apply:
                self._apply_call = self.reactor.callLater(0, self._apply_queued)
            self._maybe_compact()
        except StorageError:
            self._fail(Failure(), "storage failed, so that it cannot act on lost state")
        except Exception:
            self._fail_blaming()

    def _fail_blaming(self) -> None:
        """Stop for the exception being handled, naming the log entry the state machine was given."""
        where = "the Raft core failed"
        if self._applying is not None:
            where = f"the state machine failed on log entry {self._applying}"
        self._fail(Failure(), where)

    def _apply(self, most: int | None = None) -> None:
        to_apply = self._to_apply
        count = len(to_apply) if most is None else min(most, len(to_apply))
        for _ in range(count):
            index, entry = to_apply.popleft()
            self._applying = index
            for fn in self._on_apply:
                fn(index, entry)
            self._machine_index = index
        self._applying = None

    def _observe(self) -> None:
        """One info line per change of role, term or leader (elections, step-downs, new leaders)."""
        core = self.core
        seen = (core.role.value, core.term, core.leader_id)
        self._check_removed()
        self._check_transfer()
        self._alarm_conflicts()
        if seen == self._seen:
            return
        (role, term, leader), self._seen = self._seen, seen
        if seen[0] != role or seen[1] != term:
            self.log.info(
                "{role} in term {term}{lead} (was {was} in term {old})",
                role=seen[0],
                term=seen[1],
                lead="" if seen[2] is None or seen[0] == "leader" else f"; leader {seen[2]}",
                was=role,
                old=term,
            )
        if seen[2] != leader:
            if seen[2] is not None:
                self.leader_changes += 1  # as etcd counts them: each new leader seen, not each loss
            if seen[2] is not None and seen[0] != "leader":
                self.log.info("server {leader} leads term {term}", leader=seen[2], term=seen[1])
            for callback in self.on_leader_change:
                callback(seen[2])

    def _check_removed(self) -> None:
        """Say once, plainly, that this server is no longer a member (a committed configuration left
        it out, or the leader told it to leave): it keeps running, but votes and serves no more."""
        core = self.core
        index = core.removal_index()
        if index is None and core.removed:
            index = core.removed_by or core.config_index
        if index is None or not (core.removed or core.id not in core.voters()):
            self._removed_at = None
            return
        if index == self._removed_at:
            return
        self._removed_at = index
        core.removed = True
        self.log.warn(
            "this server was removed from the farm at index {index}; it no longer votes or serves; "
            "stop it or add it back",
            index=index,
        )

    def _alarm_conflicts(self) -> None:
        """A second claimant to a term's leadership is an alarm: logged at once when it is new, then
        with a count at most every 10 s (a forger repeating itself cannot flood the log)."""
        count = self.core.leader_conflicts
        if count == self._conflicts_logged:
            return
        now = self.reactor.seconds()
        message = self.core.leader_conflict
        if message != self._conflict_message or now - self._conflict_logged_at >= 10.0:
            self.log.error(
                "ALARM: two leaders claimed one term ({count} refused so far): {conflict}",
                count=count,
                conflict=message,
            )
            self._conflicts_logged, self._conflict_message, self._conflict_logged_at = count, message, now

    def _install(self, ready: Ready) -> None:
        """A snapshot from the leader: store it, then compact the log store to it."""
        assert ready.snapshot is not None
        self.log.info(
            "installing a snapshot up to index {index} from the leader", index=ready.snapshot.meta.last_index
        )
        self._store_snapshot(ready.snapshot.meta, ready.snapshot.data)

    def _maybe_compact(self) -> None:
        core = self.core
        if (
            self.state_machine is None
            or self.snapshots is None
            or self._machine_index - core.log.snapshot_index < self.snapshot_every
        ):
            return
        # The state machine's own index: the core may have handed later entries out already, in
        # Readies whose messages still wait for a write.
        data = self.state_machine.snapshot()
        meta = core.compact(self._machine_index, data)
        self._store_snapshot(meta, data)
        self.log.info("snapshot taken at index {index}; log compacted", index=meta.last_index)

    def _store_snapshot(self, meta: SnapshotMeta, data: bytes) -> None:
        """The new snapshot file, then (after the writes before it) the log store's compaction, and
        only then the previous file goes: a crash anywhere in between leaves a snapshot the store names."""
        if self.snapshots is not None:
            self.snapshots.save(meta, data)
        snapshots = self.snapshots
        prune = None if snapshots is None else lambda: snapshots.prune(meta)
        self._write(lambda: self.store.compact(meta), prune, background=False)


def _failed(error: Exception) -> Deferred[Any]:
    d: Deferred[Any] = Deferred()
    d.errback(error)
    return d
