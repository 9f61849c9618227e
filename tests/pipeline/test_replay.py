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
