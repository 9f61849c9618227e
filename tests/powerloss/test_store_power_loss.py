"""The log store alone through power losses: a writer process on a LazyFS mount is killed at random
moments (during start-up and the store's creation too) and LazyFS then drops all it had not fsynced;
the store reopened must hold every acknowledged write (tests/storage/test_crash.py does the same with
kills only, which cannot see a missing fsync). A store that never fsyncs must fail the same test."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.sqlite import SQLiteLogStore
from tests.powerloss.lazyfs import LazyFS, lazyfs_binary
from tests.storage.test_crash import replay, run_until_acks, spawn

pytestmark = pytest.mark.e2e


def _rounds(tmp_path: Path, *writer_args: str) -> list[str]:
    """Twelve power losses of a writer; what was wrong after each (nothing, for a correct store)."""
    disk = LazyFS(lazyfs_binary(), tmp_path / "disk", tmp_path / "mnt", tmp_path / "lazyfs")
    disk.start()
    problems: list[str] = []
    try:
        path = tmp_path / "mnt" / "power.db"
        rng = random.Random(150)
        model = MemoryLogStore()
        for round_ in range(12):
            proc = spawn(str(path), str(rng.randrange(2**32)), *writer_args)
            if round_ < 3:  # killed during start-up: while the store is created, or opened
                time.sleep(rng.uniform(0.05, 0.4))
                head = ""
            else:
                head = run_until_acks(proc, rng.randrange(1, 40), time.monotonic() + 60)
                time.sleep(rng.uniform(0.0, 0.005))
            proc.send_signal(signal.SIGKILL)
            assert proc.stdout is not None and proc.stderr is not None
            output = proc.stdout.read()
            proc.wait(timeout=10)
            proc.stdout.close()
            proc.stderr.close()
            disk.clear_cache()  # the power loss: what was not fsynced is gone
            model, landed, _ = replay(model, head + output)
            try:
                with SQLiteLogStore(path) as store:
                    on_disk = store.load()
            except Exception as e:  # a store that cannot be opened after a power loss is a failure
                problems.append(f"round {round_}: {e}")
                break
            if landed is not None and on_disk == landed.load():
                model = landed
            if on_disk != model.load():
                problems.append(f"round {round_}: acknowledged writes lost")
                break
    finally:
        disk.stop()
    return problems


@pytest.mark.timeout(300)
def test_acknowledged_writes_survive_power_loss(tmp_path: Path) -> None:
    assert _rounds(tmp_path) == []


@pytest.mark.timeout(300)
def test_a_store_that_never_fsyncs_loses_acknowledged_writes(tmp_path: Path) -> None:
    problems = _rounds(tmp_path, "nofsync")
    assert problems, "a store without fsync survived power loss: this test cannot see a missing fsync"
