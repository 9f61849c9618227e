"""The console's view of one farm (FarmHandle) as its user sees it: the overview's fields for this node
and for each member (health at its bounds), the alarms, the summary, history and export, and each
action's answer and errors word for word: on the leader, forwarded from a follower (the leader's
refusal with its cause), and the configuration import's plan and refusals."""

from __future__ import annotations

import json
from collections.abc import Coroutine
from typing import Any, cast

import attrs
import pytest
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.testing import MemoryReactorClock
from twisted.python.failure import Failure

from garlicfarm.admin.farm import ActionError, FarmHandle
from garlicfarm.app.liveness import Liveness
from garlicfarm.app.logcheck import Divergence
from garlicfarm.app.members import JOB_LAG_MS, LAG_ENTRIES
from garlicfarm.app.publishing import NoLeader
from garlicfarm.app.schema import StatusRecord, parse_entry
from garlicfarm.net.client import FarmClient
from garlicfarm.raft.driver import CommitTimeout, NodeStopped, NotLeader
from garlicfarm.service import GarlicFarmService
from garlicfarm.wire import (
    NO_LEADER,
    AddServerRequest,
    AddServerResponse,
    ClusterServer,
    Configuration,
    LogEntry,
    Message,
    RemoveServerRequest,
    RemoveServerResponse,
    Request,
    Response,
    decode,
    encode,
)
from tests.admin.nodes import handle
from tests.admin.test_liveness import three_members
from tests.app.records import HOUR, record

ENDPOINT_2 = "tcp://127.0.0.1:9002"  # where three_members puts server 2
ENDPOINT_4 = "tcp://127.0.0.1:9004"


@pytest.fixture
def farm(node: GarlicFarmService) -> FarmHandle:
    return handle(node)


# ------------------------------------------------------------------------------------------ helpers


def outcome(clock: MemoryReactorClock, action: Coroutine[Any, Any, Any]) -> Any:
    """Run an action to its end, turning the node's clock (its log entries commit a few ticks on)."""
    box: list[Any] = []
    Deferred.fromCoroutine(action).addBoth(box.append)
    for _ in range(1000):
        if box:
            break
        clock.advance(0.05)
    assert box, "the action never ended"
    if isinstance(box[0], Failure):
        box[0].raiseException()
    return box[0]


def refusal(clock: MemoryReactorClock, action: Coroutine[Any, Any, Any]) -> tuple[int, str, dict[str, Any]]:
    """The action's ActionError as the console answers it: HTTP status, message, JSON details."""
    with pytest.raises(ActionError) as caught:
        outcome(clock, action)
    return caught.value.status, str(caught.value), caught.value.details


def report(node: GarlicFarmService, member: int, date: int, **changes: Any) -> None:
    """Apply a status report of ``member`` dated ``date`` (``changes``: its sections' fields)."""
    raw = record(member, date)
    for section, fields in changes.items():
        if isinstance(raw[section], dict):
            raw[section].update(fields)
        else:
            raw[section] = fields
    parsed = parse_entry(json.dumps(raw).encode(), "farm")
    assert isinstance(parsed, StatusRecord)
    node.state.apply_status(node.state.index + 1, parsed)


def raft_status(node: GarlicFarmService, monkeypatch: pytest.MonkeyPatch, **progress: dict[str, Any]) -> None:
    """The driver's status with the leader's replication ``progress`` of the given members."""
    real = node.driver.status

    def status() -> dict[str, Any]:
        return {**real(), "progress": {key.lstrip("_"): value for key, value in progress.items()}}

    monkeypatch.setattr(node.driver, "status", status)


def follow(node: GarlicFarmService, leader: int | None) -> None:
    """This node learns of a newer term led by ``leader`` (None: nobody yet)."""
    node.driver.core._become_follower(node.driver.core.term + 1, leader)


