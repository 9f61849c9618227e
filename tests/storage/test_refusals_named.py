"""Each refusal of a damaged or busy log store in its own words, so the operator knows which it is: a
file another process holds, a B-tree SQLite's own check finds damaged, a format record that does not
match."""

from __future__ import annotations

from pathlib import Path

import pytest

from garlicfarm.storage.sqlite import SQLiteLogStore
from tests.storage.test_sqlite import filled, raw, refused

PAGE = 4096


def test_a_store_another_process_holds_is_named_locked(tmp_path: Path) -> None:
    path = tmp_path / "node.db"
    with SQLiteLogStore(path):
        refused(path, r"is locked \(another node using it\?\): database is locked$")


def test_a_damaged_page_is_found_by_sqlites_own_check(tmp_path: Path) -> None:
    """A B-tree page whose free-space pointer runs off the page: SQLite's quick_check names it."""
    path = tmp_path / "node.db"
    filled(path, count=300)
    data = bytearray(path.read_bytes())
    data[2 * PAGE + 5 : 2 * PAGE + 7] = b"\x00\x01"
    path.write_bytes(bytes(data))
    refused(path, r"is corrupt: \*\*\* in database main \*\*\*")


@pytest.mark.parametrize(("key", "value"), [("format", "something else"), ("version", "1")])
def test_a_format_record_that_does_not_match_is_refused(tmp_path: Path, key: str, value: str) -> None:
    path = tmp_path / "node.db"
    filled(path, count=3)
    raw(path).execute("UPDATE garlicfarm_meta SET value = ? WHERE key = ?", (value, key)).connection.close()
    refused(path, "is corrupt: format record")
