"""Run inside a fresh network namespace: a real i2pd with I2CP on, and a 3-node garlicfarm farm (made by
``garlicfarm init``, real processes) whose members publish through that i2pd: ``[publisher] kind =
"i2cp"`` with their transient keys and the master's presigned sessions. Prints, as JSON, which member
the farm chose, what its status says of the Meta LS2, and what i2pd logged.

Started by tests/router/test_i2cp_e2e.py like the other probes.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.router.i2cp_probe import I2CP_CONFIG, I2CP_PORT, TAKEN, TUNNELS
from tests.router.i2pd_probe import START_TIMEOUT, log, start_i2pd, wait_for_port

BASE_PORT = 19301  # a fresh namespace: nothing else listens here
NODES = 3
WAIT = 90.0
GARLICFARM = [sys.executable, "-m", "garlicfarm"]


def configure(farm: Path) -> None:
    for k in range(1, NODES + 1):
        toml = farm / f"node-{k}.toml"
        text = toml.read_text()
        text = re.sub(
            r'kind = "file"\nformat = "binary"\npath = "[^"]*"\n',
            f'kind = "i2cp"\ni2cp = "tcp:127.0.0.1:{I2CP_PORT}"\n'
            f'session = "node-{k}.session"\nexpires = 600\n',
            text,
        )
        assert 'kind = "i2cp"' in text
        toml.write_text(text.replace("\n[app]\n", "\n[app]\ninterval = 1\n", 1))


def status(farm: Path, k: int) -> dict[str, Any] | None:
    done = subprocess.run(
        [*GARLICFARM, "status", "--config", str(farm / f"node-{k}.toml"), "--timeout", "3"],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    return json.loads(done.stdout) if done.returncode in (0, 2) else None  # 2: no leader known


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--i2pd", required=True)
    parser.add_argument("--dir", required=True, type=Path)
    args = parser.parse_args()
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    i2pd = start_i2pd(args.i2pd, args.dir, I2CP_CONFIG, TUNNELS)
    nodes: list[subprocess.Popen[bytes]] = []
    farm = args.dir / "farm"
    try:
        wait_for_port(i2pd, time.monotonic() + START_TIMEOUT, I2CP_PORT)
        subprocess.run(
            [*GARLICFARM, "init", str(farm), "--nodes", str(NODES), "--base-port", str(BASE_PORT)],
            check=True,
            capture_output=True,
        )
        configure(farm)
        for k in range(1, NODES + 1):
            with (farm / f"node-{k}.log").open("wb") as out:
                nodes.append(
                    subprocess.Popen(
                        [*GARLICFARM, "run", "--config", str(farm / f"node-{k}.toml")],
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )
        log("farm started")
        seen: dict[str, Any] = {"publisher": None}
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and seen["publisher"] is None:
            for k in range(1, NODES + 1):
                node = status(farm, k)
                metals = (node or {}).get("app", {}).get("metals") or {}
                if metals.get("state") == "published":
                    seen.update(publisher=k, metals=metals, master=node and node.get("app", {}))
                    break
            time.sleep(0.5)  # real processes starting: poll their status
        i2pd_log = (args.dir / "i2pd.log").read_text(errors="replace")
        seen["i2pd"] = [line for line in i2pd_log.splitlines() if "I2CP" in line or "LeaseSet" in line]
        seen["nodes_alive"] = [n.poll() is None for n in nodes]
        seen["node_logs"] = {
            k: (farm / f"node-{k}.log").read_text(errors="replace")[-1500:] for k in range(1, NODES + 1)
        }
        seen["taken"] = TAKEN in i2pd_log
        print(json.dumps(seen))
        return 0
    finally:
        for n in nodes:
            if n.poll() is None:
                n.send_signal(signal.SIGTERM)
        for n in nodes:
            try:
                n.wait(timeout=15)
            except subprocess.TimeoutExpired:
                n.kill()
        if i2pd.poll() is None:
            i2pd.send_signal(signal.SIGKILL)
        i2pd.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
