"""The health checks of ``/livez`` and ``/readyz``: pure functions of a :class:`NodeSnapshot`.

``/livez``: the process answers and its reactor turns (the Raft tick ran lately). A failing livez is
worth a restart. ``/readyz``: the node can serve: it runs, knows a leader, has applied what it knows
committed, can write its log, and reaches its router when it has one to ask. The answers look like
Kubernetes' and etcd's: ``[+]name ok`` or ``[-]name failed: reason`` a line, then a verdict.
"""

from __future__ import annotations

import attrs

from garlicfarm.metrics.snapshot import NodeSnapshot

#: committed entries a node may still have to apply and be caught up (a burst being applied)
MAX_APPLY_LAG = 1000
#: the Raft tick may be this late (seconds, and ticks) before the reactor counts as stuck
MIN_STALL_SECONDS = 5.0
STALL_TICKS = 100


@attrs.frozen
class Check:
    name: str
    #: why it failed; None: it passed
    failure: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    def line(self) -> str:
        return f"[+]{self.name} ok" if self.ok else f"[-]{self.name} failed: {self.failure}"


def live_checks(s: NodeSnapshot) -> list[Check]:
    checks = [Check("ping")]
    stall = max(MIN_STALL_SECONDS, STALL_TICKS * s.tick_seconds)
    if s.running and s.tick_age is not None and s.tick_age > stall:
        checks.append(
            Check("reactor", f"the last Raft tick was {s.tick_age:.1f} s ago (more than {stall:g} s)")
        )
    else:
        checks.append(Check("reactor"))
    return checks


def ready_checks(s: NodeSnapshot) -> list[Check]:
    checks = [
        Check("running", _running(s)),
        Check("leader", None if s.leader is not None else "no leader known"),
        Check("caught_up", _caught_up(s)),
        Check("storage", s.storage_error),
    ]
    if s.router_configured:
        checks.append(Check("router", _router(s)))
    return checks


def _running(s: NodeSnapshot) -> str | None:
    if s.stopped is not None:
        return f"the node stopped: {s.stopped}"
    if not s.running:
        return "the node is not running"
    return None


def _caught_up(s: NodeSnapshot) -> str | None:
    if s.replaying:
        return "replaying its log after a restart"
    behind = s.commit_index - s.applied_index
    if behind > MAX_APPLY_LAG:
        return f"{behind} committed entries not applied yet (more than {MAX_APPLY_LAG})"
    return None


def _router(s: NodeSnapshot) -> str | None:
    if s.router_error is not None:
        return f"the router did not answer: {s.router_error}"
    if not s.router_answered:
        return "the router has not answered yet"
    return None


def render(kind: str, checks: list[Check], verbose: bool) -> tuple[int, str]:
    """The HTTP status (200 or 503) and text body for ``kind`` ("livez", "readyz")."""
    healthy = all(c.ok for c in checks)
    if healthy and not verbose:
        return 200, "ok\n"
    shown = checks if verbose else [c for c in checks if not c.ok]
    lines = [c.line() for c in shown]
    lines.append(f"{kind} check {'passed' if healthy else 'failed'}")
    return (200 if healthy else 503), "\n".join(lines) + "\n"
