"""Unknown tables and keys in a node's TOML are refused with a did-you-mean, not silently ignored.

Regression (issue 16): `[raft] tickms` and `[nodee]` were accepted, the settings never applied.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from garlicfarm.config import ConfigError, load_config
from garlicfarm.farminit import FarmSpec, create_farm


@pytest.fixture
def node_toml(tmp_path: Path) -> Path:
    create_farm(FarmSpec(tmp_path, 1, base_port=21950), force=True)
    return tmp_path / "node-1.toml"


def test_what_init_writes_is_known(node_toml: Path) -> None:
    load_config(node_toml)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("[raft]\ntickms = 5\n", "[raft] unknown key 'tickms'; did you mean 'tick_ms'?"),
        ("[nodee]\nid = 2\n", "unknown table [nodee]; did you mean 'node'?"),
        ("[admin]\nmax_conections = 5\n", "did you mean 'max_connections'?"),
        ("[limits]\nzzz = 1\n", "[limits] unknown key 'zzz' (known: handshake_timeout,"),
    ],
)
def test_typos_are_refused_with_a_suggestion(node_toml: Path, extra: str, message: str) -> None:
    with open(node_toml, "a") as f:
        f.write("\n" + extra)
    with pytest.raises(ConfigError) as info:
        load_config(node_toml)
    assert message in str(info.value)
    assert str(info.value).count(str(node_toml)) == 1  # the prefix once


def test_every_documented_key_is_known(node_toml: Path) -> None:
    node_toml.write_text(node_toml.read_text().partition("\n# The Meta LS2")[0])  # its tables come below
    with open(node_toml, "a") as f:
        f.write(
            '\n[raft]\ntick_ms = 50\npre_vote = "auto"\nelection_ticks = 10\nheartbeat_ticks = 2\n'
            "max_entries_per_append = 200\nsnapshot_every = 5000\n"
            "[limits]\nhandshake_timeout = 10\nidle_timeout = 600\nmax_inbound = 256\n"
            "max_unauthenticated = 64\nmax_buffered = 67108864\nmax_entries_size = 16777216\n"
            '[storage]\nfsync = true\nwriter = "thread"\n'
            '[app]\ninterval = 60\npublish_config = "auto"\nmaster = "m"\n'
            '[router]\nkind = "static"\nleaves = ["l"]\n[publisher]\nkind = "none"\nformat = "json"\n'
            'keys = "k.dat"\nexpires = 600\ni2cp = "tcp:127.0.0.1:7654"\nsession = "s"\npath = "m"\n'
            'username = "u"\npassword_file = "p"\n'
            "[archive]\nretention_days = 90\n[admin]\nlisten = 9101\nsample_interval = 10\n"
        )
    load_config(node_toml)


@pytest.mark.parametrize(("value", "required"), [("required", True), ("optional", False), ("maybe", None)])
def test_client_certificates(node_toml: Path, value: str, required: bool | None) -> None:
    text = node_toml.read_text().replace("[tls]\n", f'[tls]\nclient_certificates = "{value}"\n')
    node_toml.write_text(text)
    if required is None:
        with pytest.raises(ConfigError, match='client_certificates must be "required" or "optional"'):
            load_config(node_toml)
    else:
        tls = load_config(node_toml).tls
        assert tls is not None and tls.require_client_certificate is required


@pytest.mark.parametrize("value", ["thread", "inline", "async"])
def test_storage_writer(node_toml: Path, value: str) -> None:
    with open(node_toml, "a") as f:
        f.write(f'\n[storage]\nwriter = "{value}"\n')
    if value == "async":
        with pytest.raises(ConfigError, match='writer must be "thread" or "inline"'):
            load_config(node_toml)
    else:
        assert load_config(node_toml).writer == value
