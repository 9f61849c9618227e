"""`garlicfarm keys` and `garlicfarm metals decode`, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from garlicfarm.cli.main import main
from garlicfarm.i2p.keys import PrivateKeyFile
from tests.i2p.vectors import master_signed

FIXTURES = Path(__file__).resolve().parents[1] / "i2p" / "fixtures" / "i2pd-tools"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_master_transient_session_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    master, member, session = tmp_path / "m.dat", tmp_path / "t.dat", tmp_path / "s"
    status, out, _ = run(capsys, "keys", "master", str(master))
    assert status == 0 and json.loads(out)["b32"].endswith(".b32.i2p")
    assert master.stat().st_mode & 0o777 == 0o600
    status, out, _ = run(capsys, "keys", "transient", "--master", str(master), "--days", "2", str(member))
    assert status == 0 and json.loads(out)["offline"]["transientType"] == "EdDSA_SHA512_Ed25519"
    assert (
        PrivateKeyFile.decode(member.read_bytes()).destination
        == PrivateKeyFile.decode(master.read_bytes()).destination
    )
    assert run(capsys, "keys", "session", "--master", str(master), str(session))[0] == 0
    status, out, _ = run(capsys, "keys", "show", str(member))
    assert status == 0 and json.loads(out)["check"] == "keys match"
    # refusals: overwriting, a transient key as master, an absurd validity
    status, _, err = run(capsys, "keys", "master", str(master))
    assert status == 1 and "exists: not overwriting" in err
    status, _, err = run(capsys, "keys", "transient", "--master", str(member), str(tmp_path / "x"))
    assert status == 1 and "offline (transient) key file" in err
    status, _, err = run(
        capsys, "keys", "transient", "--master", str(master), "--days", "0", str(tmp_path / "y")
    )
    assert status == 1 and "--days" in err


def test_show_reads_i2pd_files_and_refuses_garbage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "keys", "show", str(FIXTURES / "dsa.dat"))
    assert status == 0 and json.loads(out)["check"].startswith("not checked")
    (tmp_path / "junk").write_bytes(b"\x00" * 100)
    status, _, err = run(capsys, "keys", "show", str(tmp_path / "junk"))
    assert status == 1 and "not a private key file" in err and err[-1] == "\n" and err.count("\n") == 1


def test_metals_decode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.bin"
    good.write_bytes(master_signed().encoded)
    status, out, _ = run(capsys, "metals", "decode", "--now", "1767225600", str(good))
    assert status == 0 and json.loads(out)["verdicts"]["signature"] == "valid"
    forged = bytearray(master_signed().encoded)
    forged[-1] ^= 1
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(forged))
    status, out, err = run(capsys, "metals", "decode", str(bad))
    assert (
        status == 1 and json.loads(out)["verdicts"]["signature"] == "invalid" and "signature invalid" in err
    )
    status, _, err = run(capsys, "metals", "decode", str(FIXTURES / "dsa.dat"))
    assert status == 1 and "not a Meta LS2" in err and "at byte" in err
