"""A member's log changed on disk, on a live 3-node TLS farm of real processes.

Changed without its checksum, the member refuses to start (one line naming the file and the entry).
Changed with a matching checksum (whoever writes the data directory can compute one), Raft cannot see
it: the entry keeps its index and term. The cross-member consistency check does: every member reports
a digest of its committed log with its status, and the members compare (docs/security.md).
Before: a node served a log that differed from its peers' for 7 minutes without a word."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from garlicfarm.storage.interface import RECOVERY
from garlicfarm.storage.sqlite import entry_crc
from tests.e2e.procfarm import GARLICFARM
from tests.hostile.farm import WAIT, HostileFarm, eventually, node_dir

pytestmark = pytest.mark.e2e

VICTIM = 3


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileFarm]:
    farm = HostileFarm(tmp_path_factory.mktemp("divergence") / "farm", 3)
    for node in range(1, 4):  # status reports (and with them the members' digests) every second
        toml = Path(farm.config(node))
        toml.write_text(toml.read_text().replace("[app]\n", "[app]\ninterval = 1\n"))
    farm.start_all()
    try:
        yield farm
    finally:
        farm.stop_all()


def _written(farm: HostileFarm, by: str) -> int:
    """Entries of the test's own, committed on every member; the index of the last."""
    leader = farm.wait_for_leader()
    index = 0
    for n in range(5):
        index = farm.submit(leader, {"written": n, "by": by})
    farm.wait_for_commit(index, [1, 2, 3])
    return index


def _stop(farm: HostileFarm, node: int) -> None:
    proc = farm.procs.pop(node)
    proc.terminate()
    proc.wait(timeout=WAIT)


def _rewrite(log_db: Path, old: bytes, new: bytes, *, fix_checksum: bool) -> int:
    """Replace ``old`` by ``new`` in the one entry holding it; the entry's index."""
    with contextlib.closing(sqlite3.connect(log_db)) as db, db:
        rows = db.execute("SELECT idx, term, value_type, value FROM entries").fetchall()
        [(idx, term, kind, value)] = [row for row in rows if old in row[3]]
        changed = value.replace(old, new)
        crc = (
            entry_crc(idx, term, kind, changed)
            if fix_checksum
            else db.execute("SELECT crc FROM entries WHERE idx = ?", (idx,)).fetchone()[0]
        )
        db.execute("UPDATE entries SET value = ?, crc = ? WHERE idx = ?", (changed, crc, idx))
    return int(idx)


def _divergence(farm: HostileFarm, node: int) -> list[str]:
    status = farm.status(node)
    return [] if status is None else list(status.get("log_divergence", []))


def test_a_member_whose_committed_log_was_changed_is_named_by_every_member(farm: HostileFarm) -> None:
    _written(farm, "first")
    assert all(_divergence(farm, node) == [] for node in (1, 2, 3))
    _stop(farm, VICTIM)
    index = _rewrite(
        node_dir(farm, VICTIM) / "log.db",
        b'"written":2,"by":"first"',
        b'"written":7,"by":"first"',
        fix_checksum=True,
    )
    farm.start(VICTIM)

    def named() -> bool:
        return all(
            any(f"server {VICTIM}'s committed log differs" in text for text in _divergence(farm, node))
            for node in (1, 2)
        ) and bool(_divergence(farm, VICTIM))

    try:
        eventually(named, "both healthy members name the changed member, and it names them")
    except AssertionError as e:
        seen = {node: (farm.status(node) or {}).get("log_checks") for node in (1, 2, 3)}
        raise AssertionError(f"{e}; checks {seen}; {[_divergence(farm, n) for n in (1, 2, 3)]}") from None
    for node in (1, 2, VICTIM):
        [text, *_] = _divergence(farm, node)
        at = int(text.split(" at index ")[1].split(" ")[0])
        assert at >= index  # the first index compared after the change
    logs = {node: (farm.dir / f"node-{node}.log").read_text(errors="replace") for node in (1, 2)}
    for node, log in logs.items():
        assert f"ALARM: server {VICTIM}'s committed log differs from this server's" in log, node
    # the farm goes on: a divergence is an alarm for the operator, not a stop
    _written(farm, "after")


def test_a_member_whose_log_was_changed_without_its_checksum_refuses_to_start(farm: HostileFarm) -> None:
    _written(farm, "second")
    _stop(farm, VICTIM)
    log_db = node_dir(farm, VICTIM) / "log.db"
    index = _rewrite(log_db, b'"written":3,"by":"second"', b'"written":8,"by":"second"', fix_checksum=False)
    result = subprocess.run(
        [*GARLICFARM, "run", "--config", farm.config(VICTIM)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"garlicfarm run: {log_db}: entry {index} fails its checksum"), line
    assert line.endswith(RECOVERY), line
