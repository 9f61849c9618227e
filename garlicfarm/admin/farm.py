"""One farm as the console sees it: the overview it shows and the actions it offers, over a running
:class:`~garlicfarm.service.GarlicFarmService`.

Membership changes and exclusions go through Raft on the leader. On a follower they are forwarded to
the leader over the peer link (as the node's own status reports are), so an operator may use any
node's console; the answer says which server did the work.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred

from garlicfarm.admin.auth import Credential
from garlicfarm.admin.config import AdminConfig
from garlicfarm.admin.history import LEVELS, HealthHistory
from garlicfarm.app.members import dated_ahead, health
from garlicfarm.app.state import FarmState
from garlicfarm.net.client import FarmClient
from garlicfarm.raft.driver import ChangeRefused, CommitTimeout, NodeStopped, NotLeader
from garlicfarm.wire import NO_LEADER, AddServerRequest, ClusterServer, LogEntry, RemoveServerRequest

if TYPE_CHECKING:
    from garlicfarm.service import GarlicFarmService

EXPORT_FORMAT = "garlicfarm-config/1"


class ActionError(Exception):
    """An action the farm cannot do now: an HTTP status, a one-line message, and details for the JSON."""

    def __init__(self, status: int, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.details = details


class FarmHandle:
    def __init__(self, node: GarlicFarmService, admin: AdminConfig, admin_url: str | None) -> None:
        self.node = node
        self.admin = admin
        self.cluster = node.config.cluster
        self.admin_url = admin_url
        self.credential = Credential(self.cluster, admin.username, admin.password())
        self.history = HealthHistory(admin.samples_kept)

    # ------------------------------------------------------------------------------------------ views

    def summary(self) -> dict[str, Any]:
        core = self.node.driver.core
        return {
            "cluster": self.cluster,
            "node": core.id,
            "role": core.role.value,
            "leader": core.leader_id,
            "publisher": self.node.state.publisher,
            "members": len(core.config.servers),
            "admin_url": self.admin_url,
        }

    def overview(self, now: float) -> dict[str, Any]:
        """Everything the page shows, from this node's point of view (``now``: its wall clock, seconds,
        for the page's time axis only: members' ages are judged on the farm's time)."""
        node = self.node
        raft = node.driver.status()
        core = node.driver.core
        state = node.state
        leading = core.is_leader()
        connected = node.peers.connected()
        interval = node.app_config.interval
        # ages on the farm's time and this node's monotonic clock, never its wall clock (app.liveness)
        local = node.monotonic()
        node.liveness.observe(state.now, local)
        skew, clock_warning = node.clock_skew()
        members = []
        for server in core.config.servers:
            record = state.latest.get(server.id)
            progress = raft["progress"].get(str(server.id))
            if server.id == core.id:
                match: int | None = raft["last_log_index"] if leading else None
            else:
                match = progress["match"] if progress else None
            lag = max(0, raft["commit_index"] - match) if leading and match is not None else None
            age = node.liveness.age_s(server.id, None if record is None else record.date, local)
            member: dict[str, Any] = {
                "id": server.id,
                "endpoint": server.endpoint,
                "role": "leader" if server.id == core.leader_id else "follower",
                "self": server.id == core.id,
                "connected": True if server.id == core.id else connected.get(server.id, False),
                "match_index": match,
                "next_index": progress["next"] if progress else None,
                "lag": lag,
                "last_status": None if record is None else record.date,
                "last_status_age": age,
                # dated too far past the farm's time to be believed (that member's clock is ahead)
                "ahead": dated_ahead(record, state.now),
                "publisher": server.id == state.publisher,
                "router": None,
                "destinations": [],
            }
            if record is not None:
                member["router"] = {
                    "netStatus": record.router.netStatus,
                    "uptime": record.router.uptime,
                    "jobLag": record.router.jobLag,
                    "exploratoryTunnels": record.router.exploratoryTunnels,
                    "participatingTunnels": record.router.participatingTunnels,
                    "bandwidthConfigured": record.router.bandwidthConfigured,
                    "bandwidthCurrent": record.router.bandwidthCurrent,
                    "publishConfig": record.meta.publishConfig,
                    "publishing": record.meta.publishing,
                }
                member["destinations"] = [
                    {
                        "destination": d.destination,
                        "tunnelsCurrent": d.tunnelsCurrent,
                        "tunnelsConfigured": d.tunnelsConfigured,
                        "bandwidthCurrent": d.bandwidthCurrent,
                        "connectionsCurrent": d.connectionsCurrent,
                        "excluded": d.destination in state.excluded,
                    }
                    for d in record.destinations
                ]
            member["health"] = _health(member, interval)
            members.append(member)
        return {
            "cluster": self.cluster,
            "node": {
                "id": core.id,
                "role": core.role.value,
                "term": raft["term"],
                "commit_index": raft["commit_index"],
                "last_log_index": raft["last_log_index"],
                "applied_index": raft["applied_index"],
                "removed": raft["removed"],
                "admin_url": self.admin_url,
                "clock_skew_s": skew,
                "clock_warning": clock_warning,
            },
            "term": raft["term"],
            "leader": core.leader_id,
            "joining": raft["joining"],
            "publisher": state.publisher,
            "publishing_here": node.app.role.active,
            "signed_metals": node.app.metals_status(),
            "meta_ls": [{"destination": lease.destination, "weight": lease.weight} for lease in state.leases],
            "excluded": sorted(state.excluded),
            "report_interval": interval,
            "members": members,
            "rejected_entries": state.rejected,
            "alarms": _alarms(raft, state),
            "time": now,
        }

    def sample(self, now: float) -> None:
        self.history.record(now, self.overview(now)["members"])

    def history_json(self) -> dict[str, Any]:
        return {
            "levels": list(LEVELS),
            "interval": self.admin.sample_interval,
            "members": self.history.to_json(),
        }

    def export(self) -> dict[str, Any]:
        """The farm's configuration for bulk deployment: members and settings."""
        config = self.node.config
        app = self.node.app_config
        return {
            "format": EXPORT_FORMAT,
            "cluster": self.cluster,
            "members": [{"id": s.id, "endpoint": s.endpoint} for s in self.node.driver.core.config.servers],
            "excluded": sorted(self.node.state.excluded),
            "settings": {
                "raft": {
                    "tick_ms": round(config.tick_seconds * 1000),
                    "election_ticks": config.raft.election_ticks,
                    "heartbeat_ticks": config.raft.heartbeat_ticks,
                    "snapshot_every": config.snapshot_every,
                },
                "app": {"interval": app.interval, "master": app.master},
            },
        }

    # ------------------------------------------------------------------------------------------ actions

    async def remove_member(self, server_id: int) -> dict[str, Any]:
        if server_id not in self.node.driver.core.config.ids():
            raise ActionError(404, f"server {server_id} is not a member of farm {self.cluster}")
        request = RemoveServerRequest(entries=(LogEntry(0, ClusterServer(server_id)),))
        by = await self._change(
            request, f"remove server {server_id}", lambda: self.node.driver.remove_server(server_id)
        )
        return {"removed": server_id, "by_leader": by}

    async def add_member(self, server_id: int, endpoint: str) -> dict[str, Any]:
        if server_id in self.node.driver.core.config.ids():
            raise ActionError(409, f"server {server_id} is already a member of farm {self.cluster}")
        request = AddServerRequest(entries=(LogEntry(0, ClusterServer(server_id, endpoint)),))
        by = await self._change(
            request, f"add server {server_id}", lambda: self.node.driver.add_server(server_id, endpoint)
        )
        return {"added": server_id, "endpoint": endpoint, "by_leader": by}

    async def publish(self) -> dict[str, Any]:
        role = self.node.app.role
        d: Deferred[None] | None = role.republish()
        if d is None:
            raise ActionError(
                409,
                f"server {self.node.config.id} is not the Meta LS publisher "
                f"(the publisher is {self._name(self.node.state.publisher)}); use its console",
                publisher=self.node.state.publisher,
            )
        await d
        return {"published": len(role.published or ()), "by": self.node.config.id}

    async def step_down(self) -> dict[str, Any]:
        """Hand this node's leadership to another member (a graceful transfer, no election timeout)."""
        core = self.node.driver.core
        if not core.is_leader():
            raise ActionError(
                409,
                f"server {core.id} is not the leader (the leader is {self._name(core.leader_id)}); "
                "use the leader's console",
                leader=core.leader_id,
            )
        new = await self.node.driver.transfer_leadership()
        if new is None:
            raise ActionError(
                503,
                f"server {core.id} still leads: no member could take over (none caught up in time, "
                "or none speaks leadership transfer, e.g. JRaft)",
                leader=core.id,
            )
        return {"stepped_down": core.id, "leader": new}

    async def exclude(self, destination: str, action: str) -> dict[str, Any]:
        command = {
            "cluster": self.cluster,
            "date": int(self.node.reactor.seconds() * 1000),
            "admin": {"action": action, "destination": destination},
        }
        data = json.dumps(command, separators=(",", ":"), ensure_ascii=False).encode()
        try:
            index = await self.node.app.reporter.submit(data)
        except Exception as e:
            raise _as_action_error(e) from None
        return {action + "d": destination, "index": index}

    async def import_config(self, document: dict[str, Any], dry_run: bool) -> dict[str, Any]:
        """Bring the farm to an exported configuration: add missing members, align the exclusions.

        Members absent from the document are reported, never removed (removal is its own, explicit
        action). Settings are node configuration (TOML) and are not changed at run time.
        """
        if document.get("format") != EXPORT_FORMAT:
            raise ActionError(400, f"config.format must be {EXPORT_FORMAT!r}")
        if document.get("cluster") != self.cluster:
            raise ActionError(400, f"config.cluster {document.get('cluster')!r} is not {self.cluster!r}")
        current = {s.id: s.endpoint for s in self.node.driver.core.config.servers}
        wanted = {m["id"]: m["endpoint"] for m in document["members"]}
        moved = sorted(i for i in wanted if i in current and current[i] != wanted[i])
        if moved:
            raise ActionError(400, f"server {moved[0]} has another endpoint in the farm; remove it first")
        excluded = set(self.node.state.excluded)
        plan = {
            "add": [{"id": i, "endpoint": wanted[i]} for i in sorted(set(wanted) - set(current))],
            "exclude": sorted(set(document["excluded"]) - excluded),
            "include": sorted(excluded - set(document["excluded"])),
            "not_in_document": sorted(set(current) - set(wanted)),
        }
        if dry_run:
            return {"dry_run": True, "plan": plan}
        done: list[str] = []
        for member in plan["add"]:
            await self.add_member(member["id"], member["endpoint"])
            done.append(f"added server {member['id']}")
        for destination in plan["exclude"]:
            await self.exclude(destination, "exclude")
            done.append(f"excluded {destination}")
        for destination in plan["include"]:
            await self.exclude(destination, "include")
            done.append(f"included {destination}")
        return {"dry_run": False, "plan": plan, "done": done}

    # ------------------------------------------------------------------------------------------ inside

    async def _change(
        self,
        request: AddServerRequest | RemoveServerRequest,
        what: str,
        here: Callable[[], Deferred[None]],
    ) -> int:
        """Run a membership change on the leader (here, or forwarded); the leader's id."""
        core = self.node.driver.core
        try:
            if core.is_leader():
                await here()
                return core.id
            leader = core.leader_id
            if leader is None:
                raise ActionError(503, f"cannot {what}: the farm has no leader right now; try again")
            response = await self.node.peers.send(leader, request)
        except ActionError:
            raise
        except Exception as e:
            raise _as_action_error(e, what) from None
        if not response.accepted:
            if response.destination in (NO_LEADER, leader):
                cause = await self._leader_cause(leader, request)
                raise ActionError(
                    409, f"cannot {what}: the leader (server {leader}) refused it{cause}", leader=leader
                )
            raise ActionError(503, f"cannot {what}: leadership is changing; try again", leader=leader)
        return leader

    async def _leader_cause(self, leader: int, request: AddServerRequest | RemoveServerRequest) -> str:
        """``: why`` the leader refused a forwarded change, read from its status (see FarmClient)."""
        endpoint = self.node.config.peers.get(leader) or self.node.driver.core.config.endpoint_of(leader)
        if endpoint is None:
            return ""
        client = FarmClient(self.node.reactor, self.node.config, timeout=5.0)
        return await client.change_cause(endpoint, request)

    def _name(self, server: int | None) -> str:
        return "nobody" if server is None else f"server {server}"


def _health(member: dict[str, Any], interval: float) -> str:
    router = member["router"] or {}
    return health(
        member["last_status_age"],
        interval,
        ahead=member["ahead"],
        lag=member["lag"],
        net_status=router.get("netStatus"),
        job_lag=router.get("jobLag", 0),
    )


def _as_action_error(error: Exception, what: str = "commit") -> ActionError:
    if isinstance(error, ActionError):
        return error
    if isinstance(error, NotLeader):
        return ActionError(503, f"cannot {what}: {error}; try again", leader=error.leader_id)
    if isinstance(error, ChangeRefused):
        return ActionError(409, str(error))
    if isinstance(error, CommitTimeout):
        return ActionError(504, f"{what}: {error}")
    if isinstance(error, NodeStopped):
        return ActionError(503, f"{what}: {error}")
    return ActionError(502, f"cannot {what}: {error}")


def _alarms(raft: dict[str, Any], state: FarmState) -> list[str]:
    """What the console shows as alarms: a second leader claimed a term, a member's log differs."""
    conflict = raft.get("leader_conflict")
    alarms = [f"two leaders claimed one term: {conflict}"] if conflict else []
    return alarms + [divergence.describe() for _, divergence in sorted(state.divergent.items())]
