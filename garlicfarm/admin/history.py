"""The last hour of each member's health, in memory, for the console's small charts.

A sample is taken on an interval from the farm overview (so from the status reports the replicated
state holds, plus the leader's view of replication lag). Nothing here touches the reactor: the caller
passes the time and the overview.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

#: health levels, worst last; the page colours them
LEVELS = ("ok", "lagging", "stale", "down")


@attrs.frozen
class Sample:
    t: float  # seconds (reactor time)
    level: int  # index into LEVELS
    lag: int | None  # entries behind the leader's commit index (known on the leader only)
    age: float | None  # seconds since the member's last status report

    def to_json(self) -> list[Any]:
        return [round(self.t, 3), self.level, self.lag, None if self.age is None else round(self.age, 1)]


class HealthHistory:
    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._samples: dict[int, deque[Sample]] = {}

    def record(self, now: float, members: Iterable[Mapping[str, Any]]) -> None:
        """One sample per member of an overview's ``members`` list; forgets members that left."""
        present = set()
        for member in members:
            server = int(member["id"])
            present.add(server)
            samples = self._samples.setdefault(server, deque(maxlen=self.keep))
            samples.append(
                Sample(now, LEVELS.index(member["health"]), member.get("lag"), member.get("last_status_age"))
            )
        for gone in set(self._samples) - present:
            del self._samples[gone]

    def samples(self, server: int) -> list[Sample]:
        return list(self._samples.get(server, ()))

    def to_json(self) -> dict[str, list[list[Any]]]:
        return {str(k): [s.to_json() for s in v] for k, v in sorted(self._samples.items())}
