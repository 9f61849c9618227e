"""``garlicfarm pipeline`` and ``garlicfarm synth`` on the command line (no Spark started here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from garlicfarm.cli.main import build_parser, main


@pytest.mark.parametrize("command", ["pipeline", "synth"])
def test_help_explains_the_options(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([command, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    expected = (
        ["--archive", "--out", "--master", "--window", "--interval", "--conf", "local[*]", "Hadoop"]
        if command == "pipeline"
        else ["--out", "--farms", "--members", "--days", "--interval", "--seed", "--bad-share"]
    )
    for word in expected:
        assert word in text


def test_synth_writes_an_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "synth",
        "--out",
        str(tmp_path),
        "--farms",
        "1",
        "--members",
        "2",
        "--days",
        "1",
        "--interval",
        "600",
    ]
    assert main(argv) == 0
    assert "status records" in capsys.readouterr().out
    assert (tmp_path / "date=2026-01-01" / "node-1.jsonl").stat().st_size > 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["synth", "--farms", "0", "--members", "1", "--days", "1"], "--farms must be at least 1"),
        (["synth", "--farms", "1", "--members", "1", "--days", "1", "--interval", "7"], "--interval"),
        (["synth", "--farms", "1", "--members", "1", "--days", "1", "--start", "soon"], "--start"),
        (["pipeline", "--archive", "/nonexistent/archive"], "no archive directory"),
        (["pipeline", "--archive", ".", "--window", "five"], "not a duration"),
        (["pipeline", "--archive", ".", "--conf", "novalue"], "KEY=VALUE"),
    ],
)
def test_bad_options_are_one_line_errors(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
