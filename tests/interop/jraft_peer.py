"""A peer that behaves as JRaft's ``RaftServer`` does, written from reading its source (not copied).

What it keeps of JRaft, because that is what a garlicfarm node meets in a mixed farm:

* no pre-vote: any RequestVoteRequest raises its term if higher (and resets its election timer), and it
  grants if that term is current, the log is up to date and it has not voted for another; it ignores
  responses of a lower term;
* a leader answers a ClientRequest with accepted=1 once it has *appended* (nextIndex = its log end);
  it sends one AppendEntries at a time per peer, on each heartbeat or response; it commits by majority
  match of any term (JRaft's rule, which garlicfarm does not copy); configurations apply at commit;
* a leader catches a joiner up from index 1 in LogPacks of its own files (absolute offsets), committed
  entries only, then appends the new configuration;
* a joiner accepts SyncLogRequests only while catching up, applies each pack at ``lastLogIndex + 1``
  exactly as its file store does, and commits everything it holds;
* RemoveServer: the leader first sends LeaveClusterRequest, and removes the server once it accepts; a
  server told to leave stops campaigning and exits after two election timeouts without news.

Time is in milliseconds of a simulated clock; randomness comes from the ``random.Random`` given.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from garlicfarm.wire import ClusterServer, Configuration, LogEntry, Payload, ValueType
from garlicfarm.wire.codec import decode_value, encode_value
from tests.interop.jraft_store import JRaftLogStore
from tests.interop.jraft_wire import RawEntry, RawRequest, RawResponse, parse_request

# dmprinter's RaftParameters
ELECTION_LOWER_MS = 3000
ELECTION_UPPER_MS = 5000
HEARTBEAT_MS = 1500
MAX_APPEND = 200
LOG_SYNC_BATCH = 5
LOG_SYNC_STOP_GAP = 5

SendFn = Callable[[int, bytes, str | None], None]


def config_bytes(config: Configuration) -> bytes:
    return encode_value(config)


def parse_config(value: bytes) -> Configuration:
    decoded = decode_value(value, ValueType.CONFIGURATION, 0, len(value))
    assert isinstance(decoded, Configuration)
    return decoded


class _Peer:
    def __init__(self, server: ClusterServer, next_index: int) -> None:
        self.server = server
        self.next_index = next_index
        self.matched = 0
        self.busy = False
        self.pending_commit = False
        self.heartbeat_at = 0


class JRaftPeer:
    """One JRaft node. ``send(to, request_bytes, endpoint)`` puts a request on the wire; its response
    comes back through :meth:`on_response` (or :meth:`on_failure`)."""

    def __init__(self, server_id: int, config: Configuration, rng: random.Random, send: SendFn) -> None:
        self.id = server_id
        self.rng = rng
        self.send = send
        self.store = JRaftLogStore()
        self.term = 0
        self.voted_for = -1
        self.role = "follower"
        self.leader = -1
        self.config = config
        self.commit_index = 0  # applied (state.commitIndex)
        self.quick_commit = 0
        self.catching_up = False
        self.stepping_down = 0
        self.config_changing = False
        self.exited = False
        self.votes: set[int] = set()
        self.granted = 0
        self.election_done = False
        self.peers: dict[int, _Peer] = {}
        self.server_to_join: _Peer | None = None
        self.now = 0
        self.election_at: int | None = None
        self.applied: list[tuple[int, LogEntry]] = []
        self.errors: list[str] = []
        self._reconfigure(config)
        self._restart_election_timer()

    # ------------------------------------------------------------------------------------------ time

    def advance(self, now: int) -> None:
        self.now = now
        if self.exited:
            return
        if self.election_at is not None and now >= self.election_at:
            self._election_timeout()
        if self.role == "leader":
            for peer in list(self.peers.values()):
                if now >= peer.heartbeat_at:
                    peer.heartbeat_at = now + HEARTBEAT_MS
                    self._request_append(peer)

    def _restart_election_timer(self) -> None:
        if self.catching_up:
            return
        self.election_at = self.now + self.rng.randint(ELECTION_LOWER_MS, ELECTION_UPPER_MS)

    def _election_timeout(self) -> None:
        if self.stepping_down > 0:
            self.stepping_down -= 1
            if self.stepping_down == 0:
                self.exited = True  # "no hearing further news from leader ... step down"
                return
            self._restart_election_timer()
            return
        if self.catching_up:
            self._restart_election_timer()
            return
        self.term += 1
        self.voted_for = -1
        self.role = "candidate"
        self.votes = set()
        self.granted = 0
        self.election_done = False
        self.voted_for = self.id
        self.granted += 1
        self.votes.add(self.id)
        if self.granted > (len(self.peers) + 1) // 2:
            self.election_done = True
            self._become_leader()
        else:
            for peer in list(self.peers.values()):
                request = RawRequest(
                    1,
                    self.id,
                    peer.server.id,
                    self.term,
                    last_log_term=self.store.last_term(),
                    last_log_index=self.store.last_index,
                )
                self.send(peer.server.id, request.to_bytes(), peer.server.endpoint)
        if self.role != "leader":
            self._restart_election_timer()

    # ------------------------------------------------------------------------------------------ terms

    def _update_term(self, term: int) -> bool:
        if term > self.term:
            self.term = term
            self.voted_for = -1
            self.election_done = False
            self.granted = 0
            self.votes = set()
            self._become_follower()
            return True
        return False

    def _become_follower(self) -> None:
        for peer in self.peers.values():
            peer.busy = False
        self.server_to_join = None
        self.role = "follower"
        self._restart_election_timer()

    def _become_leader(self) -> None:
        self.election_at = None
        self.role = "leader"
        self.leader = self.id
        self.server_to_join = None
        for peer in self.peers.values():
            peer.next_index = self.store.first_available
            peer.busy = False
            peer.heartbeat_at = self.now + HEARTBEAT_MS
        if self.config.log_index == 0:
            self.config = Configuration(self.store.first_available, 0, self.config.servers)
            self.store.append(LogEntry(self.term, self.config))
            self.config_changing = True
        self._request_append_all()

    # ------------------------------------------------------------------------------------------ requests

    def handle(self, data: bytes) -> RawResponse | None:
        """Answer one request (JRaft answers every request synchronously)."""
        if self.exited:
            return None
        m = parse_request(data)
        handler = {
            1: self._on_vote,
            3: self._on_append,
            5: self._on_client,
            6: self._on_add_server,
            8: self._on_remove_server,
            10: self._on_sync_log,
            12: self._on_join,
            14: self._on_leave,
        }.get(m.type)
        if handler is None:
            self.errors.append(f"unexpected request type {m.type}")
            return None
        return handler(m)

    def _response(self, kind: int, to: int, accepted: bool, next_index: int = 0) -> RawResponse:
        return RawResponse(kind, self.id, to, self.term, next_index, accepted)

    def _on_vote(self, m: RawRequest) -> RawResponse:
        self._update_term(m.term)
        if self.stepping_down > 0:
            self.stepping_down = 2
        last_term = self.store.last_term()
        log_ok = m.last_log_term > last_term or (
            m.last_log_term == last_term and self.store.last_index <= m.last_log_index
        )
        grant = m.term == self.term and log_ok and self.voted_for in (m.source, -1)
        if grant:
            self.voted_for = m.source
        return self._response(2, m.source, grant)

    def _on_append(self, m: RawRequest) -> RawResponse:
        self._update_term(m.term)
        if self.stepping_down > 0:
            self.stepping_down = 2
        if m.term == self.term:
            if self.role == "candidate":
                self._become_follower()
            elif self.role == "leader":
                self.errors.append(f"AppendEntries from another leader {m.source} in term {m.term}")
                self.exited = True
            else:
                self._restart_election_timer()
        log_ok = m.last_log_index == 0 or (
            m.last_log_index < self.store.first_available
            and m.last_log_term == self.store.term_at(m.last_log_index)
        )
        if m.term < self.term or not log_ok:
            return self._response(4, m.source, False, self.store.first_available)
        index = m.last_log_index + 1
        k = 0
        entries = [LogEntry(e.term, self._value(e)) for e in m.entries]
        while index < self.store.first_available and k < len(entries):
            if entries[k].term != self.store.entry_at(index).term:
                break
            index, k = index + 1, k + 1
        while index < self.store.first_available and k < len(entries):
            self.store.write_at(index, entries[k])
            if isinstance(entries[k].value, Configuration):
                self.config_changing = True
            index, k = index + 1, k + 1
        for entry in entries[k:]:
            self.store.append(entry)
            if isinstance(entry.value, Configuration):
                self.config_changing = True
        self.leader = m.source
        self._commit(m.commit_index)
        return self._response(4, m.source, True, m.last_log_index + len(entries) + 1)

    def _on_client(self, m: RawRequest) -> RawResponse:
        response = RawResponse(4, self.id, self.leader, self.term, 0, False)
        if self.role != "leader":
            return response
        for e in m.entries:
            self.store.append(LogEntry(self.term, self._value(e)))
        self._request_append_all()
        return RawResponse(4, self.id, self.leader, self.term, self.store.first_available, True)

    def _on_add_server(self, m: RawRequest) -> RawResponse:
        refused = RawResponse(7, self.id, self.leader, self.term, self.store.first_available, False)
        if (
            len(m.entries) != 1
            or m.entries[0].value_type != ValueType.CLUSTER_SERVER
            or self.role != "leader"
        ):
            return refused
        server = decode_value(m.entries[0].value, ValueType.CLUSTER_SERVER, 0, len(m.entries[0].value))
        assert isinstance(server, ClusterServer)
        if server.id in self.peers or server.id == self.id or self.config_changing:
            return refused
        self.server_to_join = _Peer(server, 0)
        invite = RawRequest(
            12,
            self.id,
            server.id,
            self.term,
            last_log_index=self.store.last_index,
            commit_index=self.quick_commit,
            entries=(RawEntry(self.term, ValueType.CONFIGURATION, config_bytes(self.config)),),
        )
        self.send(server.id, invite.to_bytes(), server.endpoint)
        return RawResponse(7, self.id, self.leader, self.term, self.store.first_available, True)

    def _on_remove_server(self, m: RawRequest) -> RawResponse:
        refused = RawResponse(9, self.id, self.leader, self.term, self.store.first_available, False)
        if len(m.entries) != 1 or len(m.entries[0].value) != 4 or self.role != "leader":
            return refused
        server_id = int.from_bytes(m.entries[0].value, "big")
        if self.config_changing or server_id == self.id or server_id not in self.peers:
            return refused
        peer = self.peers[server_id]
        leave = RawRequest(
            14,
            self.id,
            server_id,
            self.term,
            last_log_index=self.store.last_index,
            commit_index=self.quick_commit,
        )
        self.send(server_id, leave.to_bytes(), peer.server.endpoint)
        return RawResponse(9, self.id, self.leader, self.term, self.store.first_available, True)

    def _on_sync_log(self, m: RawRequest) -> RawResponse:
        refused = self._response(11, m.source, False, self.store.first_available)
        if len(m.entries) != 1 or m.entries[0].value_type != ValueType.LOG_PACK or not self.catching_up:
            return refused
        self.store.apply_log_pack(m.last_log_index + 1, m.entries[0].value)
        self._commit(self.store.last_index)
        return self._response(11, m.source, True, self.store.first_available)

    def _on_join(self, m: RawRequest) -> RawResponse:
        refused = self._response(13, m.source, False, self.store.first_available)
        if len(m.entries) != 1 or m.entries[0].value_type != ValueType.CONFIGURATION or self.catching_up:
            return refused
        self.catching_up = True
        self.role = "follower"
        self.leader = m.source
        self.term = m.term
        self.commit_index = self.quick_commit = 0
        self.voted_for = -1
        self.election_at = None
        self._reconfigure(parse_config(m.entries[0].value))
        return self._response(13, m.source, True, self.store.first_available)

    def _on_leave(self, m: RawRequest) -> RawResponse:
        if self.config_changing:
            return self._response(15, m.source, False, self.store.first_available)
        self.stepping_down = 2
        return self._response(15, m.source, True, self.store.first_available)

    def _value(self, e: RawEntry) -> Payload:
        return decode_value(e.value, ValueType(e.value_type), 0, len(e.value))

    # ------------------------------------------------------------------------------------------ leading

    def _request_append_all(self) -> None:
        if not self.peers:
            self._commit(self.store.last_index)
            return
        for peer in list(self.peers.values()):
            self._request_append(peer)

    def _request_append(self, peer: _Peer) -> bool:
        if peer.busy:
            return False
        peer.busy = True
        if peer.next_index == 0:
            peer.next_index = self.store.first_available
        last = peer.next_index - 1
        if last >= self.store.first_available:
            self.errors.append(f"peer {peer.server.id}'s lastLogIndex {last} is too large")
            self.exited = True
            return False
        end = min(self.store.first_available, last + 1 + MAX_APPEND)
        entries = tuple(
            RawEntry(t, vt, v) for t, vt, v in (self.store.raw_at(i) for i in range(last + 1, end))
        )
        request = RawRequest(
            3,
            self.id,
            peer.server.id,
            self.term,
            last_log_term=self.store.term_at(last),
            last_log_index=last,
            commit_index=self.quick_commit,
            entries=entries,
        )
        self.send(peer.server.id, request.to_bytes(), peer.server.endpoint)
        return True

    def _commit(self, target: int) -> None:
        if target > self.quick_commit:
            self.quick_commit = target
            if self.role == "leader":
                for peer in self.peers.values():
                    if not self._request_append(peer):
                        peer.pending_commit = True
        while self.commit_index < min(self.quick_commit, self.store.last_index):
            self.commit_index += 1
            entry = self.store.entry_at(self.commit_index)
            self.applied.append((self.commit_index, entry))
            if isinstance(entry.value, Configuration):
                self.config_changing = False
                if self.config.log_index < entry.value.log_index:
                    self._reconfigure(entry.value)
                if self.catching_up and entry.value.endpoint_of(self.id) is not None:
                    self.catching_up = False
                    self._restart_election_timer()

    def _reconfigure(self, config: Configuration) -> None:
        ids = config.ids()
        for server in config.servers:
            if server.id != self.id and server.id not in self.peers:
                peer = _Peer(server, self.store.first_available)
                self.peers[server.id] = peer
                if self.role == "leader":
                    peer.heartbeat_at = self.now
                    if self.server_to_join is not None and self.server_to_join.server.id == server.id:
                        peer.next_index = self.server_to_join.next_index
                        self.server_to_join = None
        if self.id not in ids and not self.catching_up and config.servers:
            self.config = config
            self.exited = True  # "server has been removed from cluster, step down"
            return
        for peer_id in [p for p in self.peers if p not in ids]:
            del self.peers[peer_id]
        self.config = config

    # ------------------------------------------------------------------------------------------ responses

    def on_response(self, request: bytes, r: RawResponse) -> None:
        if self.exited:
            return
        kind = request[0]
        if kind in (10, 12, 14):
            self._on_extended_response(r)
            return
        peer = self.peers.get(r.source)
        if kind == 3 and peer is not None:
            peer.busy = False
        if self._update_term(r.term) or r.term < self.term:
            return
        if kind == 1:
            self._on_vote_response(r)
        elif kind == 3 and peer is not None:
            self._on_append_response(peer, r)

    def on_failure(self, request: bytes, to: int) -> None:
        peer = self.peers.get(to)
        if request[0] == 3 and peer is not None:
            peer.busy = False

    def _on_vote_response(self, r: RawResponse) -> None:
        if r.source in self.votes:
            return
        self.votes.add(r.source)
        if self.election_done or self.role != "candidate":
            return
        if r.accepted:
            self.granted += 1
        if len(self.votes) >= len(self.peers) + 1:
            self.election_done = True
        if self.granted > (len(self.peers) + 1) // 2:
            self.election_done = True
            self._become_leader()

    def _on_append_response(self, peer: _Peer, r: RawResponse) -> None:
        catch_up = True
        if r.accepted:
            peer.next_index = r.next_index
            peer.matched = r.next_index - 1
            matched = sorted([self.store.last_index, *(p.matched for p in self.peers.values())], reverse=True)
            self._commit(matched[(len(self.peers) + 1) // 2])
            catch_up = peer.pending_commit or r.next_index < self.store.first_available
            peer.pending_commit = False
        elif r.next_index > 0 and peer.next_index > r.next_index:
            peer.next_index = r.next_index
        else:
            peer.next_index -= 1
        if self.role == "leader" and catch_up:
            self._request_append(peer)

    def _on_extended_response(self, r: RawResponse) -> None:
        joining = self.server_to_join
        if r.type == 11 and joining is not None:
            joining.next_index = r.next_index
            joining.matched = r.next_index - 1
            self._sync_to_joiner(r.next_index)
        elif r.type == 13 and joining is not None and r.accepted:
            self._sync_to_joiner(1)
        elif r.type == 15 and r.accepted:
            remaining = tuple(s for s in self.config.servers if s.id != r.source)
            self.config_changing = True
            new = Configuration(self.store.first_available, self.config.log_index, remaining)
            self.store.append(LogEntry(self.term, new))
            self._request_append_all()

    def _sync_to_joiner(self, start: int) -> None:
        joining = self.server_to_join
        assert joining is not None
        gap = self.quick_commit - start
        if gap < LOG_SYNC_STOP_GAP:
            servers = (*self.config.servers, joining.server)
            new = Configuration(self.store.first_available, self.config.log_index, servers)
            self.store.append(LogEntry(self.term, new))
            self.config_changing = True
            self._request_append_all()
            return
        pack = self.store.pack_log(start, min(gap, LOG_SYNC_BATCH))
        request = RawRequest(
            10,
            self.id,
            joining.server.id,
            self.term,
            last_log_index=start - 1,
            commit_index=self.quick_commit,
            entries=(RawEntry(self.term, ValueType.LOG_PACK, pack),),
        )
        self.send(joining.server.id, request.to_bytes(), joining.server.endpoint)

    # ------------------------------------------------------------------------------------------ checks

    def committed(self) -> list[LogEntry]:
        """Its committed log, read back from its files as JRaft reads it."""
        return [self.store.entry_at(i) for i in range(self.store.start, self.commit_index + 1)]
