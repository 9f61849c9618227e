"""[limits] keys of the connection budgets: defaults, and errors that name the key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from garlicfarm.config import ConfigError, NodeConfig, parse_config

BASE = """
[node]
id = 1
cluster = "farm"
endpoint = "tcp://127.0.0.1:9001"
listen = "tcp:9001:interface=127.0.0.1"
data_dir = "node-1"
[auth]
username = "farm"
password_file = "credentials"
"""


def load(limits: str, tmp_path: Path) -> NodeConfig:
    return parse_config(tomllib.loads(BASE + "[limits]\n" + limits), tmp_path / "node-1.toml")


def test_defaults(tmp_path: Path) -> None:
    config = load("", tmp_path)
    assert (config.max_inbound, config.max_unauthenticated) == (256, 64)
    assert config.max_buffered == 64 * 1024 * 1024


def test_the_buffer_budget_follows_a_larger_message_limit(tmp_path: Path) -> None:
    assert load("max_entries_size = 100000000", tmp_path).max_buffered == 200_000_000


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ("max_unauthenticated = 0", "max_unauthenticated"),
        ("max_buffered = 1024", "max_buffered"),
        ("max_buffered = 16777216", r"max_buffered \(16777216\) must hold one largest message"),
    ],
)
def test_bad_limits(tmp_path: Path, limits: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(limits, tmp_path)
