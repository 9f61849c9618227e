"""scripts/run.sh, the README's main job: --help before any set-up; a farm left from an earlier run is
refused rather than mistaken for this run's (regression, issue 16)."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "scripts" / "run.sh"


def test_help_is_shown_before_any_set_up() -> None:
    result = subprocess.run(
        ["bash", str(RUN), "--help"], capture_output=True, text=True, timeout=10, check=True
    )
    assert result.stdout.startswith("The main job on a fresh machine")
    assert "set -euo" not in result.stdout and "==" not in result.stdout


@pytest.mark.e2e
def test_a_farm_still_running_from_an_earlier_run_is_refused(tmp_path: Path) -> None:
    farm = tmp_path / "farm"
    first = subprocess.Popen(
        ["bash", str(RUN), "--dir", str(farm)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert first.stdout is not None
        deadline = time.monotonic() + 120
        lines = []
        while time.monotonic() < deadline:
            line = first.stdout.readline()
            lines.append(line)
            if "the farm is running" in line or not line:
                break
        assert "the farm is running" in lines[-1], "".join(lines)
        # The quick start publishes a real Meta LS2: signed by the chosen member, decoded, both
        # signatures valid, naming the master from the farm's own configuration.
        text = "".join(lines)
        master = re.search(r'^master = "(\S+\.b32\.i2p)"', (farm / "node-1.toml").read_text(), re.M)
        assert master is not None
        assert f"master {master[1]}" in text
        assert f'"master": "{master[1]}"' in text
        assert '"offlineSignature": "valid"' in text and '"signature": "valid"' in text
        second = subprocess.run(
            ["bash", str(RUN), "--once", "--dir", str(farm)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert second.returncode == 1
        assert "a farm from an earlier run is still running" in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