class LeaderLink:
    """The peer link to the leader: what crossed it (encoded and decoded, as on the wire), and the
    leader's answer (accepted, or refused naming ``destination``), or a failure to reach it."""

    def __init__(self, accepted: bool = True, destination: int | None = None, error: Exception | None = None):
        self.accepted = accepted
        self.destination = destination
        self.error = error
        self.sent: list[tuple[int, Message]] = []

    def send(self, to: int, request: Request, endpoint: str | None = None) -> Deferred[Response]:
        self.sent.append((to, decode(encode(request))))
        if self.error is not None:
            return fail(self.error)
        answer = AddServerResponse if isinstance(request, AddServerRequest) else RemoveServerResponse
        named = to if self.destination is None else self.destination
        return succeed(answer(source=to, destination=named, term=2, accepted=self.accepted))

    def servers(self) -> list[tuple[int, type[Message], ClusterServer]]:
        """Who got each request, its kind, and the server it names (what the leader acts on)."""
        out: list[tuple[int, type[Message], ClusterServer]] = []
        for to, message in self.sent:
            assert isinstance(message, AddServerRequest | RemoveServerRequest)
            [entry] = message.entries
            assert isinstance(entry.value, ClusterServer)
            out.append((to, type(message), entry.value))
        return out


@pytest.fixture
def link(node: GarlicFarmService, monkeypatch: pytest.MonkeyPatch) -> LeaderLink:
    leader = LeaderLink()
    monkeypatch.setattr(node.peers, "send", leader.send)
    return leader


@pytest.fixture
def leader_status(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any, str | None]]:
    """The leader's status as the console reads it (FarmClient.status): the last change it refused
    was adding server 4, for a reason; records which reactor, access and endpoint were used."""
    asked: list[tuple[Any, Any, str | None]] = []

    async def status(self: FarmClient, uri: str | None = None) -> dict[str, Any]:
        asked.append((self.reactor, self.config, uri))
        return {"change_refused": {"server": 4, "why": "server 4 is still catching up"}}

    monkeypatch.setattr(FarmClient, "status", status)
    return asked


