"""A simulated server: a Raft core, its durable store, and the Ready loop a real driver runs."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping

import attrs

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.types import RaftOptions, Ready, Role, is_vote_grant
from garlicfarm.sim.disk import CrashingLogStore, CrashingSnapshotStore, CrashPoints, DiskCrash
from garlicfarm.sim.faults import Mutations
from garlicfarm.sim.invariants import InvariantChecker
from garlicfarm.sim.mutants import CORE_MUTANTS
from garlicfarm.storage.interface import LogStore, SnapshotMeta, StorageError
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.snapshots import MemorySnapshotStore, recover
from garlicfarm.wire.codec import encode_entry
from garlicfarm.wire.messages import Message, Request, RequestVoteResponse, Response
from garlicfarm.wire.payloads import Configuration, LogEntry


@attrs.frozen
class Origin:
    """Who is waiting for the reply to a request: a peer server, or a simulated client's operation."""

    node: int | None = None
    client: int | None = None
    op: int | None = None


class DigestMachine:
    """The simulated application: a running SHA-256 over applied entries. Its snapshot is
    deterministic (same index, same bytes), as a real state machine's must be, and ``size`` bytes
    long (padding derived from the digest) so that a transfer takes many chunks."""

    def __init__(self, size: int = 40) -> None:
        self.index = 0
        self.digest = b"\x00" * 32
        self.size = size

    def apply(self, index: int, entry: LogEntry) -> None:
        self.index = index
        self.digest = hashlib.sha256(self.digest + index.to_bytes(8, "big") + encode_entry(entry)).digest()

    def check(self, entry: LogEntry) -> str | None:
        return None  # any entry is welcome

    def check_snapshot(self, data: bytes) -> str | None:
        return None

    def snapshot(self) -> bytes:
        head = self.index.to_bytes(8, "big") + self.digest
        if self.size <= len(head):
            return head
        return head + hashlib.shake_256(head).digest(self.size - len(head))

    def restore(self, data: bytes) -> None:
        self.index = int.from_bytes(data[:8], "big")
        self.digest = data[8:40]


class Crashed(Exception):
    """The node crashed while handling a Ready (a scheduled mid-Ready crash)."""


SendFn = Callable[[int, int, Message, Origin | None], None]


