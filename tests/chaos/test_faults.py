"""The fault schedule and link table: seed-determined, bounded, and affecting the links they say."""

from __future__ import annotations

import random

import pytest

from garlicfarm.chaos.faults import Fault, FaultSchedule, Heal, Kind, LinkTable


def draw(seed: int, count: int = 200, nodes: int = 5) -> list[Fault]:
    schedule = FaultSchedule(random.Random(seed), nodes)
    return [schedule.next() for _ in range(count)]


def test_a_seed_replays_the_same_schedule() -> None:
    assert draw(7) == draw(7)
    assert draw(7) != draw(8)


def test_every_kind_is_drawn() -> None:
    assert {f.kind for f in draw(1, 500)} == set(Kind)


def test_kills_take_a_minority_and_kill_majority_a_brief_majority() -> None:
    for fault in draw(3, 500):
        nodes = fault.nodes(leader=None)
        assert len(set(nodes)) == len(nodes)
        if fault.kind is Kind.KILL:
            assert 1 <= len(nodes) <= 2
        if fault.kind is Kind.KILL_MAJORITY:
            assert len(nodes) == 3
            assert fault.duration <= 3.0


def test_the_leader_comes_first_when_asked() -> None:
    fault = Fault(Kind.KILL, 1.0, 2, True, (3, 1, 2, 5, 4))
    assert fault.nodes(leader=5) == (5, 3)
    assert fault.nodes(leader=None) == (3, 1)
    assert Fault(Kind.KILL, 1.0, 2, False, (3, 1, 2, 5, 4)).nodes(leader=5) == (3, 1)


def test_links_of_each_network_fault() -> None:
    order = (1, 2, 3, 4, 5)
    isolate = Fault(Kind.ISOLATE, 1.0, 1, False, order)
    assert set(isolate.links((2,))) == {(2, k) for k in (1, 3, 4, 5)} | {(k, 2) for k in (1, 3, 4, 5)}
    split = Fault(Kind.SPLIT, 1.0, 2, False, order)
    assert len(split.links((1, 2))) == 2 * 2 * 3
    out = Fault(Kind.ONE_WAY, 1.0, 1, False, order, outgoing=True)
    assert set(out.links((4,))) == {(4, k) for k in (1, 2, 3, 5)}
    into = Fault(Kind.ONE_WAY, 1.0, 1, False, order, outgoing=False)
    assert set(into.links((4,))) == {(k, 4) for k in (1, 2, 3, 5)}
    delay_all = Fault(Kind.DELAY, 1.0, 5, False, order, delay=0.1)
    assert len(delay_all.links(order)) == 5 * 4
    delay_one = Fault(Kind.DELAY, 1.0, 1, False, order, delay=0.1)
    assert set(delay_one.links((3,))) == {(3, k) for k in (1, 2, 4, 5)} | {(k, 3) for k in (1, 2, 4, 5)}
    drop = Fault(Kind.DROP, 1.0, 4, False, order)
    assert set(drop.links((1, 2, 3, 4))) == {(1, 2), (2, 1), (3, 4), (4, 3)}


def test_link_table_tells_observers() -> None:
    table = LinkTable()
    seen: list[frozenset[tuple[int, int]]] = []
    table.subscribe(lambda: seen.append(table.down))
    table.cut([(1, 2)], Heal.DELIVER)
    table.slow([(2, 1)], 0.1)
    assert table.is_down((1, 2)) and not table.is_down((2, 1))
    assert table.heal_mode((1, 2)) is Heal.DELIVER
    assert table.delay((2, 1)) == 0.1 and table.delay((1, 2)) == 0.0
    table.heal_all()
    assert not table.is_down((1, 2)) and table.delay((2, 1)) == 0.0
    assert seen == [frozenset({(1, 2)}), frozenset({(1, 2)}), frozenset()]


def test_too_small_a_farm_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        FaultSchedule(random.Random(0), 2)
