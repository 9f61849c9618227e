"""RaftDriver.transfer_leadership: a Deferred that says who took over, or None when nobody could."""

from __future__ import annotations

import attrs
from twisted.logger import LogLevel

from garlicfarm.raft.driver import NotLeader
from tests.raft.farm import Farm, outcome
from tests.raft.test_driver_says import driver_lines


def _others(farm: Farm, leader_id: int) -> list[int]:
    return [i for i in farm.drivers if i != leader_id]


def test_the_leadership_moves_within_a_few_message_delays() -> None:
    farm = Farm(3)
    farm.submit([b"a", b"b"])
    leader = farm.leader()
    d = leader.transfer_leadership()
    farm.run(0.02)  # a few 1 ms hops; an election timeout is 100-200 ms here
    new = outcome(d)
    assert new in _others(farm, leader.core.id)
    assert farm.leader().core.id == new
    assert farm.submit([b"c"]) == [4 + 1]  # two values, two term-start entries, then "c"


def test_a_named_target_takes_over() -> None:
    farm = Farm(3)
    leader = farm.wait_for_leader()
    target = max(_others(farm, leader.core.id))
    d = leader.transfer_leadership(target)
    farm.run(0.02)
    assert outcome(d) == target


def test_not_the_leader_fires_none_at_once() -> None:
    farm = Farm(3)
    leader = farm.wait_for_leader()
    follower = farm.drivers[_others(farm, leader.core.id)[0]]
    assert outcome(follower.transfer_leadership()) is None


def test_an_unreachable_target_is_given_up_and_the_leader_leads_on() -> None:
    farm = Farm(3)
    leader = farm.wait_for_leader()
    target = _others(farm, leader.core.id)[0]
    farm.cut |= {(leader.core.id, target), (target, leader.core.id)}
    with driver_lines() as lines:
        d = leader.transfer_leadership(target)
        refused = leader.submit(b"while handing over")
        farm.run(0.3)
    assert outcome(d) is None
    assert leader.core.is_leader()
    try:
        outcome(refused)
        raise AssertionError("accepted during a handover")
    except NotLeader as e:
        assert e.leader_id == target  # "ask the server I am handing over to"
    assert (LogLevel.info, f"handing the leadership over to server {target}") in lines
    assert (
        LogLevel.info,
        "the leadership handover did not complete within an election timeout; leading on",
    ) in lines
    farm.cut.clear()
    assert len(farm.submit([b"after"])) == 1


def test_stopping_the_driver_ends_a_waiting_transfer() -> None:
    farm = Farm(3)
    leader = farm.wait_for_leader()
    farm.cut |= {(leader.core.id, i) for i in _others(farm, leader.core.id)}
    d = leader.transfer_leadership()
    leader.stop()
    assert outcome(d) is None


def test_a_follower_asked_to_transfer_says_nothing() -> None:
    farm = Farm(3)
    leader = farm.wait_for_leader()
    follower = farm.drivers[_others(farm, leader.core.id)[0]]
    with driver_lines() as lines:
        assert outcome(follower.transfer_leadership()) is None
    assert lines == []


def test_the_driver_passes_what_the_handshake_said_to_the_core() -> None:
    farm = Farm(3)
    driver = farm.drivers[1]
    driver.set_transfer_support(2, False)
    driver.set_transfer_support(3, True)
    assert driver.core._transfer_support == {2: False, 3: True}


def test_without_a_voter_that_speaks_transfer_the_leader_says_so_and_leads_on() -> None:
    """JRaft peers take no part in a handover: the leader fires None at once, says why in one line,
    and keeps taking requests (statement deletion: the path ran in no test)."""
    farm = Farm(3)
    leader = farm.wait_for_leader()
    # features negotiated ([raft] pre_vote = "auto"), and no peer's handshake offered transfer
    leader.core.options = attrs.evolve(leader.core.options, negotiated_pre_vote=True)
    for peer in _others(farm, leader.core.id):
        leader.set_transfer_support(peer, False)
    with driver_lines() as lines:
        assert outcome(leader.transfer_leadership()) is None
    assert lines == [
        (LogLevel.info, "no voter can take the leadership over now (it needs the transfer feature)")
    ]
    assert leader.core.is_leader() and leader.core.transfer_target is None
    assert len(farm.submit([b"still leading"])) == 1


def test_a_stopped_driver_hands_nothing_over() -> None:
    farm = Farm(3)
    leader = farm.wait_for_leader()
    leader.stop()
    assert outcome(leader.transfer_leadership()) is None
    assert leader.core.transfer_target is None
