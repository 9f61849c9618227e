"""A node that stops on a failure while running (here: a write to its log store fails) ends its
process with status 1 and one line on stderr, under `garlicfarm run` and under `twistd -n garlicfarm`
alike (twistd ends with status 0 whatever its application did, unless told)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from garlicfarm.chaos.procs import free_base_port
from garlicfarm.farminit import FarmSpec, create_farm

#: loaded by the node's interpreter (PYTHONPATH): the store's writes fail once FAIL_FILE exists
INJECT = """
import os
from garlicfarm.storage import StorageError
from garlicfarm.storage.sqlite import SQLiteLogStore

_save = SQLiteLogStore.save

def save(self, *args, **kwargs):
    if os.path.exists(os.environ["GARLICFARM_FAIL_FILE"]):
        raise StorageError("injected: the disk is full")
    return _save(self, *args, **kwargs)

SQLiteLogStore.save = save
"""

COMMANDS = {
    "run": ([sys.executable, "-m", "garlicfarm", "run", "--config"], "garlicfarm run: "),
    "twistd": (
        [
            sys.executable,
            "-c",
            "import sys; from twisted.scripts.twistd import run; sys.argv[0] = 'twistd'; run()",
            "-n",
            "garlicfarm",
            "--config",
        ],
        "twistd garlicfarm: ",
    ),
}


@pytest.mark.e2e
@pytest.mark.parametrize("how", sorted(COMMANDS))
def test_a_node_failure_ends_the_process_with_status_1_and_one_line(tmp_path: Path, how: str) -> None:
    create_farm(FarmSpec(tmp_path, 1, base_port=free_base_port(1)), force=True)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(INJECT)
    fail = tmp_path / "fail-now"
    env = dict(os.environ, GARLICFARM_FAIL_FILE=str(fail))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hooks), env.get("PYTHONPATH", "")]))
    command, prefix = COMMANDS[how]
    node = subprocess.Popen(
        [*command, str(tmp_path / "node-1.toml")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while b"leader" not in _status(tmp_path):
            assert node.poll() is None and time.monotonic() < deadline, "the node did not lead"
            time.sleep(0.3)
        fail.touch()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "garlicfarm",
                "submit",
                "--timeout",
                "3",
                "--config",
                str(tmp_path / "node-1.toml"),
                "{}",
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
        out, err = node.communicate(timeout=30)
    finally:
        if node.poll() is None:
            node.kill()
            node.communicate()
    assert node.returncode == 1, out + err
    # the last line on stderr (`garlicfarm run` logs there too; twistd -n logs on stdout)
    assert err.strip().splitlines()[-1] == f"{prefix}node 1 stopped: injected: the disk is full", err


def _status(directory: Path) -> bytes:
    result = subprocess.run(
        [sys.executable, "-m", "garlicfarm", "status", "--brief", "--config", str(directory / "node-1.toml")],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return result.stdout
