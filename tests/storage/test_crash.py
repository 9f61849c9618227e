"""Real processes, real disk: SIGKILL a writer at random moments; nothing it acknowledged may be lost."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from garlicfarm.storage.interface import HardState, SnapshotMeta
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.sqlite import SQLiteLogStore
from tests.storage.crash_writer import SNAPSHOT_CONFIG, entry_for

WRITER = Path(__file__).with_name("crash_writer.py")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")


def spawn(*args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.Popen(
        [sys.executable, str(WRITER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )


def apply(model: MemoryLogStore, line: str) -> None:
    """Replay one reported write on the model (the same call the writer made)."""
    kind, *numbers = line.split()
    if kind == "save":
        term, voted_for, commit, entries_from, count = map(int, numbers)
        entries = [entry_for(entries_from + i, term) for i in range(count)]
        model.save(HardState(term, voted_for, commit), entries_from, entries)
    else:
        assert kind == "compact", line
        index, term = map(int, numbers)
        model.compact(SnapshotMeta(index, term, SNAPSHOT_CONFIG))


def replay(model: MemoryLogStore, output: str) -> tuple[MemoryLogStore, MemoryLogStore | None, int]:
    """(state after every acknowledged write, state if the in-flight write landed too, acks)."""
    lines = output.split("\n")[:-1]  # a line cut short by the kill is dropped
    acks = 0
    for i in range(0, len(lines) - 1, 2):
        assert lines[i + 1] == "ack", lines[i : i + 2]
        apply(model, lines[i])
        acks += 1
    if len(lines) % 2 == 0:
        return model, None, acks
    landed = model.copy()
    apply(landed, lines[-1])
    return model, landed, acks


def run_until_acks(proc: subprocess.Popen[str], acks: int, deadline: float) -> str:
    """Read the writer's report until it has acknowledged ``acks`` writes: the kill then lands
    mid-stream however fast or loaded the machine is (no sleep whose worth depends on CPU speed)."""
    assert proc.stdout is not None
    seen, out = 0, []
    while seen < acks and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        out.append(line)
        seen += line == "ack\n"
    return "".join(out)


@pytest.mark.timeout(120)
def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"  # the real disk, not tmpfs: fsync matters here
    rng = random.Random(150)
    model = MemoryLogStore()
    total_acks = 0
    for round_ in range(12):
        proc = spawn(str(path), str(rng.randrange(2**32)))
        if round_ < 2:  # early rounds: killed during start-up, before or while the store opens
            time.sleep(rng.uniform(0.0, 0.1))
            head = ""
        else:  # then: after a random number of acknowledged writes, at a random moment after it
            head = run_until_acks(proc, rng.randrange(1, 40), time.monotonic() + 60)
            time.sleep(rng.uniform(0.0, 0.005))
        proc.send_signal(signal.SIGKILL)
        assert proc.stdout is not None and proc.stderr is not None
        output = proc.stdout.read()  # the rest, through the same buffer the head was read from
        errors = proc.stderr.read()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL, f"writer died by itself:\n{errors}"
        model, landed, acks = replay(model, head + output)
        total_acks += acks
        with SQLiteLogStore(path) as store:
            on_disk = store.load()
        if landed is not None and on_disk == landed.load():
            model = landed  # the in-flight write reached the disk before the kill
        assert on_disk == model.load(), f"round {round_}: acknowledged state lost after {acks} acks"
    assert total_acks >= 10, "the writer acknowledged every write it was waited for"
    assert model.load().entries, "the log should not be empty"


def test_lock_holds_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    with SQLiteLogStore(path) as store:
        store.save(HardState(1), 1, [entry_for(1, 1)])
        proc = spawn(str(path), "1")
        _, errors = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "is locked" in errors
    assert str(path) in errors