class SimNode:
    def __init__(
        self,
        server_id: int,
        bootstrap: Configuration,
        options: RaftOptions,
        rng: random.Random,
        checker: InvariantChecker,
        mutations: Mutations,
        send: SendFn,
        on_reply: Callable[[Origin, Response], None],
        on_apply: Callable[[int, int, LogEntry], None],
        on_crash: Callable[[int], None],
        peer_stores: Callable[[], Mapping[int, LogStore]],
    ) -> None:
        self.id = server_id
        #: the disk: what survives a crash (``durable``), written through crash points
        self.durable = MemoryLogStore()
        self.crash_points = CrashPoints(random.Random(rng.getrandbits(64)))
        self.store = CrashingLogStore(self.durable, self.crash_points)
        self.snapshots = CrashingSnapshotStore(MemorySnapshotStore(), self.crash_points)
        self.bootstrap = bootstrap
        self.options = options
        self.rng = rng
        self.checker = checker
        self.mutations = mutations
        self._send = send
        self._on_reply = on_reply
        self._on_apply = on_apply
        self._on_crash = on_crash
        self._peer_stores = peer_stores
        self.core: RaftCore | None = None
        self._handles: dict[int, Origin] = {}
        self._next_handle = 0
        self.crash_mid_ready = 0.0
        self.crash_after_commit = 0.0
        self.crash_after_vote = 0.0
        #: take a snapshot and compact once this many entries are applied past the last one (0: never)
        self.compact_every = 0
        #: why the last start failed (the node stays down), or None
        self.start_failure: str | None = None
        #: bytes in the state machine's snapshot
        self.snapshot_bytes = 40
        #: mean seconds a log store write takes; only the driver-run node models it (driven.py)
        self.disk_latency = 0.0
        self.machine = DigestMachine()
        self.start()

    @property
    def up(self) -> bool:
        return self.core is not None

    def start(self) -> None:
        cls: type[RaftCore] = RaftCore
        if self.mutations.core:
            cls = CORE_MUTANTS[self.mutations.core][0]
        elif self.mutations.commit_old_terms:
            cls = CORE_MUTANTS["commit_old_terms"][0]
        elif self.mutations.skip_vote_log_check:
            cls = CORE_MUTANTS["skip_vote_log_check"][0]
        stored = self.store.load()
        self.checker.vote_durable(self.id, stored.hard_state.term, stored.hard_state.voted_for)
        self.machine = DigestMachine(self.snapshot_bytes)
        try:
            # what the real service does at start: the snapshot file the log store names
            data = recover(stored.snapshot, self.snapshots.durable)
        except StorageError as e:
            self.start_failure = str(e)
            self.checker.fail("restart", f"node {self.id} cannot start: {e}")
            return
        if stored.snapshot is not None:
            self.machine.restore(data)
            self.checker.restored(self.id, stored.snapshot.last_index, data)
        self.core = cls(self.id, stored, self.rng, self.bootstrap, self.options, data)
        self._durable_vote = (stored.hard_state.term, stored.hard_state.voted_for)
        self._handles = {}
        self._leader_term = -1
        self._seen_commit = 0
        self.checker.restarted(self.id)

    def crash(self) -> None:
        """Lose everything not in the store: the core, pending replies, unsent messages."""
        self.crash_points.force_next = False
        self.store.unsynced = None  # never fsynced: gone with the crash
        self.core = None
        self._handles = {}
        self._on_crash(self.id)

    def tick(self) -> None:
        if self.core is not None:
            self.core.tick()
            self.process()

    def transfer(self, target: int | None) -> None:
        """Ask this node, if it leads, to hand its leadership over (to ``target``, or its choice)."""
        if self.core is not None:
            self.core.transfer_leadership(target)
            self.process()

    def link_up(self, peer: int) -> None:
        """The link to ``peer`` came back (a partition healed)."""
        if self.core is not None:
            self.core.link_up(peer)
            self.process()

    def receive(self, message: Message, origin: Origin | None) -> None:
        core = self.core
        if core is None:
            return
        if isinstance(message, Request):
            handle = self._next_handle
            self._next_handle += 1
            assert origin is not None
            self._handles[handle] = origin
            core.step(message, handle)
        else:
            core.step(message)
        self.process()

    def process(self) -> None:
        try:
            while self.core is not None and self.core.has_ready():
                self._handle_ready(self.core, self.core.ready())
        except (Crashed, DiskCrash):
            self.crash()
        if self.core is not None:
            self._observe(self.core)

    def _maybe_crash(self) -> None:
        if self.crash_mid_ready and self.rng.random() < self.crash_mid_ready:
            raise Crashed

    def _handle_ready(self, core: RaftCore, ready: Ready) -> None:
        self._check_entries(core, ready)
        if self.mutations.send_before_persist:
            self._dispatch(core, ready)
            self._maybe_crash()
            self._persist(ready)
            core.advance(ready)
        else:
            self._maybe_crash()
            self._persist(ready)
            core.advance(ready)
            self._maybe_crash()
            self._dispatch(core, ready)

    def _persist(self, ready: Ready) -> None:
        if ready.snapshot is not None:
            self._store_snapshot(ready.snapshot.meta, ready.snapshot.data)
        if ready.needs_persist():
            hard, sync = ready.hard_state, ready.needs_sync(self._durable_vote)
            self.store.save(hard, ready.entries_from, ready.entries, sync=sync)
            if sync and hard is not None:
                self._durable_vote = (hard.term, hard.voted_for)

    def _dispatch(self, core: RaftCore, ready: Ready) -> None:
        voted = False
        for send in ready.sends:
            self._send(self.id, send.to, send.message, Origin(node=self.id))
        for reply in ready.replies:
            origin = self._handles.pop(reply.handle)
            if origin.node is not None:
                self._send(self.id, origin.node, reply.message, None)
                message = reply.message
                if isinstance(message, RequestVoteResponse) and is_vote_grant(message):
                    self.checker.voted(self.id, message.term, origin.node)
                    if self.crash_after_vote and self.rng.random() < self.crash_after_vote:
                        voted = True
            else:
                self._on_reply(origin, reply.message)
        if voted:
            raise Crashed  # right after a vote grant left
        if ready.snapshot is not None:
            self.machine.restore(ready.snapshot.data)
            self.checker.restored(self.id, ready.snapshot.meta.last_index, ready.snapshot.data)
        for index, entry in ready.committed:
            self.machine.apply(index, entry)
            if self.checker.applied(self.id, index, entry, self.machine.snapshot()):
                self._on_apply(self.id, index, entry)
        self._maybe_compact(core)

    def _maybe_compact(self, core: RaftCore) -> None:
        if not self.compact_every or core.applied - core.log.snapshot_index < self.compact_every:
            return
        data = self.machine.snapshot()
        meta = core.compact(core.applied, data)
        self._maybe_crash()  # between the snapshot in memory and on disk: nothing is lost but work
        self._store_snapshot(meta, data)

    def _store_snapshot(self, meta: SnapshotMeta, data: bytes) -> None:
        """The driver's order: the new file, the log store's compaction, then the old file goes."""
        self.snapshots.save(meta, data)
        if self.mutations.snapshot_file_first:
            self.snapshots.prune(meta)
        self.store.compact(meta)
        self.snapshots.prune(meta)

    def _check_progress(self, core: RaftCore) -> None:
        """What a leader believes a follower holds, it holds durably: a follower still in the leader's
        term (durably) cannot have lost or replaced an entry it acknowledged in that term."""
        stores = self._peer_stores()
        for peer, pr in core.progress.items():
            store = stores.get(peer)
            if not isinstance(store, MemoryLogStore) or not pr.match:
                continue
            if store.hard_state.term < core.term:
                # A matchIndex is earned only by an answer of this term, which the follower sends after
                # making the term durable: one that never reached this term acknowledged an older log.
                self.checker.fail(
                    "leader progress",
                    f"leader {self.id} (term {core.term}) has matchIndex {pr.match} for {peer}, which "
                    f"has never been in that term (its term is {store.hard_state.term})",
                )
                return
            if store.hard_state.term != core.term:
                continue
            term = core.log.term_at(pr.match)
            snapshot = store.snapshot
            if term is None or (snapshot is not None and snapshot.last_index >= pr.match):
                continue
            held = store.entries(pr.match, pr.match + 1)
            if not held or held[0].term != term:
                self.checker.fail(
                    "leader progress",
                    f"leader {self.id} (term {core.term}) has matchIndex {pr.match} for {peer}, which "
                    f"holds {'nothing' if not held else f'term {held[0].term}'} there, not term {term}",
                )
                return

    def _check_entries(self, core: RaftCore, ready: Ready) -> None:
        if ready.entries_from is None:
            return
        prev_term = core.log.term_at(ready.entries_from - 1)
        config = core.config_at(ready.entries_from - 1)
        for offset, entry in enumerate(ready.entries):
            index = ready.entries_from + offset
            self.checker.appended(self.id, index, entry, prev_term)
            prev_term = entry.term
            if isinstance(entry.value, Configuration):
                self.checker.config_change(self.id, index, config, entry.value)
                if core.role is Role.LEADER and entry.term == core.term and config.ids() != entry.value.ids():
                    self._check_change_committed(core, index)
                config = entry.value
        self._check_configs_in_log(core)
        if ready.entries_from <= self.durable.last_index:  # a truncation: configurations roll back too
            self._check_config_in_force(core)

    def _check_configs_in_log(self, core: RaftCore) -> None:
        """Every configuration the core keeps past its snapshot is the entry at that index in its log
        (one that a truncation removed must be gone with it)."""
        for at, config in core._configs[1:]:
            if not core.log.snapshot_index < at <= core.log.last_index or core.log.entry(at).value != config:
                self.checker.fail(
                    "configuration in force",
                    f"node {self.id} keeps a configuration of index {at} ({sorted(config.ids())}) that "
                    f"its log (snapshot {core.log.snapshot_index}, last {core.log.last_index}) does "
                    "not hold",
                )
                return

    def _check_change_committed(self, core: RaftCore, index: int) -> None:
        """A leader changes membership only once the configuration before it is committed (§4.1)."""
        before = max((at for at, _ in core._configs if at < index), default=0)
        if before > core.commit:
            self.checker.fail(
                "configuration change",
                f"leader {self.id} appended a membership change at {index} while the configuration at "
                f"{before} is uncommitted (commit {core.commit})",
            )

    def _check_config_in_force(self, core: RaftCore) -> None:
        """A server uses the latest configuration in its log, committed or not (dissertation §4.1)."""
        expected = None
        for index in range(core.log.last_index, core.log.snapshot_index, -1):
            value = core.log.entry(index).value
            if isinstance(value, Configuration):
                expected = (index, value)
                break
        if expected is None:  # none after the snapshot: the snapshot's (or the bootstrap one)
            expected = (core.log.snapshot_index, core._configs[0][1])
        if (core.config_index, core.config) != expected:
            self.checker.fail(
                "configuration in force",
                f"node {self.id} uses the configuration of index {core.config_index} "
                f"({sorted(core.voters())}), its log's latest is at {expected[0]} "
                f"({sorted(expected[1].ids())})",
            )

    def _observe(self, core: RaftCore) -> None:
        self.checker.commit_index(self.id, core.commit)
        if core.role is not Role.LEADER:
            return
        if self._leader_term != core.term:
            self._leader_term = core.term
            self._seen_commit = core.commit
            self.checker.leader(self.id, core.term)
            if self.id not in core.voters() and not core.electable():
                self.checker.fail(
                    "leader membership",
                    f"node {self.id} leads term {core.term} outside its configuration "
                    f"{sorted(core.voters())}, which is committed or never held it",
                )
            self.checker.leader_log(
                self.id,
                core.term,
                (
                    (i, core.log.term_at(i))
                    for i in self.checker.committed_indexes()
                    if i > core.log.snapshot_index
                ),
            )
        self._check_progress(core)
        if core.commit > self._seen_commit:
            self.checker.leader_committed(self.id, self._seen_commit, core.commit, core.term)
            self._seen_commit = core.commit
            term = core.log.term_at(core.commit)
            assert term is not None
            if term != core.term:
                # §5.4.2: a leader counts replicas only for an entry of its own term; earlier ones
                # commit beneath it (their own leader may not have, and Figure 8 overwrites them)
                self.checker.fail(
                    "leader commit",
                    f"leader {self.id} of term {core.term} committed index {core.commit}, an entry of "
                    f"term {term}, by counting replicas",
                )
            self.checker.durable_quorum(self.id, core.commit, term, core.voters(), self._peer_stores())
            if self.crash_after_commit and self.rng.random() < self.crash_after_commit:
                self.crash()
