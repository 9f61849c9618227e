"""Catch-up: a new member joins a farm whose log holds ENTRIES entries; seconds and MB/s to catch up.

    python -m bench.catchup [--entries 1000000] [--snapshot-every N]

Four nodes are initialised; node 4 is taken out of the founding configuration, the three others
commit ENTRIES 100-byte Application entries (batches of 500 per ClientRequest), then node 4 starts
empty and is added with AddServerRequest. The leader first brings it up to date (SyncLog; or
InstallSnapshot then SyncLog when the log was compacted — ``--snapshot-every`` decides which), then
commits the new configuration. Timed: AddServerRequest sent -> node 4's commit index reaches the
filled log. MB/s counts the encoded entries it received.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from twisted.internet import task
from twisted.internet.defer import Deferred

from bench.farm_bench import PAYLOAD, log_warnings_to_stderr, pipelined
from bench.tuning import set_options
from garlicfarm.config import load_config
from garlicfarm.net.client import FarmClient
from garlicfarm.wire import AddServerRequest, Application, ClientRequest, ClusterServer, LogEntry, encode
from tests.e2e.procfarm import ProcFarm

BATCH = 500
#: bytes one entry takes on the wire (term, value type, length and the 100-byte value)
ENTRY_BYTES = len(encode(ClientRequest(entries=(LogEntry(1, Application(PAYLOAD)),)))) - len(
    encode(ClientRequest(entries=()))
)


async def run(reactor: Any, farm: ProcFarm, entries: int) -> dict[str, Any]:
    client = FarmClient(reactor, load_config(farm.config(1)), timeout=3600)
    status = await client.status()
    leader = await client.connect(client.endpoints[status["leader"]])
    filled = 0
    started = time.perf_counter()
    while filled < entries:
        if leader.lost:  # a leader change (the machine is shared): find the new one
            status = await client.status()
            leader = await client.connect(client.endpoints[status["leader"]])
        result = await pipelined(leader, 2.0, 32, BATCH)
        filled += int(result["count"])
        print(f"filled {filled:,} entries", file=sys.stderr)
    fill_seconds = time.perf_counter() - started
    target = (await client.status())["commit_index"]
    endpoint = f"tcp://127.0.0.1:{farm.base + 3}"
    farm.start(4)
    await task.deferLater(reactor, 1.0)  # the process is up and listening
    started = time.perf_counter()
    added = Deferred.fromCoroutine(
        client.request_leader(
            AddServerRequest(entries=(LogEntry(0, ClusterServer(4, endpoint)),)), "add server"
        )
    )
    while True:
        try:
            caught_up = (await client.status(endpoint))["commit_index"] >= target
        except Exception:
            caught_up = False
        if caught_up:
            break
        await task.deferLater(reactor, 0.1)
    seconds = time.perf_counter() - started
    answer = await added
    megabytes = target * ENTRY_BYTES / 1e6
    return {
        "entries": target,
        "fill_seconds": fill_seconds,
        "catch_up_seconds": seconds,
        "megabytes": megabytes,
        "mb_per_s": megabytes / seconds,
        "entries_per_s": target / seconds,
        "added": bool(answer.accepted),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument(
        "--snapshot-every", type=int, default=10**9, help="compact the log every N entries (default: never)"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    log_warnings_to_stderr()
    box: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        farm = ProcFarm(Path(tmp) / "farm", 4)
        for i in range(1, 5):
            path = Path(farm.config(i))
            path.write_text(path.read_text().replace(f'\n4 = "tcp://127.0.0.1:{farm.base + 3}"', ""))
            set_options(path, "app", interval=3600)
            set_options(path, "raft", snapshot_every=args.snapshot_every)
        for i in (1, 2, 3):
            farm.start(i)
        try:
            farm.wait_for_leader()

            async def go(reactor: Any) -> None:
                box.update(await run(reactor, farm, args.entries))

            task.react(lambda reactor: Deferred.fromCoroutine(go(reactor)), [])
        except SystemExit:
            pass
        finally:
            farm.stop_all()
    result = {"snapshot_every": args.snapshot_every, **box}
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
