"""[raft] profile = "lan" | "i2p": one name for a network's timings; explicit keys still win."""

from __future__ import annotations

from pathlib import Path

import pytest

from garlicfarm.config import PROFILES, ConfigError, load_config
from garlicfarm.farminit import FarmSpec, create_farm


@pytest.fixture
def node_toml(tmp_path: Path) -> Path:
    create_farm(FarmSpec(tmp_path, 1, base_port=21960), force=True)
    return tmp_path / "node-1.toml"


def _with_raft(node_toml: Path, lines: str) -> Path:
    with open(node_toml, "a") as f:
        f.write("\n[raft]\n" + lines)
    return node_toml


def _timings(path: Path) -> tuple[int, int, int]:
    config = load_config(path)
    return round(config.tick_seconds * 1000), config.raft.election_ticks, config.raft.heartbeat_ticks


def test_lan_is_the_default(node_toml: Path) -> None:
    assert _timings(node_toml) == (10, 20, 10)  # heartbeats every 100 ms, elections after 200 ms


def test_i2p_profile(node_toml: Path) -> None:
    assert _timings(_with_raft(node_toml, 'profile = "i2p"\n')) == (250, 40, 4)  # 1 s; 10-20 s


def test_i2p_gives_handshakes_and_commits_more_time(node_toml: Path) -> None:
    lan = load_config(node_toml)
    assert (lan.handshake_timeout, lan.commit_timeout) == (10.0, 10.0)
    i2p = load_config(_with_raft(node_toml, 'profile = "i2p"\ncommit_timeout = 90\n'))
    assert (i2p.handshake_timeout, i2p.commit_timeout) == (60.0, 90.0)


def test_explicit_keys_override_the_profile(node_toml: Path) -> None:
    path = _with_raft(node_toml, 'profile = "i2p"\nelection_ticks = 80\n')
    assert _timings(path) == (250, 80, 4)


def test_profiles_keep_heartbeats_well_inside_the_election_timeout() -> None:
    """A follower's timer fires only when a heartbeat is more than election - heartbeat late: at least
    a heartbeat interval, and 100 ms (what the lan profile had with 50 ms heartbeats and 150 ms)."""
    for profile in PROFILES.values():
        assert profile.election_ticks >= 2 * profile.heartbeat_ticks
        assert (profile.election_ticks - profile.heartbeat_ticks) * profile.tick_ms >= 100


@pytest.mark.parametrize("value", ['"wan"', "1", '"LAN "'])
def test_unknown_profiles_are_refused(node_toml: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r'\[raft\] profile must be "lan" or "i2p", not'):
        load_config(_with_raft(node_toml, f"profile = {value}\n"))


def test_the_backoff_bound_is_six_seconds_of_ticks(node_toml: Path) -> None:
    """A candidate refused for its log backs off up to 6 s (docs/raft.md, "Backing off"): above JRaft's
    5 s election timeout whatever the tick; with "i2p" the 10-20 s timeout is above it already."""
    assert load_config(node_toml).raft.max_backoff_ticks == 600  # 10 ms ticks
    assert load_config(_with_raft(node_toml, 'profile = "i2p"\n')).raft.max_backoff_ticks == 24
