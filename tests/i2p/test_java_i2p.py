"""Java I2P's own MetaLeaseSet (readBytes, verifySignature; I2P's EdDSA engine) on our bytes.

Java I2P is not packaged and its repository is too large to fetch whole, so its source files are
gathered one by one (tests/javai2p/i2p-files.txt lists each with its commit) into a directory named by
JAVA_I2P_SRC; scripts/java-i2p-verify.sh compiles them with our stubs around them. Where that
directory exists, this test runs: our test vectors verify, a flipped signature bit is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.i2p.vectors import PUBLISHED, master_signed, offline_signed

ROOT = Path(__file__).resolve().parents[2]
SOURCES = os.environ.get("JAVA_I2P_SRC")

pytestmark = pytest.mark.skipif(
    not SOURCES or not Path(SOURCES).is_dir() or shutil.which("javac") is None,
    reason="Java I2P's sources not gathered here (JAVA_I2P_SRC; see scripts/java-i2p-verify.sh --help)",
)


def test_java_i2p_verifies_ours_and_refuses_a_flipped_bit(tmp_path: Path) -> None:
    files = {"master": master_signed().encoded, "offline": offline_signed().encoded}
    flipped = bytearray(files["master"])
    flipped[-5] ^= 0x20
    files["flipped"] = bytes(flipped)
    for name, data in files.items():
        (tmp_path / f"{name}.metals").write_bytes(data)
    env = {**os.environ, "JAVA_OPTS": f"-Dverify.now={(PUBLISHED + 60) * 1000}"}
    done = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts" / "java-i2p-verify.sh"),
            "--i2p-src",
            str(SOURCES),
            *(str(tmp_path / f"{n}.metals") for n in files),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    verdict = {Path(line["file"]).stem: line.get("verifySignature") for line in lines}
    assert verdict == {"master": True, "offline": True, "flipped": False}, done.stdout + done.stderr
    assert done.returncode == 1  # the flipped one
