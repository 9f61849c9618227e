"""contrib/garlicfarm@.service: systemd accepts it (``systemd-analyze verify``, where installed), it
has the settings docs/operations.md promises, and the commands it runs are garlicfarm commands."""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from garlicfarm.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "contrib" / "garlicfarm@.service"
INSTALLED = "/usr/local/bin/garlicfarm"


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True, empty_lines_in_values=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # systemd's keys are case-sensitive
    parser.read_string(UNIT.read_text())
    return parser


def test_the_unit_has_the_promised_settings() -> None:
    service = unit()["Service"]
    assert service["Type"] == "simple"  # the node does not speak sd_notify
    assert service["ExecStart"] == f"{INSTALLED} run --config /etc/garlicfarm/%i.toml"
    assert service["Restart"] == "on-failure"
    assert service["NoNewPrivileges"] == "yes"
    assert service["ProtectSystem"] == "strict"
    assert service["ReadWritePaths"] == "/var/lib/garlicfarm/%i"
    assert service["StateDirectory"] == "garlicfarm/%i"
    assert service["CapabilityBoundingSet"] == ""
    assert " health " in service["ExecStartPost"] and "--wait" in service["ExecStartPost"]
    assert unit()["Install"]["WantedBy"] == "multi-user.target"


@pytest.mark.parametrize("key", ["ExecStart", "ExecStartPost"])
def test_the_commands_are_garlicfarm_commands(key: str) -> None:
    argv = shlex.split(unit()["Service"][key].replace("%i", "node-1"))
    assert argv[0] == INSTALLED
    args = build_parser().parse_args(argv[1:])  # exits (SystemExit) on an unknown command or option
    assert args.config == "/etc/garlicfarm/node-1.toml"
    assert args.command == ("run" if key == "ExecStart" else "health")


def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (the INI checks above still ran)")
    garlicfarm = Path(sys.executable).parent / "garlicfarm"  # verify checks the command is executable
    if not garlicfarm.exists():
        pytest.skip(f"no garlicfarm script beside {sys.executable}")
    instance = tmp_path / "garlicfarm@node-1.service"
    instance.write_text(UNIT.read_text().replace(INSTALLED, str(garlicfarm)))
    result = subprocess.run(
        [analyze, "verify", "--man=no", str(instance)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # an unknown or misspelt key is only a warning (exit 0): any line naming the unit fails the test
    complaints = [line for line in (result.stdout + result.stderr).splitlines() if "garlicfarm@" in line]
    assert result.returncode == 0 and not complaints, result.stdout + result.stderr
