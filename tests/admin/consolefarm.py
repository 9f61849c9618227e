"""A real farm of node processes (tests/e2e/procfarm.py) with the admin console on each node."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.procfarm import ProcFarm, free_base_port


class ConsoleFarm(ProcFarm):
    """``ProcFarm`` plus an ``[admin]`` table per node: console on loopback, samples every second,
    status reports every ``report_interval`` seconds (so the page fills quickly)."""

    def __init__(self, directory: Path, nodes: int, report_interval: float = 2.0) -> None:
        super().__init__(directory, nodes)
        self.admin_base = free_base_port(nodes)
        for i in range(1, nodes + 1):
            path = Path(self.config(i))
            text = path.read_text().replace("\n[app]\n", f"\n[app]\ninterval = {report_interval}\n", 1)
            assert f"interval = {report_interval}" in text  # init writes an [app] table
            path.write_text(text + f"\n[admin]\nlisten = {self.admin_port(i)}\nsample_interval = 1\n")

    def admin_port(self, i: int) -> int:
        return self.admin_base + i - 1

    def admin_url(self, i: int) -> str:
        return f"https://127.0.0.1:{self.admin_port(i)}/"

    def password(self) -> str:
        return (self.dir / "credentials").read_text().strip()
