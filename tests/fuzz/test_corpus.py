"""Replay the committed fuzz corpus through each target's checking function, without atheris.

The corpus (fuzz/corpus/<target>/) holds the hand-made seeds and what fuzzing runs found worth keeping
(see docs/fuzzing.md), so CI re-checks every contract on every input that once reached new code.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.targets import TARGETS

CORPUS = Path(__file__).resolve().parents[2] / "fuzz" / "corpus"


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_corpus_replays_cleanly(target: str) -> None:
    files = sorted((CORPUS / target).iterdir())
    assert files, f"no corpus for {target}"
    assert len(files) <= 400, "keep the committed corpus small: merge/minimise (docs/fuzzing.md)"
    check = TARGETS[target]
    for path in files:
        data = path.read_bytes()
        assert len(data) <= 65536, f"{path.name} is longer than the fuzzers' -max_len"
        try:
            check(data)
        except Exception as e:
            raise AssertionError(f"{target} corpus file {path.name}: {e!r}") from e


def test_targets_import_without_atheris() -> None:
    # atheris blocked: importing it would raise ImportError, so this proves the targets never do.
    code = (
        "import sys; sys.modules['atheris'] = None; import fuzz.targets; import tests.fuzz.test_regressions"
    )
    subprocess.run([sys.executable, "-c", code], cwd=CORPUS.parents[1], check=True)
