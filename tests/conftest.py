"""Settings for every test.

Under mutation testing (mutmut sets MUTANT_UNDER_TEST) every function call goes through a trampoline
and the machine is busy with other mutants: hypothesis' per-example deadline would fail tests for
being slow, not wrong, and mutmut would take a slow test for a failing clean run.
"""

from __future__ import annotations

import os

from hypothesis import Phase, settings

settings.register_profile(
    "mutation",
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)
if "MUTANT_UNDER_TEST" in os.environ:
    settings.load_profile("mutation")
