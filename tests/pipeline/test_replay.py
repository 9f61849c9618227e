"""The replay step without Spark: a farm's records through ``replay_farm`` give, window by window, what
the live ``FarmState`` decided after the window's last record."""

from __future__ import annotations

import itertools
import json

from garlicfarm.app.state import FarmState
from garlicfarm.pipeline.replay import members_configuration, replay_farm
from tests.app.records import entry, record

MINUTE = 60_000
WINDOW = 5 * MINUTE


def _log() -> list[tuple[int, int, bytes]]:
    """Three members; 2 is best, then goes unhealthy for a while, then 3 overtakes 1 by a little only."""
    rows = []
    index = 0
    for minute in range(40):
        for member in (1, 2, 3):
            t = minute * MINUTE + member * 1000
            net = "ERROR_CLOCK_SKEW" if member == 2 and 10 <= minute < 20 else "OK"
            tunnels = {1: 1000, 2: 3000, 3: 1000 + 50 * minute}[member]
            if member == 3 and 25 <= minute < 30:
                continue  # silent: stale after FRESH_MS
            index += 1
            data = json.dumps(record(member, t, net=net, tunnels=tunnels, cluster="f")).encode()
            rows.append((index, t, data))
    return rows


def test_windows_hold_the_live_state_at_their_end() -> None:
    rows = _log()
    windows = {w.window_start: w for w in replay_farm("f", [1, 2, 3], rows, WINDOW)}
    state = FarmState("f")
    state.apply(0, members_configuration([1, 2, 3]))
    expected = {}
    publishers = []
    for index, _, data in rows:
        state.apply(index, entry(data))
        if state.now:  # the farm's time starts once a quorum of members has reported
            expected[state.now // WINDOW * WINDOW] = (state.publisher, state.leases, state.index)
        publishers.append(state.publisher)
    assert sorted(windows) == sorted(expected)
    for start, (publisher, leases, last_index) in expected.items():
        got = windows[start]
        assert (got.publisher, got.leases, got.last_index) == (publisher, leases, last_index)
    # the sequence exercised the interesting parts: a change away from an unhealthy member and back
    assert len(set(publishers)) >= 2
    assert sum(w.changes for w in windows.values()) == sum(
        1 for a, b in itertools.pairwise(publishers) if a != b
    )
    assert sum(w.records for w in windows.values()) == len(rows)


def test_farms_are_packed_onto_tasks_by_size() -> None:
    from garlicfarm.pipeline.replay import plan_bins

    sizes = {"a": 100, "b": 90, "c": 60, "d": 50, "e": 40, "f": 10}
    placed = plan_bins(sizes, 2)
    loads = [sum(n for farm, n in sizes.items() if placed[farm] == b) for b in range(2)]
    best = min(
        max(sum(c), sum(sizes.values()) - sum(c))
        for r in range(len(sizes) + 1)
        for c in itertools.combinations(sizes.values(), r)
    )
    assert sum(loads) == sum(sizes.values())
    assert max(loads) <= best * 4 / 3  # LPT's bound; here 190 against the best 180
    assert plan_bins(sizes, 2) == placed  # deterministic
    assert set(plan_bins({"a": 1}, 1).values()) == {0}


def test_each_task_gets_exactly_the_farms_planned_for_it(spark: object) -> None:
    """Spark places a row by the hash of its key: partition_keys finds a key for every partition."""
    from pyspark.sql import functions as F  # noqa: N812

    from garlicfarm.pipeline.replay import partition_keys

    for partitions in (1, 2, 7):
        keys = partition_keys(spark, partitions)  # type: ignore[arg-type]
        frame = spark.createDataFrame([(k,) for k in keys], "key long")  # type: ignore[attr-defined]
        placed = frame.repartition(partitions, "key").select("key", F.spark_partition_id().alias("p"))
        assert sorted((row.key, row.p) for row in placed.collect()) == sorted(
            (k, p) for p, k in enumerate(keys)
        )
