"""[metrics]: off unless listen is given, loopback by default, and off loopback only with TLS and
Basic auth; errors name the file, the table and the key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from garlicfarm.config import ConfigError, parse_config
from garlicfarm.metrics.config import MetricsConfig, is_loopback, metrics_config

BASE = """
[node]
id = 1
endpoint = "tcp://127.0.0.1:9001"
listen = "tcp:9001:interface=127.0.0.1"
data_dir = "node-1"

[auth]
username = "farm"
password_file = "credentials"

[peers]
1 = "tcp://127.0.0.1:9001"
"""

TLS = """
[tls]
ca = "ca.pem"
cert = "node-1.pem"
key = "node-1.key"
"""


def load(extra: str, tmp_path: Path, tls: bool = False) -> MetricsConfig:
    text = BASE + (TLS if tls else "") + extra
    return metrics_config(parse_config(tomllib.loads(text), tmp_path / "node-1.toml"))


def test_off_by_default(tmp_path: Path) -> None:
    assert load("", tmp_path).listen is None


def test_a_port_number_means_loopback(tmp_path: Path) -> None:
    config = load("[metrics]\nlisten = 9201\n", tmp_path)
    assert config.listen == "tcp:9201:interface=127.0.0.1"
    assert not config.tls and config.username is None and config.password() is None


def test_loopback_endpoint_with_basic_auth(tmp_path: Path) -> None:
    (tmp_path / "metrics-credentials").write_text("s3cret\n")
    config = load(
        '[metrics]\nlisten = "tcp:9201:interface=127.0.0.1"\nusername = "prom"\n'
        'password_file = "metrics-credentials"\n',
        tmp_path,
    )
    assert config.username == "prom" and config.password() == "s3cret"
    assert not config.tls


def test_off_loopback_with_tls_and_credentials_serves_https(tmp_path: Path) -> None:
    config = load(
        '[metrics]\nlisten = "tcp:9201"\nusername = "prom"\npassword_file = "metrics-credentials"\n',
        tmp_path,
        tls=True,
    )
    assert config.tls
    assert config.password_file == tmp_path / "metrics-credentials"


@pytest.mark.parametrize(
    ("extra", "tls", "error"),
    [
        (
            'listen = "tcp:9201"',
            False,
            r"\[metrics\] listen 'tcp:9201' is not on loopback: that needs \[tls\]",
        ),
        ('listen = "tcp:9201:interface=0.0.0.0"', True, "is not on loopback"),
        ('listen = "tcp:9201"\nusername = "p"', True, "username and password_file go together"),
        ("listen = 70000", False, r"listen port 70000 out of range"),
        ('listen = ""', False, "listen must be a non-empty string"),
        ("listen = true", False, "listen must be a non-empty string"),
    ],
)
def test_errors_name_the_key(tmp_path: Path, extra: str, tls: bool, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        load("[metrics]\n" + extra + "\n", tmp_path, tls=tls)


def test_an_unknown_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[metrics\] unknown key 'lisen'; did you mean 'listen'"):
        load('[metrics]\nlisen = "tcp:9201"\n', tmp_path)


@pytest.mark.parametrize(
    ("listen", "loopback"),
    [
        ("tcp:9201:interface=127.0.0.1", True),
        ("tcp:interface=127.0.0.2:port=9201", True),
        ("tcp6:9201:interface=\\:\\:1", True),
        ("tcp:9201", False),
        ("tcp:9201:interface=10.0.0.1", False),
        ("tcp:9201:interface=127.0.0.1.example", False),
        ("unix:/tmp/metrics.sock", False),
    ],
)
def test_loopback(listen: str, loopback: bool) -> None:
    assert is_loopback(listen) is loopback


def test_tls_on_loopback_when_asked(tmp_path: Path) -> None:
    config = load(
        '[metrics]\nlisten = 22650\ntls = true\nusername = "prom"\npassword_file = "metrics-credentials"\n',
        tmp_path,
        tls=True,
    )
    assert config.listen == "tcp:22650:interface=127.0.0.1" and config.tls
    assert not load("[metrics]\nlisten = 22650\ntls = false\n", tmp_path, tls=True).tls


@pytest.mark.parametrize(
    ("extra", "tls", "error"),
    [
        ("listen = 22650\ntls = true", False, r"\[metrics\] tls = true needs \[tls\]"),
        ('listen = 22650\ntls = "yes"', True, r"\[metrics\] tls must be true or false"),
        (
            'listen = "tcp:22650"\ntls = false\nusername = "p"\npassword_file = "f"',
            True,
            "tls = false, but listen 'tcp:22650' is not on loopback",
        ),
    ],
)
def test_tls_option_errors(tmp_path: Path, extra: str, tls: bool, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        load(f"[metrics]\n{extra}\n", tmp_path, tls=tls)
