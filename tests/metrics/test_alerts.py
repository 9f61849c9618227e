"""docs/alerts.yml is valid Prometheus rules, and each alert fires on its synthetic series
(tests/metrics/alerts_test.yml), by Debian's promtool (scripts/system-deps.sh installs it).

Without promtool the tests are skipped on a developer's machine and fail in CI (CI set)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def promtool() -> str:
    found = shutil.which("promtool")
    if found:
        return found
    message = "promtool is not installed: run scripts/system-deps.sh (it installs Debian's prometheus)"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def run(*args: str) -> str:
    result = subprocess.run(
        [promtool(), *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_rules_are_valid() -> None:
    assert "SUCCESS: 9 rules found" in run("check", "rules", "docs/alerts.yml")


def test_each_alert_fires_on_its_series() -> None:
    out = run("test", "rules", "tests/metrics/alerts_test.yml")
    assert "SUCCESS" in out


def test_every_alert_has_a_test() -> None:
    rules = (ROOT / "docs/alerts.yml").read_text()
    tests = (ROOT / "tests/metrics/alerts_test.yml").read_text()
    alerts = [
        line.split(":", 1)[1].strip() for line in rules.splitlines() if line.strip().startswith("- alert:")
    ]
    assert len(alerts) == 9
    for alert in alerts:
        assert f"alertname: {alert}\n" in tests, alert
