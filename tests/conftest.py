"""Settings for every test.

Under mutation testing (mutmut sets MUTANT_UNDER_TEST) every function call goes through a trampoline
and the machine is busy with other mutants: hypothesis' per-example deadline would fail tests for
being slow, not wrong, and mutmut would take a slow test for a failing clean run. Shrinking a
failure only makes its report readable, which a killed mutant does not need.

mutmut runs a mutant's tests in the order it lists them and stops at the first failure (``-x``): the
quickest first (by the durations its clean run recorded) kills most mutants in seconds rather than
after minutes of simulations that a unit test would have beaten.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import Phase, settings

settings.register_profile(
    "mutation",
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target],
)

#: mutmut's names for its own runs (the clean and coverage runs, its check that a failure shows)
_NOT_A_MUTANT = {"", "stats", "fail"}


def pytest_configure(config: pytest.Config) -> None:
    # here rather than at import: mutmut's fork server imports this file once, maybe before it
    # names a mutant, and runs a pytest session (so this hook) per mutant
    if "MUTANT_UNDER_TEST" in os.environ:
        settings.load_profile("mutation")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("MUTANT_UNDER_TEST", "") in _NOT_A_MUTANT:
        return
    try:  # mutmut runs the tests from its mutants/ directory, where it keeps this file
        durations = json.loads(Path("mutmut-stats.json").read_text())["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
