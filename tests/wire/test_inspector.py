"""`garlicfarm decode` / `garlicfarm encode`."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from garlicfarm.cli.main import main
from garlicfarm.wire import AppendEntriesResponse, encode
from tests.wire.test_vectors import vectors


def run(argv: list[str], stdin: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_decode_and_encode_every_doc_vector(monkeypatch: pytest.MonkeyPatch) -> None:
    all_hex = "\n".join(h for _, _, h in vectors())
    code, out, err = run(["decode"], all_hex, monkeypatch)
    assert (code, err) == (0, "")
    decoded = [json.loads(line) for line in out.splitlines()]
    assert decoded == [json.loads(j) for _, j, _ in vectors()]

    code, out, err = run(["encode"], "".join(j for _, j, _ in vectors()), monkeypatch)
    assert (code, err) == (0, "")
    hex_lines = out.splitlines()
    for (title, _, h), line in zip(vectors(), hex_lines, strict=True):
        if "SyncLogRequest" not in title:
            assert line == "".join(h.split())


def test_decode_file_of_raw_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "capture.bin"
    path.write_bytes(encode(AppendEntriesResponse(1, 2, 3, 4, True)) * 2)
    code, out, _ = run(["decode", "--file", str(path)], "", monkeypatch)
    assert code == 0
    assert len(out.splitlines()) == 2


def test_decode_hex_arguments_with_spaces(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run(
        ["decode", "02", "00000002 00000001", "0000000000000005 0000000000000000 01"], "", monkeypatch
    )
    assert code == 0
    assert json.loads(out)["accepted"] is True


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("0g", "invalid hex: 'g' at character 1"),
        ("abc", "odd number of digits"),
        ("2a" * 26, "unknown message type 42 at byte 0"),
        ("04" + "00" * 20, "input ends inside a message (21 bytes left over) at byte 0"),
        ("04" + "00" * 25 + "03", "input ends inside a message (1 bytes left over) at byte 26"),
    ],
)
def test_decode_bad_input_is_one_line_and_exit_1(
    stdin: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(["decode"], stdin, monkeypatch)
    assert code == 1
    assert message in err
    assert err.count("\n") == 1


def test_decode_prints_messages_before_the_bad_one(monkeypatch: pytest.MonkeyPatch) -> None:
    good = encode(AppendEntriesResponse()).hex()
    code, out, err = run(["decode"], good + "ff", monkeypatch)
    assert code == 1
    assert len(out.splitlines()) == 1
    assert "at byte 26" in err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{", "line 1: invalid JSON"),
        ('{"type": "Nope"}', "line 1: bad message: type: unknown message type 'Nope'"),
        (
            '{"type": "AppendEntriesResponse", "source": -1, "destination": 0, "term": 0, '
            '"next_index": 0, "accepted": true}',
            "source: expected an integer 0..4294967295",
        ),
        (
            '{"type": "SyncLogRequest", "source": 1, "destination": 0, "term": 0, "last_log_term": 0, '
            '"last_log_index": 0, "commit_index": 0, "entries": []}',
            "SyncLogRequest carries 0 entries",
        ),
        ("[" * 100_000, "line 1: invalid JSON"),
    ],
)
def test_encode_bad_input(line: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run(["encode"], line + "\n", monkeypatch)
    assert code == 1
    assert message in err


def test_console_script_runs() -> None:
    hexline = encode(AppendEntriesResponse(1, 2, 3, 4, True)).hex()
    result = subprocess.run(
        [sys.executable, "-m", "garlicfarm", "decode"],
        input=hexline,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout)["type"] == "AppendEntriesResponse"