class Changes:
    """The leader's own driver doing membership changes: what it was asked, how it answers."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.asked: list[tuple[str, int, str | None]] = []

    def add_server(self, server_id: int, endpoint: str) -> Deferred[None]:
        self.asked.append(("add", server_id, endpoint))
        return succeed(None) if self.error is None else fail(self.error)

    def remove_server(self, server_id: int) -> Deferred[None]:
        self.asked.append(("remove", server_id, None))
        return succeed(None) if self.error is None else fail(self.error)


def changes(
    node: GarlicFarmService, monkeypatch: pytest.MonkeyPatch, error: Exception | None = None
) -> Changes:
    driver = Changes(error)
    monkeypatch.setattr(node.driver, "add_server", driver.add_server)
    monkeypatch.setattr(node.driver, "remove_server", driver.remove_server)
    return driver


# ------------------------------------------------------------------------------------------ overview


def test_the_overview_shows_this_node_and_the_farm(
    farm: FarmHandle, node: GarlicFarmService, monkeypatch: pytest.MonkeyPatch
) -> None:
    node.state.rejected = 3  # entries the state refused, as counted
    view = farm.overview(1234.5)
    raft = node.driver.status()
    assert view["node"] == {
        "id": 1,
        "role": "leader",
        "term": raft["term"],
        "commit_index": raft["commit_index"],
        "last_log_index": raft["last_log_index"],
        "applied_index": raft["applied_index"],
        "removed": False,
        "admin_url": "http://127.0.0.1:9001/",
        "clock_skew_s": 0.0,
        "clock_warning": None,
    }
    assert {k: v for k, v in view.items() if k not in ("node", "members")} == {
        "cluster": "farm",
        "term": raft["term"],
        "leader": 1,
        "joining": None,
        "publisher": 1,
        "publishing_here": True,
        "signed_metals": None,
        "meta_ls": [{"destination": "farm-leaf-1", "weight": 8}, {"destination": "farm-leaf-2", "weight": 8}],
        "excluded": [],
        "report_interval": 5.0,
        "rejected_entries": 3,
        "alarms": [],
        "time": 1234.5,
    }
    node.app.role.active = False
    monkeypatch.setattr(node.driver, "status", lambda: {**raft, "joining": 4, "removed": True})
    view = farm.overview(0)
    assert (view["publishing_here"], view["joining"], view["node"]["removed"]) == (False, 4, True)


def test_each_member_as_the_leader_sees_it(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome(clock, farm.exclude("dest2b", "exclude"))  # while this node alone makes a quorum
    three_members(node, monkeypatch)
    now_ms = int(clock.seconds() * 1000)
    report(
        node,
        2,
        now_ms,
        router={"uptime": 5 * HOUR, "jobLag": 17, "exploratoryTunnels": 6, "participatingTunnels": 90},
        meta={"publishConfig": "on", "publishing": True},
        destinations=[
            {"destination": "dest2a", "tunnelsConfigured": 4, "tunnelsCurrent": 3, "bandwidthCurrent": 7,
             "connectionsCurrent": 12},
            {"destination": "dest2b", "tunnelsConfigured": 2, "tunnelsCurrent": 1},
        ],
    )  # fmt: skip
    commit = node.driver.status()["commit_index"]
    raft_status(node, monkeypatch, _2={"match": commit - 3, "next": commit - 2, "state": "replicate"})
    monkeypatch.setattr(node.peers, "connected", lambda: {2: True})
    one, two, three = farm.overview(clock.seconds())["members"]
    assert one["role"] == "leader" and one["self"] and one["connected"] and not one["publisher"]
    assert (one["match_index"], one["next_index"], one["lag"]) == (
        node.driver.status()["last_log_index"],
        None,
        0,
    )
    assert two == {
        "id": 2,
        "endpoint": ENDPOINT_2,
        "role": "follower",
        "self": False,
        "connected": True,
        "match_index": commit - 3,
        "next_index": commit - 2,
        "lag": 3,
        "last_status": now_ms,
        "last_status_age": pytest.approx(two["last_status_age"]),
        "ahead": False,
        "publisher": True,  # "on" wins it over server 1's "auto"
        "router": {
            "netStatus": "OK",
            "uptime": 5 * HOUR,
            "jobLag": 17,
            "exploratoryTunnels": 6,
            "participatingTunnels": 90,
            "bandwidthConfigured": 1024 * 1024,
            "bandwidthCurrent": 100 * 1024,
            "publishConfig": "on",
            "publishing": True,
        },
        "destinations": [
            {"destination": "dest2a", "tunnelsCurrent": 3, "tunnelsConfigured": 4, "bandwidthCurrent": 7,
             "connectionsCurrent": 12, "excluded": False},
            {"destination": "dest2b", "tunnelsCurrent": 1, "tunnelsConfigured": 2, "bandwidthCurrent": 0,
             "connectionsCurrent": 0, "excluded": True},
        ],
        "health": "ok",
    }  # fmt: skip
    assert 0 <= two["last_status_age"] < 5
    # never reported, nothing known of its replication, no connection to it
    assert three == {
        "id": 3,
        "endpoint": "tcp://127.0.0.1:9003",
        "role": "follower",
        "self": False,
        "connected": False,
        "match_index": None,
        "next_index": None,
        "lag": None,
        "last_status": None,
        "last_status_age": None,
        "ahead": False,
        "publisher": False,
        "router": None,
        "destinations": [],
        "health": "down",
    }


def test_a_followers_overview_has_no_replication_figures_and_names_the_leader(
    farm: FarmHandle, node: GarlicFarmService, monkeypatch: pytest.MonkeyPatch
) -> None:
    three_members(node, monkeypatch)
    follow(node, 2)
    raft_status(node, monkeypatch, _2={"match": 1, "next": 2, "state": "probe"})
    view = farm.overview(0)
    assert view["node"]["role"] == "follower" and view["leader"] == 2
    figures = [(m["id"], m["role"], m["match_index"], m["lag"]) for m in view["members"]]
    assert figures == [(1, "follower", None, None), (2, "leader", 1, None), (3, "follower", None, None)]
    assert view["members"][0]["connected"] is True  # itself


@pytest.mark.parametrize(("behind", "health"), [(LAG_ENTRIES, "ok"), (LAG_ENTRIES + 1, "lagging")])
def test_a_member_is_lagging_one_entry_past_the_bound(
    farm: FarmHandle,
    node: GarlicFarmService,
    clock: MemoryReactorClock,
    monkeypatch: pytest.MonkeyPatch,
    behind: int,
    health: str,
) -> None:
    three_members(node, monkeypatch)
    report(node, 2, int(clock.seconds() * 1000))
    commit = node.driver.status()["commit_index"]
    raft_status(node, monkeypatch, _2={"match": commit - behind, "next": commit, "state": "replicate"})
    two = farm.overview(0)["members"][1]
    assert (two["lag"], two["health"]) == (behind, health)


@pytest.mark.parametrize(
    ("router", "health"),
    [
        ({"jobLag": JOB_LAG_MS}, "ok"),
        ({"jobLag": JOB_LAG_MS + 1}, "lagging"),
        ({"netStatus": "UNKNOWN"}, "ok"),
        ({"netStatus": "ERROR_I2CP"}, "lagging"),
        ({"netStatus": "FIREWALLED"}, "lagging"),
    ],
)
def test_a_members_router_makes_it_lagging(
    farm: FarmHandle,
    node: GarlicFarmService,
    clock: MemoryReactorClock,
    monkeypatch: pytest.MonkeyPatch,
    router: dict[str, Any],
    health: str,
) -> None:
    three_members(node, monkeypatch)
    report(node, 2, int(clock.seconds() * 1000), router=router)
    assert farm.overview(0)["members"][1]["health"] == health


def test_members_age_from_the_farms_time_when_a_membership_change_moved_it(
    farm: FarmHandle, node: GarlicFarmService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The farm's time is the date a quorum reached: removing two silent members of five moves it on
    at once, with no report; the members' ages follow it then, not when this node heard them."""
    five = tuple(ClusterServer(i, f"tcp://127.0.0.1:{9000 + i}") for i in range(1, 6))
    node.state.apply(node.state.index + 1, LogEntry(1, Configuration(node.state.index + 1, 0, five)))
    for member, date in ((1, 100_000), (2, 110_000), (3, 120_000)):  # all heard at this moment
        report(node, member, date)
    assert node.state.now == 100_000  # the third date of five
    three_members(node, monkeypatch)  # servers 4 and 5 leave
    assert node.state.now == 110_000  # the second of three
    ages = [m["last_status_age"] for m in farm.overview(0)["members"]]
    assert ages == [pytest.approx(10), 0, 0]


