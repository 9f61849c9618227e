"""Key files both ways with i2pd's own tools (PurpleI2P/i2pd-tools: keygen, offlinekeys, keyinfo).

The fixtures were made by the real tools (tests/i2p/fixtures/i2pd-tools/README.md): every run reads
them and compares with what keyinfo printed for each. Where the tools are built
(scripts/build-i2pd-tools.sh; I2PD_TOOLS_BIN names their directory), keyinfo also reads the key files
*we* write, and offlinekeys' output from our master is read back.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from garlicfarm.i2p.encoding import b64decode
from garlicfarm.i2p.errors import I2PFormatError, UnsupportedSigType
from garlicfarm.i2p.keys import PrivateKeyFile, create_master, create_transient
from tests.i2p.keysource import counter_random

FIXTURES = Path(__file__).parent / "fixtures" / "i2pd-tools"


def keyinfo_fields(text: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in text.splitlines()) if v}


@pytest.mark.parametrize("name", ["ed25519.dat", "dsa.dat", "offline.dat"])
def test_we_read_what_keygen_and_offlinekeys_wrote(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    keys = PrivateKeyFile.decode(raw)
    if keys.destination.sig_type.name == "DSA_SHA1":
        with pytest.raises(UnsupportedSigType):  # parsed and hashed, not signed with
            keys.check()
    else:
        keys.check()
    info = keyinfo_fields((FIXTURES / f"{name}.keyinfo.txt").read_text())
    assert keys.destination.b32 == info["B32 Address"]
    assert keys.destination.b64 == info["Destination"]
    assert keys.encoded == raw  # and we write back the same bytes
    assert b64decode((FIXTURES / f"{name}.keyinfo-p.txt").read_text().strip()) == raw
    assert keys.is_offline == ("Offline signature" in (FIXTURES / f"{name}.keyinfo.txt").read_text())


def test_offline_expiry_is_the_one_keyinfo_printed() -> None:
    keys = PrivateKeyFile.decode((FIXTURES / "offline.dat").read_bytes())
    assert keys.offline is not None
    text = (FIXTURES / "offline.dat.keyinfo.txt").read_text()
    day, month, year, clock = re.search(r"Expires: (\d+)/(\d+)/(\d+) (\S+)", text).groups()  # type: ignore[union-attr]
    import time

    assert (
        time.strftime("%d/%m/%Y %H:%M:%S", time.gmtime(keys.offline.expires))
        == f"{day}/{month}/{year} {clock}"
    )
    assert keys.offline.transient_type.name == "EdDSA_SHA512_Ed25519"


def test_an_expired_offline_file_still_parses_and_says_so() -> None:
    # keyinfo refuses it outright ("bad key file format"); we read it, and the signer refuses to use it.
    keys = PrivateKeyFile.decode((FIXTURES / "offline-expired.dat").read_bytes())
    assert keys.offline is not None and keys.offline.expires < 1_800_000_000


def _tools() -> Path | None:
    configured = os.environ.get("I2PD_TOOLS_BIN")
    if configured:
        return Path(configured)
    found = shutil.which("keyinfo")
    return Path(found).parent if found else None


TOOLS = _tools()
needs_tools = pytest.mark.skipif(
    TOOLS is None or not (TOOLS / "keyinfo").exists(),
    reason="i2pd-tools not built here (scripts/build-i2pd-tools.sh --help; then I2PD_TOOLS_BIN=DIR/bin)",
)


@needs_tools
def test_keyinfo_reads_our_master_and_transient_files(tmp_path: Path) -> None:
    assert TOOLS is not None
    master = create_master(counter_random("tools-master"))
    member = create_transient(master, counter_random("tools-member"), 2_000_000_000)
    for name, keys in (("master.dat", master), ("member.dat", member)):
        path = tmp_path / name
        path.write_bytes(keys.encoded)
        done = subprocess.run(
            [str(TOOLS / "keyinfo"), "-v", str(path)], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        info = keyinfo_fields(done.stdout)
        assert info["B32 Address"] == master.destination.b32
        assert info["Destination"] == master.destination.b64
        assert ("Offline signature" in done.stdout) == keys.is_offline


@needs_tools
def test_offlinekeys_from_our_master_is_read_back(tmp_path: Path) -> None:
    assert TOOLS is not None
    master = create_master(counter_random("tools-master"))
    (tmp_path / "master.dat").write_bytes(master.encoded)
    done = subprocess.run(
        [str(TOOLS / "offlinekeys"), str(tmp_path / "off.dat"), str(tmp_path / "master.dat"), "7", "30"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    keys = PrivateKeyFile.decode((tmp_path / "off.dat").read_bytes())
    keys.check()
    assert keys.destination == master.destination and keys.is_offline


def test_truncated_tool_file_is_one_clear_error() -> None:
    raw = (FIXTURES / "offline.dat").read_bytes()
    with pytest.raises(I2PFormatError, match="transient private key"):
        PrivateKeyFile.decode(raw[:-1])
