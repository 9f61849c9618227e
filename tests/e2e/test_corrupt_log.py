"""A node whose log.db was changed on disk does not start: one line on stderr, exit status 1.

Regression: one committed entry rewritten in place in log.db (same length) and the node started without
a word, serving a log that differed from its peers'.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from garlicfarm.storage.interface import RECOVERY, HardState
from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire.payloads import Application, LogEntry
from tests.e2e.procfarm import cli, free_base_port

pytestmark = pytest.mark.e2e


def test_garlicfarm_run_refuses_a_corrupted_log_in_one_line(tmp_path: Path) -> None:
    farm = tmp_path / "farm"
    cli("init", str(farm), "--nodes", "1", "--base-port", str(free_base_port(1)))
    log_db = farm / "node-1" / "log.db"
    log_db.parent.mkdir(exist_ok=True)
    with SQLiteLogStore(log_db) as store:
        entries = [LogEntry(1, Application(f"entry-{i:05}-payload".encode())) for i in range(1, 31)]
        store.save(HardState(1, 1, 30), 1, entries)
    raw = bytearray(log_db.read_bytes())
    at = raw.find(b"entry-00017-payload")
    raw[at + 6 : at + 11] = b"00018"  # the same length, in place
    log_db.write_bytes(bytes(raw))

    result = cli("run", "--config", str(farm / "node-1.toml"), check=False, timeout=60)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    head = re.escape(f"garlicfarm run: {log_db}: entry 17 fails its checksum (stored crc ")
    tail = re.escape(f"): the file is corrupt; {RECOVERY}")
    assert re.fullmatch(head + "0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}" + tail, lines[0]), lines[0]
    assert "Traceback" not in result.stderr
