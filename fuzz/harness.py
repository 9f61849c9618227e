"""The atheris side of every target: instrument garlicfarm (and h11, which parses the handshake's HTTP),
then hand libFuzzer the target's checking function from :mod:`fuzz.targets`.

Only the ``fuzz_*.py`` entry points import this module; tests import :mod:`fuzz.targets` directly.
"""

from __future__ import annotations

import shlex
import sys
from typing import Any


def main(target: str) -> None:
    # Only the fuzzer needs atheris (it has no type stubs); tests replay the targets without it.
    import atheris  # type: ignore[import-untyped]  # noqa: PLC0415

    with atheris.instrument_imports(include=["garlicfarm", "fuzz.targets", "h11"]):
        from fuzz import targets  # noqa: PLC0415 - must be imported inside the instrumentation

    check = targets.TARGETS[target]

    def test_one_input(data: bytes) -> None:
        check(data)

    # libFuzzer re-runs argv[0] through the shell for -merge=1 (and -fork, -minimize_crash): make it a
    # command that works from the repository root, since the module file itself is not executable.
    argv: list[Any] = [f"{shlex.quote(sys.executable)} -m fuzz.fuzz_{target}", *sys.argv[1:]]
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()
