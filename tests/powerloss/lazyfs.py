"""LazyFS mounts for power-loss tests: a FUSE file system that keeps what was written but not fsynced in
its own cache and drops it on ``lazyfs::clear-cache``, as a power loss drops a disk's volatile cache.

Built from third_party/lazyfs by scripts/build-lazyfs.sh (Debian's packages only, offline)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONFIG = """\
[faults]
fifo_path = "{fifo}"
[cache]
apply_eviction = false
[cache.simple]
custom_size = "256mb"
blocks_per_page = 1
[filesystem]
log_all_operations = false
logfile = ""
"""


def lazyfs_binary() -> Path:
    """The LazyFS binary, built if needed; the test is skipped (failed in CI) when it cannot be."""
    problem = None
    if not Path("/dev/fuse").exists():
        problem = "no /dev/fuse on this machine"
    elif os.geteuid() != 0:
        problem = "mounting LazyFS needs root here"
    else:
        result = subprocess.run(
            ["bash", str(REPO / "scripts" / "build-lazyfs.sh")],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if result.returncode == 0:
            return Path(result.stdout.strip().splitlines()[-1])
        problem = f"LazyFS did not build: {result.stderr.strip()[-2000:]}"
    if os.environ.get("CI"):
        pytest.fail(problem)
    pytest.skip(problem)


class LazyFS:
    """One mount: ``mount`` shows ``disk``'s files through LazyFS's cache."""

    def __init__(self, binary: Path, disk: Path, mount: Path, work: Path) -> None:
        self.binary, self.disk, self.mount, self.work = binary, disk, mount, work
        self.fifo = work / "faults.fifo"
        self.log = work / "lazyfs.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        for d in (self.disk, self.mount, self.work):
            d.mkdir(parents=True, exist_ok=True)
        config = self.work / "lazyfs.toml"
        config.write_text(CONFIG.format(fifo=self.fifo))
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    str(self.binary),
                    str(self.mount),
                    "--config-path",
                    config.name,  # relative: LazyFS takes a path holding "-o" (pytest-of-root) for an option
                    "-o",
                    "modules=subdir",
                    "-o",
                    f"subdir={self.disk}",
                    "-f",
                ],
                stdout=log,
                stderr=log,
                cwd=self.work,
                start_new_session=True,
            )
        deadline = time.monotonic() + 30
        while not (self.mounted() and self.fifo.exists()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"LazyFS did not mount {self.mount}: {self.log.read_text()[-2000:]}")
            time.sleep(0.05)

    def mounted(self) -> bool:
        return f" {self.mount} fuse.lazyfs " in Path("/proc/mounts").read_text()

    def clear_cache(self) -> None:
        """Drop every write not fsynced yet: what a power loss does to a disk's cache."""
        said = self.log.read_text(errors="replace").count("cache is cleared")
        with open(self.fifo, "w") as fifo:
            fifo.write("lazyfs::clear-cache\n")
        deadline = time.monotonic() + 30
        while self.log.read_text(errors="replace").count("cache is cleared") <= said:
            if time.monotonic() > deadline:
                raise AssertionError(f"LazyFS did not clear its cache: {self.log.read_text()[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.mounted():
            umount = shutil.which("fusermount3") or "fusermount3"
            if subprocess.run([umount, "-u", str(self.mount)], check=False, capture_output=True).returncode:
                subprocess.run(["umount", "-l", str(self.mount)], check=False, capture_output=True)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
