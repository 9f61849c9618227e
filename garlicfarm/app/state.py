"""The farm's replicated application state, fed by committed log entries.

It holds each member's latest status record, the configuration's members, excluded destinations, the
current Meta LS2 publisher and contents, and a bounded record of rejected entries. Everything is a pure
function of the log prefix, so every server computes the same state; ``snapshot`` is canonical JSON
(deterministic bytes), as log compaction and snapshot transfer require.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from typing import Any

import attrs

from garlicfarm.app import scoring
from garlicfarm.app.logcheck import Divergence, LogDigest
from garlicfarm.app.schema import (
    AdminCommand,
    Entry,
    SchemaError,
    StatusRecord,
    check_entry,
    detached,
    parse_entry,
    record_from_json,
    record_to_json,
)
from garlicfarm.wire.payloads import Application, Configuration, LogEntry

MAX_REJECTS_KEPT = 100
#: entries a leader admitted and has not applied yet whose parse it keeps (beyond: parsed again)
MAX_CHECKED_KEPT = 4096


@attrs.frozen
class Rejection:
    index: int
    reason: str


class FarmState:
    """Implements the driver's ``StateMachine`` seam."""

    def __init__(self, cluster: str, *, track_leases: bool = True) -> None:
        self.cluster = cluster
        #: False: ``leases`` is left empty and ``on_change`` fires for the publisher only; a reader
        #: that wants the Meta LS2 at some moment computes ``current_leases()`` then (the pipeline's
        #: replay, at each window's end: the leases feed nothing back into the state)
        self.track_leases = track_leases
        self.index = 0
        #: the farm's time: the date a quorum of members has reached (scoring.farm_time)
        self.now = 0
        self.members: frozenset[int] = frozenset()
        self.latest: dict[int, StatusRecord] = {}
        self.excluded: set[str] = set()
        self.publisher: int | None = None
        self.leases: tuple[scoring.Lease, ...] = ()
        self.rejected = 0
        self.duplicates = 0
        self.rejects: deque[Rejection] = deque(maxlen=MAX_REJECTS_KEPT)
        #: data -> what parse_entry makes of it, for entries check() admitted (apply takes it)
        #: (and how many admitted entries hold that data: the same bytes may be submitted often)
        self._checked: dict[bytes, list[Any]] = {}
        #: called with (index, record) for every accepted status record: the telemetry archive
        self.on_record: list[Callable[[int, StatusRecord], None]] = []
        #: called with (publisher, leases) when either changes
        self.on_change: list[Callable[[int | None, tuple[scoring.Lease, ...]], None]] = []
        #: the running digest of the applied log, and what members' reports of theirs showed: this
        #: server's own view, kept out of snapshots (docs/security.md, "Divergent members")
        self.digest = LogDigest()
        self.divergent: dict[int, Divergence] = {}
        self.log_checks = 0
        #: called with each new or changed divergence
        self.on_divergence: list[Callable[[Divergence], None]] = []

    # ------------------------------------------------------------------------------------------ apply

    def apply(self, index: int, entry: LogEntry) -> None:
        self.index = index
        self.digest.add(index, entry)
        value = entry.value
        if isinstance(value, Configuration):
            self.members = value.ids()
            self.now = scoring.farm_time(self.latest, self.members, self.now)
        elif isinstance(value, Application):
            parsed: Entry | SchemaError | None = None
            kept = self._checked.get(value.data)
            if kept is not None:
                parsed, kept[1] = kept[0], kept[1] - 1
                if not kept[1]:
                    del self._checked[value.data]
            if parsed is None:
                try:
                    parsed = parse_entry(value.data, self.cluster)
                except SchemaError as e:
                    parsed = detached(e)
            if isinstance(parsed, SchemaError):
                self.rejected += 1
                self.rejects.append(Rejection(index, str(parsed)))
                return
            if isinstance(parsed, AdminCommand):
                self._admin(parsed)
            elif not self._status(index, parsed):
                return
        else:
            return
        self._decide()

    def apply_status(self, index: int, record: StatusRecord) -> None:
        """A status record the schema has already accepted, as ``apply`` of its entry would apply it
        (the pipeline's replay: its lines were checked when they were read)."""
        self.index = index
        if self._status(index, record):
            self._decide()

    def current_leases(self) -> tuple[scoring.Lease, ...]:
        """The Meta LS2 for the state as it stands."""
        return scoring.meta_ls(self.latest, self.now, self.excluded)

    def check(self, entry: LogEntry) -> str | None:
        """Why a leader must not append ``entry`` (see :func:`schema.admission_error`), or None."""
        value = entry.value
        if isinstance(value, Application):
            error, outcome = check_entry(value.data, self.cluster)
            if error is None:
                # a leader applies what it admitted once committed: parsed once, kept until then
                kept = self._checked.get(value.data)
                if kept is not None:
                    kept[1] += 1
                else:
                    if len(self._checked) >= MAX_CHECKED_KEPT:
                        del self._checked[next(iter(self._checked))]
                    self._checked[value.data] = [outcome, 1]
            return error
        return None

    def _status(self, index: int, record: StatusRecord) -> bool:
        if record.log is not None:
            self._check_log(record)
        previous = self.latest.get(record.id)
        # A repeat (or an older report) is applied once only, unless the one held is dated past the
        # farm's time: a wrong clock or a forgery must not lock the member's real reports out.
        if previous is not None and record.date <= previous.date and not scoring.ahead(previous, self.now):
            self.duplicates += 1
            return False
        self.latest[record.id] = record
        self.now = scoring.farm_time(self.latest, self.members, self.now)
        for callback in self.on_record:
            callback(index, record)
        return True

    def _check_log(self, record: StatusRecord) -> None:
        assert record.log is not None
        if record.id not in self.members or self.digest.at(record.log.index) is None:
            return  # no member's (what is kept stays bounded), too old, or no chain here: no verdict
        self.log_checks += 1
        divergence = self.digest.compare(record.id, record.log)
        if divergence is None:
            self.divergent.pop(record.id, None)
        elif self.divergent.get(record.id) != divergence:
            self.divergent[record.id] = divergence
            for callback in self.on_divergence:
                callback(divergence)

    def _admin(self, command: AdminCommand) -> None:
        if command.action == "exclude":
            self.excluded.add(command.destination)
        else:
            self.excluded.discard(command.destination)

    def _decide(self) -> None:
        publisher = scoring.choose_publisher(self.latest, self.now, self.members, self.publisher)
        leases = self.current_leases() if self.track_leases else ()
        if (publisher, leases) != (self.publisher, self.leases):
            self.publisher, self.leases = publisher, leases
            for callback in self.on_change:
                callback(publisher, leases)

    # ------------------------------------------------------------------------------------------ views

    def status(self) -> dict[str, Any]:
        mark = self.digest.mark()
        return {
            "publisher": self.publisher,
            "meta_ls": [{"destination": lease.destination, "weight": lease.weight} for lease in self.leases],
            "log_digest": None if mark is None else {"index": mark.index, "digest": mark.digest},
            "log_checks": self.log_checks,
            "log_divergence": [self.divergent[k].describe() for k in sorted(self.divergent)],
        }

    # ------------------------------------------------------------------------------------------ snapshots

    def snapshot(self) -> bytes:
        state = {
            "version": 1,
            "cluster": self.cluster,
            "index": self.index,
            "now": self.now,
            "members": sorted(self.members),
            "latest": [record_to_json(self.latest[k]) for k in sorted(self.latest)],
            "excluded": sorted(self.excluded),
            "publisher": self.publisher,
            "rejected": self.rejected,
            "duplicates": self.duplicates,
            "rejects": [[r.index, r.reason] for r in self.rejects],
            # the log's digest at ``index``: a member restored from this snapshot continues the chain
            "digest": None if self.digest.value is None else self.digest.value.hex(),
        }
        return json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    def check_snapshot(self, data: bytes) -> str | None:
        """Why ``data`` is not a restorable snapshot of this farm's state, or None (a trial restore
        into a scratch state: a forged snapshot must be refused before it replaces anything)."""
        try:
            FarmState(self.cluster).restore(data)
        except Exception as e:
            return f"not a snapshot of this farm's application state ({type(e).__name__}: {e})"[:300]
        return None

    def restore(self, data: bytes) -> None:
        state = json.loads(data)
        if state.get("version") != 1 or state.get("cluster") != self.cluster:
            raise ValueError("not a snapshot of this farm's application state")
        self.index = state["index"]
        self.now = state["now"]
        self.members = frozenset(state["members"])
        self.latest = {r["id"]: record_from_json(r) for r in state["latest"]}
        self.excluded = set(state["excluded"])
        self.publisher = state["publisher"]
        self.leases = self.current_leases() if self.track_leases else ()
        self.rejected = state["rejected"]
        self.duplicates = state["duplicates"]
        self.rejects = deque((Rejection(i, why) for i, why in state["rejects"]), maxlen=MAX_REJECTS_KEPT)
        digest = state.get("digest")  # snapshots made before the check have none: the chain is unknown
        chain = None if digest is None else bytes.fromhex(digest)
        if chain is not None and len(chain) != 32:
            raise ValueError("digest: not a SHA-256")
        self.digest.reset(self.index, chain)
        self.divergent.clear()
        for callback in self.on_change:
            callback(self.publisher, self.leases)
