"""The application's TOML tables: defaults, and errors that name the key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from garlicfarm.app.config import DEFAULT_ROUTER_URL, AppConfig, app_config
from garlicfarm.config import ConfigError, parse_config

BASE = """
[node]
id = 2
cluster = "farm"
endpoint = "tcp://127.0.0.1:9002"
listen = "tcp:9002:interface=127.0.0.1"
data_dir = "node-2"
[auth]
username = "farm"
password_file = "credentials"
"""


def load(extra: str, tmp_path: Path) -> AppConfig:

    node = parse_config(tomllib.loads(BASE + extra), tmp_path / "node-2.toml")
    return app_config(node)


def test_defaults(tmp_path: Path) -> None:
    app = load("", tmp_path)
    assert app.router_kind == "static" and app.router_url == DEFAULT_ROUTER_URL
    assert app.leaves == ("farm-leaf-2",)
    assert app.publisher_path == tmp_path / "node-2" / "metals.json"
    assert app.archive_dir == tmp_path / "node-2" / "archive"
    assert app.interval == 60.0


def test_everything_set(tmp_path: Path) -> None:
    app = load(
        """
[app]
interval = 5
publish_config = "on"
master = "AAAA"
[router]
kind = "i2pcontrol"
url = "https://127.0.0.1:7650/jsonrpc"
password_file = "pw"
leaves = ["leaf-a", "leaf-b"]
[publisher]
kind = "command"
command = ["sign", "--stdin"]
[archive]
dir = "/var/lib/archive"
retention_days = 7
""",
        tmp_path,
    )
    assert app.router_password_file == tmp_path / "pw"
    assert app.publisher_command == ("sign", "--stdin")
    assert app.archive_dir == Path("/var/lib/archive")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("[app]\ninterval = 0\n", r"\[app\] interval"),
        ('[app]\npublish_config = "sometimes"\n', r"\[app\] publish_config"),
        ('[router]\nkind = "sam"\n', r"\[router\] kind"),
        ("[router]\nleaves = [1]\n", r"\[router\] leaves"),
        ('[publisher]\nkind = "command"\n', "needs command"),
        ('[publisher]\nkind = "url"\n', "needs url"),
        ('[publisher]\nkind = "carrier pigeon"\n', r"\[publisher\] kind"),
        ("[archive]\nretention_days = -1\n", r"\[archive\] retention_days"),
        ("[[app]]\ninterval = 1\n", "app must be a table"),
    ],
)
def test_errors_name_the_key(extra: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=message):
        load(extra, tmp_path)