def test_before_the_farm_has_a_time_members_age_from_when_this_node_heard_them(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    three_members(node, monkeypatch)
    report(node, 2, 1000)
    report(node, 3, 1000)
    # a node that restarted: no quorum has reported since, so the farm's time is not known yet
    monkeypatch.setattr(node.state, "now", 0)
    liveness = Liveness(1)
    monkeypatch.setattr(node, "liveness", liveness)
    liveness.heard(2, 1000, 0, clock.seconds())
    clock.advance(4)
    liveness.heard(3, 1000, 0, clock.seconds())
    clock.advance(1)
    ages = [m["last_status_age"] for m in farm.overview(0)["members"][1:]]
    assert ages == [pytest.approx(5), pytest.approx(1)]


def test_alarms_name_two_leaders_in_one_term_then_divergent_logs(
    farm: FarmHandle, node: GarlicFarmService, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert farm.overview(0)["alarms"] == []
    conflict = "server 2 sent AppendEntriesRequest as leader of term 1, which server 1 leads: refused"
    monkeypatch.setattr(node.driver.core, "leader_conflict", conflict)
    divergence = Divergence(3, 9, "a" * 64, "b" * 64)
    node.state.divergent[3] = divergence
    assert farm.overview(0)["alarms"] == [f"two leaders claimed one term: {conflict}", divergence.describe()]
    monkeypatch.setattr(node.driver.core, "leader_conflict", "")
    assert farm.overview(0)["alarms"] == [divergence.describe()]


# ------------------------------------------------------------------------------------------ other views


def test_the_summary_names_the_farm_and_its_roles(farm: FarmHandle, monkeypatch: pytest.MonkeyPatch) -> None:
    assert farm.summary() == {
        "cluster": "farm",
        "node": 1,
        "role": "leader",
        "leader": 1,
        "publisher": 1,
        "members": 1,
        "admin_url": "http://127.0.0.1:9001/",
    }
    three_members(farm.node, monkeypatch)
    assert farm.summary()["members"] == 3


def test_history_keeps_an_hour_of_samples(
    node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    farm = handle(node)
    farm = FarmHandle(node, attrs.evolve(farm.admin, sample_interval=600.0), farm.admin_url)
    assert farm.admin.samples_kept == 6  # an hour at one sample per 10 minutes
    for i in range(7):
        farm.sample(100.0 + i)
    history = farm.history_json()
    assert history["interval"] == 600.0
    assert [sample[0] for sample in history["members"]["1"]] == [101.0, 102.0, 103.0, 104.0, 105.0, 106.0]


def test_the_export_carries_members_exclusions_and_settings(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome(clock, farm.exclude("farm-leaf-2", "exclude"))
    outcome(clock, farm.exclude("farm-leaf-1", "exclude"))
    assert farm.export() == {
        "format": "garlicfarm-config/1",
        "cluster": "farm",
        "members": [{"id": 1, "endpoint": "tcp://127.0.0.1:9001"}],
        "excluded": ["farm-leaf-1", "farm-leaf-2"],
        "settings": {
            "raft": {"tick_ms": 10, "election_ticks": 20, "heartbeat_ticks": 10, "snapshot_every": 5000},
            "app": {"interval": 5.0, "master": "farm-master"},
        },
    }
    # [raft] tick_ms at its bounds (1 and 60,000 ms) is exported as configured
    for tick_ms in (1, 60_000):
        monkeypatch.setattr(node, "config", attrs.evolve(node.config, tick_seconds=tick_ms / 1000))
        assert farm.export()["settings"]["raft"]["tick_ms"] == tick_ms


# ------------------------------------------------------------------------------------------ membership


def test_add_and_remove_on_the_leader_are_done_by_its_driver(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    three_members(node, monkeypatch)
    driver = changes(node, monkeypatch)
    assert outcome(clock, farm.add_member(4, ENDPOINT_4)) == {
        "added": 4,
        "endpoint": ENDPOINT_4,
        "by_leader": 1,
    }
    assert outcome(clock, farm.remove_member(3)) == {"removed": 3, "by_leader": 1}
    assert driver.asked == [("add", 4, ENDPOINT_4), ("remove", 3, None)]


def test_add_and_remove_refuse_at_once_what_the_configuration_rules_out(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = changes(node, monkeypatch)
    assert refusal(clock, farm.add_member(1, ENDPOINT_2)) == (
        409,
        "server 1 is already a member of farm farm",
        {},
    )
    assert refusal(clock, farm.remove_member(2)) == (404, "server 2 is not a member of farm farm", {})
    assert driver.asked == []


def test_the_leaders_driver_refusing_a_change_is_a_conflict_in_its_words(
    farm: FarmHandle, clock: MemoryReactorClock
) -> None:
    assert refusal(clock, farm.remove_member(1)) == (
        409,
        "cannot remove server 1: server 1 is the farm's only member",
        {},
    )


def test_leadership_lost_during_a_change_says_who_leads(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    changes(node, monkeypatch, NotLeader(2, ENDPOINT_2))
    assert refusal(clock, farm.add_member(4, ENDPOINT_4)) == (
        503,
        f"cannot add server 4: not the leader; the leader is server 2 at {ENDPOINT_2}; try again",
        {"leader": 2},
    )


def test_a_follower_forwards_the_change_to_the_leader(
    farm: FarmHandle,
    node: GarlicFarmService,
    clock: MemoryReactorClock,
    monkeypatch: pytest.MonkeyPatch,
    link: LeaderLink,
) -> None:
    three_members(node, monkeypatch)
    driver = changes(node, monkeypatch)
    follow(node, 2)
    assert outcome(clock, farm.add_member(4, ENDPOINT_4)) == {
        "added": 4,
        "endpoint": ENDPOINT_4,
        "by_leader": 2,
    }
    assert outcome(clock, farm.remove_member(3)) == {"removed": 3, "by_leader": 2}
    assert link.servers() == [
        (2, AddServerRequest, ClusterServer(4, ENDPOINT_4)),
        (2, RemoveServerRequest, ClusterServer(3)),
    ]
    assert driver.asked == []  # the leader's work, not this node's


def test_without_a_leader_a_change_is_to_be_tried_again(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, link: LeaderLink
) -> None:
    follow(node, None)
    assert refusal(clock, farm.add_member(4, ENDPOINT_4)) == (
        503,
        "cannot add server 4: the farm has no leader right now; try again",
        {},
    )
    assert link.sent == []


def test_a_leader_that_cannot_be_reached_is_a_bad_gateway(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, link: LeaderLink
) -> None:
    follow(node, 2)
    link.error = ConnectionRefusedError("no connection to server 2")
    assert refusal(clock, farm.add_member(4, ENDPOINT_4)) == (
        502,
        "cannot add server 4: no connection to server 2",
        {},
    )


def assert_refused_with_server_2s_cause(
    farm: FarmHandle,
    node: GarlicFarmService,
    clock: MemoryReactorClock,
    leader_status: list[tuple[Any, Any, str | None]],
) -> None:
    """Adding server 4 is refused by server 2 with the cause read from its status at its endpoint."""
    assert refusal(clock, farm.add_member(4, ENDPOINT_4)) == (
        409,
        "cannot add server 4: the leader (server 2) refused it: server 4 is still catching up",
        {"leader": 2},
    )
    assert leader_status == [(node.reactor, node.config, ENDPOINT_2)]


def test_the_leaders_refusal_carries_its_cause_from_its_status(
    farm: FarmHandle,
    node: GarlicFarmService,
    clock: MemoryReactorClock,
    monkeypatch: pytest.MonkeyPatch,
    link: LeaderLink,
    leader_status: list[tuple[Any, Any, str | None]],
) -> None:
    # server 2 is known from this node's [peers] only (the configuration this node holds is older)
    monkeypatch.setitem(cast(dict[int, str], node.config.peers), 2, ENDPOINT_2)
    follow(node, 2)
    link.accepted = False
    assert_refused_with_server_2s_cause(farm, node, clock, leader_status)


def test_a_refusal_naming_no_leader_reads_the_cause_at_the_configured_endpoint(
    farm: FarmHandle,
    node: GarlicFarmService,
    clock: MemoryReactorClock,
    monkeypatch: pytest.MonkeyPatch,
    link: LeaderLink,
    leader_status: list[tuple[Any, Any, str | None]],
) -> None:
    three_members(node, monkeypatch)  # server 2 is known from the configuration only
    follow(node, 2)
    link.accepted, link.destination = False, NO_LEADER
    assert_refused_with_server_2s_cause(farm, node, clock, leader_status)


def test_a_refusal_by_a_leader_nobody_can_reach_has_no_cause(
    farm: FarmHandle,
    node: GarlicFarmService,
    clock: MemoryReactorClock,
    link: LeaderLink,
    leader_status: list[tuple[Any, Any, str | None]],
) -> None:
    follow(node, 7)  # in neither this node's [peers] nor its configuration
    link.accepted = False
    assert refusal(clock, farm.add_member(4, ENDPOINT_4)) == (
        409,
        "cannot add server 4: the leader (server 7) refused it",
        {"leader": 7},
    )
    assert leader_status == []


def test_a_refusal_naming_another_leader_means_leadership_is_changing(
    farm: FarmHandle,
    node: GarlicFarmService,
    clock: MemoryReactorClock,
    monkeypatch: pytest.MonkeyPatch,
    link: LeaderLink,
) -> None:
    three_members(node, monkeypatch)
    follow(node, 2)
    link.accepted, link.destination = False, 3
    assert refusal(clock, farm.add_member(4, ENDPOINT_4)) == (
        503,
        "cannot add server 4: leadership is changing; try again",
        {"leader": 2},
    )
    assert refusal(clock, farm.remove_member(3)) == (
        503,
        "cannot remove server 3: leadership is changing; try again",
        {"leader": 2},
    )


# ------------------------------------------------------------------------------------------ other actions


def test_exclude_and_include_commit_an_admin_command_dated_by_this_node(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    submitted: list[Any] = []
    real = node.app.reporter.submit

    async def submit(data: bytes) -> int:
        submitted.append(json.loads(data))
        return await real(data)

    monkeypatch.setattr(node.app.reporter, "submit", submit)
    now_ms = int(clock.seconds() * 1000)
    excluded = outcome(clock, farm.exclude("farm-leaf-1", "exclude"))
    assert excluded == {"excluded": "farm-leaf-1", "index": node.state.index}
    assert node.state.excluded == {"farm-leaf-1"}
    assert submitted == [
        {"cluster": "farm", "date": now_ms, "admin": {"action": "exclude", "destination": "farm-leaf-1"}}
    ]
    included = outcome(clock, farm.exclude("farm-leaf-1", "include"))
    assert included == {"included": "farm-leaf-1", "index": node.state.index}
    assert node.state.excluded == set()


@pytest.mark.parametrize(
    ("error", "answer"),
    [
        (
            CommitTimeout("no commit decision within 10s; it may still commit"),
            (504, "commit: no commit decision within 10s; it may still commit", {}),
        ),
        (NodeStopped("the node is not running"), (503, "commit: the node is not running", {})),
        (
            NotLeader(None),
            (503, "cannot commit: not the leader, and no leader is known; try again", {"leader": None}),
        ),
        (NoLeader("no leader known"), (502, "cannot commit: no leader known", {})),
    ],
)
def test_an_exclusion_that_does_not_commit_says_why(
    farm: FarmHandle,
    node: GarlicFarmService,
    clock: MemoryReactorClock,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    answer: tuple[int, str, dict[str, Any]],
) -> None:
    async def submit(data: bytes) -> int:
        raise error

    monkeypatch.setattr(node.app.reporter, "submit", submit)
    assert refusal(clock, farm.exclude("farm-leaf-1", "exclude")) == answer


def test_step_down_names_the_new_leader(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(node.driver, "transfer_leadership", lambda: succeed(2))
    assert outcome(clock, farm.step_down()) == {"stepped_down": 1, "leader": 2}


def test_step_down_that_nobody_takes_over_says_why(farm: FarmHandle, clock: MemoryReactorClock) -> None:
    assert refusal(clock, farm.step_down()) == (
        503,
        "server 1 still leads: no member could take over (none caught up in time, "
        "or none speaks leadership transfer, e.g. JRaft)",
        {"leader": 1},
    )


def test_step_down_without_a_leader_says_nobody_leads(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock
) -> None:
    follow(node, None)
    assert refusal(clock, farm.step_down()) == (
        409,
        "server 1 is not the leader (the leader is nobody); use the leader's console",
        {"leader": None},
    )


@pytest.mark.parametrize(("publisher", "named"), [(2, "server 2"), (None, "nobody")])
def test_publish_elsewhere_names_the_publisher(
    farm: FarmHandle,
    node: GarlicFarmService,
    clock: MemoryReactorClock,
    monkeypatch: pytest.MonkeyPatch,
    publisher: int | None,
    named: str,
) -> None:
    node.app.role.active = False
    monkeypatch.setattr(node.state, "publisher", publisher)
    assert refusal(clock, farm.publish()) == (
        409,
        f"server 1 is not the Meta LS publisher (the publisher is {named}); use its console",
        {"publisher": publisher},
    )


# ------------------------------------------------------------------------------------------ import


def document(farm: FarmHandle, **changes: Any) -> dict[str, Any]:
    return {**farm.export(), **changes}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": "garlicfarm-config/2"}, "config.format must be 'garlicfarm-config/1'"),
        ({"format": None}, "config.format must be 'garlicfarm-config/1'"),
        ({"cluster": "elsewhere"}, "config.cluster 'elsewhere' is not 'farm'"),
    ],
)
def test_import_refuses_another_format_or_farm(
    farm: FarmHandle, clock: MemoryReactorClock, changes: dict[str, Any], message: str
) -> None:
    assert refusal(clock, farm.import_config(document(farm, **changes), dry_run=True)) == (400, message, {})


def test_import_refuses_members_that_moved_naming_the_lowest(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    three_members(node, monkeypatch)
    driver = changes(node, monkeypatch)
    members = [
        {"id": 3, "endpoint": "tcp://127.0.0.1:9013"},
        {"id": 1, "endpoint": "tcp://127.0.0.1:9001"},
        {"id": 2, "endpoint": "tcp://127.0.0.1:9012"},
        {"id": 4, "endpoint": ENDPOINT_4},
    ]
    assert refusal(clock, farm.import_config(document(farm, members=members), dry_run=False)) == (
        400,
        "server 2 has another endpoint in the farm; remove it first",
        {},
    )
    assert driver.asked == []


def test_import_plans_then_adds_members_and_aligns_exclusions(
    farm: FarmHandle, node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = changes(node, monkeypatch)
    outcome(clock, farm.exclude("farm-leaf-1", "exclude"))
    members = [{"id": 5, "endpoint": "tcp://127.0.0.1:9005"}, {"id": 4, "endpoint": ENDPOINT_4}]
    config = document(farm, members=members, excluded=["farm-leaf-3", "farm-leaf-2"])
    plan = {
        "add": [{"id": 4, "endpoint": ENDPOINT_4}, {"id": 5, "endpoint": "tcp://127.0.0.1:9005"}],
        "exclude": ["farm-leaf-2", "farm-leaf-3"],
        "include": ["farm-leaf-1"],
        "not_in_document": [1],  # reported, never removed
    }
    assert outcome(clock, farm.import_config(config, dry_run=True)) == {"dry_run": True, "plan": plan}
    assert driver.asked == [] and node.state.excluded == {"farm-leaf-1"}  # a dry run changes nothing
    assert outcome(clock, farm.import_config(config, dry_run=False)) == {
        "dry_run": False,
        "plan": plan,
        "done": [
            "added server 4",
            "added server 5",
            "excluded farm-leaf-2",
            "excluded farm-leaf-3",
            "included farm-leaf-1",
        ],
    }
    assert driver.asked == [("add", 4, ENDPOINT_4), ("add", 5, "tcp://127.0.0.1:9005")]
    assert node.state.excluded == {"farm-leaf-2", "farm-leaf-3"}
