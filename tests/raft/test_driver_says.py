"""What the driver tells its caller and the operator: who the leader is when a request went to a
follower, and one log line per membership change, snapshot and refused snapshot (mutation testing
found this text unchecked; operators and clients act on it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import pytest
from twisted.logger import ILogObserver, LogLevel, formatEvent, globalLogPublisher

from garlicfarm.raft.driver import ChangeRefused, NotLeader
from garlicfarm.wire import AddServerRequest, ClusterServer, LogEntry, RemoveServerRequest
from tests.raft.farm import Farm, endpoint, outcome


@contextmanager
def driver_lines() -> Iterator[list[tuple[LogLevel, str]]]:
    events: list[dict[str, Any]] = []
    observer = cast(ILogObserver, events.append)
    globalLogPublisher.addObserver(observer)
    lines: list[tuple[LogLevel, str]] = []
    try:
        yield lines
    finally:
        globalLogPublisher.removeObserver(observer)
        lines += [
            (e["log_level"], formatEvent(e))
            for e in events
            if e.get("log_namespace", "").endswith("RaftDriver")
        ]


def test_a_follower_names_the_leader_and_its_endpoint() -> None:
    farm = Farm(3)
    leader = farm.wait_for_leader()
    follower = next(d for d in farm.drivers.values() if d is not leader)
    lid = leader.core.id
    for d in (follower.submit(b"x"), follower.add_server(4, endpoint(4)), follower.remove_server(lid)):
        with pytest.raises(NotLeader) as caught:
            outcome(d)
        assert (caught.value.leader_id, caught.value.endpoint) == (lid, endpoint(lid))
        assert str(caught.value) == f"not the leader; the leader is server {lid} at {endpoint(lid)}"


def test_no_known_leader_is_said_so() -> None:
    error = NotLeader(None)
    assert (error.leader_id, error.endpoint, str(error)) == (
        None,
        None,
        "not the leader, and no leader is known",
    )
    assert str(NotLeader(2)) == "not the leader; the leader is server 2"


def test_membership_changes_are_logged_when_asked_and_when_decided() -> None:
    farm = Farm(3, spares=1)
    leader = farm.wait_for_leader()
    with driver_lines() as lines:
        added = leader.add_server(4, endpoint(4))
        farm.run(1.0)
        outcome(added)
        asked = leader.handle_request(RemoveServerRequest(entries=(LogEntry(0, ClusterServer(4)),)))
        farm.run(1.0)
        outcome(asked)
        again = leader.handle_request(
            AddServerRequest(entries=(LogEntry(0, ClusterServer(leader.core.id, "sim://moved")),))
        )
        farm.run(0.5)
        outcome(again)
    said = [text for level, text in lines if level is LogLevel.info]
    assert said.count(f"add server 4 at {endpoint(4)}: asked") == 1
    assert said.count(f"add server 4 at {endpoint(4)}: done") == 1
    assert "remove server 4: asked" in said
    assert "remove server 4: done" in said
    assert f"add server {leader.core.id} at sim://moved: asked" in said
    where = leader.core.config.endpoint_of(leader.core.id)
    assert (
        f"add server {leader.core.id} at sim://moved: refused: server {leader.core.id} is already a member, "
        f"at {where}" in said
    )


def test_snapshots_taken_installed_and_refused_are_logged() -> None:
    farm = Farm(3, spares=1, snapshot_every=10)
    with driver_lines() as lines:
        farm.submit([b"v%d" % k for k in range(30)])
        leader = farm.leader()
        added = leader.add_server(4, endpoint(4))
        farm.run(1.5)
        outcome(added)
    said = [text for _, text in lines]
    taken = [t for t in said if t.startswith("snapshot taken at index ") and t.endswith("; log compacted")]
    assert taken and all(t.split()[4].rstrip(";").isdigit() for t in taken)  # the index, a number
    index = farm.drivers[4].core.log.snapshot_index
    assert f"installing a snapshot up to index {index} from the leader" in said


def test_a_refused_snapshot_is_logged_with_the_leader_and_the_reason() -> None:
    farm = Farm(3, spares=1, snapshot_every=10)
    farm.machines[4].check_snapshot = lambda data: "not a snapshot of this farm"
    with driver_lines() as lines:
        farm.submit([b"v%d" % k for k in range(30)])
        leader = farm.leader()
        leader.add_server(4, endpoint(4))
        farm.run(0.5)
    warnings = [text for level, text in lines if level is LogLevel.warn]
    assert f"refused a snapshot from server {leader.core.id}: not a snapshot of this farm" in warnings
    assert farm.drivers[4].core.log.snapshot_index == 0


def test_a_second_leader_of_a_term_is_an_alarm_logged_once_then_counted() -> None:
    from garlicfarm.wire import AppendEntriesRequest

    farm = Farm(3)
    leader = farm.wait_for_leader()
    follower = next(d for d in farm.drivers.values() if d is not leader)
    other = next(i for i in farm.drivers if farm.drivers[i] not in (leader, follower))
    core = follower.core
    forged = AppendEntriesRequest(
        source=other,
        destination=core.id,
        term=core.term,
        last_log_term=core.log.term_at(core.log.last_index) or 0,
        last_log_index=core.log.last_index,
        commit_index=0,
        entries=(),
    )
    with driver_lines() as lines:
        for _ in range(5):
            response = outcome(follower.handle_request(forged))
            assert not response.accepted
        farm.clock.advance(10)
        outcome(follower.handle_request(forged))
    alarms = [text for level, text in lines if level is LogLevel.error and "ALARM" in text]
    lid = leader.core.id
    expected = (
        f"server {other} sent AppendEntriesRequest as leader of term {core.term}, which server {lid} leads"
    )
    assert len(alarms) == 2 and all(expected in text for text in alarms)
    assert "(1 refused so far)" in alarms[0] and "(6 refused so far)" in alarms[1]
    assert core.leader_id == lid and follower.status()["leader_conflicts"] == 6


def test_each_durable_vote_is_one_line_naming_its_term_and_candidate() -> None:
    """The power-loss tests find a vote given twice in one term (across a crash) from these lines:
    each node says each vote it made durable once, none for a vote already on disk."""
    events: list[dict[str, Any]] = []
    observer = cast(ILogObserver, events.append)
    globalLogPublisher.addObserver(observer)
    try:
        farm = Farm(3)
        leader = farm.wait_for_leader()
        for k in range(5):  # saves of entries and commit indexes after the vote, some fsynced
            farm.submit([b"%d" % k])
        farm.run(1.0)
    finally:
        globalLogPublisher.removeObserver(observer)
    said: dict[int, list[str]] = {}
    for e in events:
        if e.get("log_format", "").startswith("vote in term"):
            assert e["log_level"] is LogLevel.info
            said.setdefault(id(e["log_source"]), []).append(formatEvent(e))
    term, lid = leader.core.term, leader.core.id
    assert [said[id(leader)]] == [[f"vote in term {term}: server {lid}"]]  # its own vote, once
    voters = [lines for source, lines in said.items() if source != id(leader)]
    assert voters and all(lines == [f"vote in term {term}: server {lid}"] for lines in voters)


@pytest.mark.parametrize("who", ["a follower", "the leader"])
def test_a_removed_server_says_so_once_with_the_index_that_removed_it(who: str) -> None:
    """A follower is told to leave; a leader removing itself sees its removal commit. Either says once,
    at warn, from which index it is no longer a member (the operator stops it or adds it back)."""
    farm = Farm(3)
    leader = farm.wait_for_leader()
    gone = leader if who == "the leader" else next(d for d in farm.drivers.values() if d is not leader)
    with driver_lines() as lines:
        d = leader.remove_server(gone.core.id)
        farm.run(1.0)
        outcome(d)
        farm.submit([b"after"])
        farm.run(1.0)
    index = max(at for at, config in leader.core._configs if gone.core.id not in config.ids())
    said = [text for level, text in lines if level is LogLevel.warn and "removed from the farm" in text]
    assert said == [
        f"this server was removed from the farm at index {index}; it no longer votes or serves; "
        "stop it or add it back"
    ]
    assert gone.core.removed


def test_a_change_a_follower_is_sent_is_logged_as_refused_for_not_leading() -> None:
    """A peer's RemoveServerRequest that reaches a follower: asked, then refused with the core's own
    words (the peer is told who leads)."""
    farm = Farm(3, spares=1)
    leader = farm.wait_for_leader()
    follower = next(d for d in farm.drivers.values() if d is not leader)
    with driver_lines() as lines:
        sent = follower.handle_request(RemoveServerRequest(entries=(LogEntry(0, ClusterServer(4)),)))
        farm.run(0.5)
        outcome(sent)
    said = [text for level, text in lines if level is LogLevel.info]
    assert "remove server 4: asked" in said
    assert "remove server 4: refused: not the leader" in said


def test_a_change_its_deposed_leader_appended_and_a_new_leader_overwrote_is_logged_as_refused() -> None:
    """The core's own refusals name their cause (``change_refused``); an appended change whose entry
    a later leader overwrote has none, and the driver's line says what became of it."""
    farm = Farm(3, spares=1)
    leader = farm.wait_for_leader()
    lid = leader.core.id
    others = [i for i in range(1, 4) if i != lid]
    # the leader hears only the new server, and the new server only the leader
    farm.cut |= {(a, b) for a in others for b in (lid, 4)} | {(b, a) for a in others for b in (lid, 4)}
    with driver_lines() as lines:
        asked = leader.handle_request(AddServerRequest(entries=(LogEntry(0, ClusterServer(4, endpoint(4))),)))
        farm.run(3.0)
        assert not leader.core.is_leader() and leader.core.config.endpoint_of(4) is not None
        farm.cut.clear()
        farm.run(2.0)
        assert not outcome(asked).accepted
    assert leader.core.config.endpoint_of(4) is None
    said = [text for level, text in lines if level is LogLevel.info]
    why = "another leader's entry replaced it before it committed"
    assert f"add server 4 at {endpoint(4)}: refused: {why}" in said


def test_a_change_asked_of_the_driver_and_refused_is_logged_with_its_cause() -> None:
    farm = Farm(3)
    leader = farm.wait_for_leader()
    lid = leader.core.id
    with driver_lines() as lines:
        asked = leader.add_server(lid, "sim://moved")
        farm.run(0.1)
        with pytest.raises(ChangeRefused) as refused:
            outcome(asked)
    why = f"server {lid} is already a member, at {endpoint(lid)}"
    assert str(refused.value) == f"cannot add server {lid}: {why}"
    said = [text for level, text in lines if level is LogLevel.info]
    what = f"add server {lid} at sim://moved"
    assert said == [f"{what}: asked", f"{what}: refused: {why}"]
