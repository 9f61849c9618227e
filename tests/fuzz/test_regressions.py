"""Every input a fuzzer ever crashed on, replayed through its target (tests/fuzz/crashes/<target>/).

A file's name says what it found; docs/fuzzing.md lists each finding with its fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.targets import TARGETS

CRASHES = Path(__file__).resolve().parent / "crashes"
CASES = sorted(
    (target, path) for target in TARGETS for path in (CRASHES / target).glob("*") if path.is_file()
)


@pytest.mark.parametrize(("target", "path"), CASES, ids=[f"{t}/{p.name}" for t, p in CASES])
def test_crash_input_is_handled(target: str, path: Path) -> None:
    TARGETS[target](path.read_bytes())


def test_there_are_regressions() -> None:
    assert CASES
