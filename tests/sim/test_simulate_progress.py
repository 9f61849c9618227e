"""`garlicfarm simulate` shows its progress on stderr (on a terminal, or with --progress), throttled."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from garlicfarm.cli.progress import Progress


def test_progress_is_throttled_and_ends_with_the_last_count() -> None:
    now = [0.0]
    out = io.StringIO()
    progress = Progress(out, 10, interval=2.0, clock=lambda: now[0])
    for done in range(1, 11):
        now[0] += 0.5  # a run every half second: one line per 2 s, and the last
        progress.update(done, 1 if done > 5 else 0)
    lines = out.getvalue().splitlines()
    assert lines[0] == "1/10 runs (10%), 0 violations, 0s, about 4s left"
    assert lines[-1] == "10/10 runs (100%), 1 violations, 5s"
    assert len(lines) == 4  # at 0.5 s, 2.5 s, 4.5 s, and the last at 5 s


@pytest.mark.e2e
@pytest.mark.parametrize("flag", [True, False])
def test_simulate_prints_progress_with_the_flag(flag: bool) -> None:
    command = [
        sys.executable,
        "-m",
        "garlicfarm",
        "simulate",
        "--seeds",
        "3",
        "--jobs",
        "1",
        "--duration",
        "1000",
    ]
    result = subprocess.run(
        command + (["--progress"] if flag else []), capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.endswith("3 runs, 0 violations\n")
    if flag:
        assert result.stderr.splitlines()[-1].startswith("3/3 runs (100%), 0 violations, "), result.stderr
    else:
        assert result.stderr == ""  # not a terminal: quiet unless asked
