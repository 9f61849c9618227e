"""`garlicfarm chaos` option checking (the run itself is in test_chaos_e2e)."""

from __future__ import annotations

import pytest

from garlicfarm.cli.main import main


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "2"], "--nodes must be from 3 to 9"),
        (["--duration", "0"], "--duration must be positive"),
        (["--clients", "0"], "--clients must be from 1 to 64"),
        (["--max-fault", "1"], "--max-fault must be at least 2 seconds"),
    ],
)
def test_bad_options_are_refused_before_anything_starts(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chaos", *args]) == 1
    assert message in capsys.readouterr().err
