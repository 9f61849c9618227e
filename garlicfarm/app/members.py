"""Each member as this node sees it: how far its log is behind (leader only), how long ago it last
reported, and one health word. The console's overview and the node's status (``garlicfarm members``)
both use these; the health thresholds live here once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from garlicfarm.app import scoring

if TYPE_CHECKING:
    from garlicfarm.app.schema import StatusRecord
    from garlicfarm.service import GarlicFarmService

#: a member this many commit-index entries behind the leader is "lagging"
LAG_ENTRIES = 50
#: a router job lag above this (ms) is "lagging"
JOB_LAG_MS = 2000
#: no status report for this many report intervals: "stale"; for twice as many: "down"
STALE_INTERVALS = 2.5
#: the status (a header of the handshake's 101, at most 8 KiB with the rest) details this many members;
#: a larger farm's further members are listed without them
MAX_DETAILED = 16


def health(
    age: float | None,
    interval: float,
    *,
    ahead: bool = False,
    lag: int | None = None,
    net_status: str | None = None,
    job_lag: float = 0,
) -> str:
    """ "ok", "lagging", "stale" or "down", from the age of the member's latest status report (s; None:
    never), whether it is dated ahead of the farm's time, its log lag and its router's state."""
    if age is None or age > 2 * STALE_INTERVALS * interval:
        return "down"
    if age > STALE_INTERVALS * interval or ahead:
        return "stale"
    lagging = (lag or 0) > LAG_ENTRIES or job_lag > JOB_LAG_MS
    if lagging or (net_status or "OK") not in ("OK", "UNKNOWN"):
        return "lagging"
    return "ok"


def dated_ahead(record: StatusRecord | None, now: int) -> bool:
    """Whether a member's report is dated too far past the farm's time to be believed. Before a quorum
    has reported the farm has no time yet (0): no report can be judged ahead of it, and every member
    would read as stale however fresh its reports."""
    return record is not None and now > 0 and scoring.ahead(record, now)


def member_details(node: GarlicFarmService, raft: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Member id -> ``match`` (the leader's match index for it; None elsewhere), ``lag`` (entries behind
    the leader's commit index; leader only), ``report_age_s`` (seconds since its latest status report,
    on the farm's time; None: never) and ``health``, for the first :data:`MAX_DETAILED` members of the
    committed configuration. ``raft``: the driver's status."""
    core = node.driver.core
    state = node.state
    leading = core.is_leader()
    local = node.monotonic()
    node.liveness.observe(state.now, local)
    interval = node.app_config.interval
    details: dict[int, dict[str, Any]] = {}
    for server in core.config.servers[:MAX_DETAILED]:
        record = state.latest.get(server.id)
        if server.id == core.id:
            match: int | None = raft["last_log_index"] if leading else None
        else:
            progress = raft["progress"].get(str(server.id))
            match = progress["match"] if progress and leading else None
        lag = max(0, raft["commit_index"] - match) if match is not None else None
        age = node.liveness.age_s(server.id, None if record is None else record.date, local)
        ahead = dated_ahead(record, state.now)
        details[server.id] = {
            "match": match,
            "lag": lag,
            "report_age_s": None if age is None else round(age, 1),
            "health": health(
                age,
                interval,
                ahead=ahead,
                lag=lag,
                net_status=None if record is None else record.router.netStatus,
                job_lag=0 if record is None else record.router.jobLag,
            ),
        }
    return details
