"""How long ago each member last reported, and how far this node's clock is off the farm's, judged
without trusting this node's wall clock (sans-I/O: every time is passed in).

A member's report carries the date of *its* clock. Comparing that with this node's wall clock makes a
node whose clock is two hours ahead see every healthy member as two hours silent. So ages are measured
on the farm's time instead (:func:`garlicfarm.app.scoring.farm_time`, the date a quorum of members has
reached, from the log): the farm's time now is estimated as its latest value plus the time elapsed on
this node's *monotonic* clock since it moved, and a member's age is that minus its latest report's date.
This also keeps counting when the farm's time stands still (a farm gone silent: every member ages).
Before the farm has a time (no quorum has reported yet) the age is the monotonic time since this node
applied the member's latest report.

The estimate runs behind the true time by up to about one report interval (the farm's time is the
quorum's *older* date); the console's thresholds are several intervals, so that only delays "stale".

This node's clock skew is judged from the log alone: each time one of its own reports is applied, the
report's date (this node's wall clock when it reported) minus the farm's time then. The quorum's date
trails by up to one interval, so a skew counts as wrong past :func:`skew_threshold`. A log replayed at
start gives the skew of the last report before it, until the next report.
"""

from __future__ import annotations

#: this node's clock is reported as off the farm's time beyond this (or two report intervals)
CLOCK_SKEW_S = 300.0


def skew_threshold(interval: float) -> float:
    """Seconds of skew that count as a wrong clock: the farm's time trails by up to an interval."""
    return max(CLOCK_SKEW_S, 2 * interval)


class Liveness:
    """Fed with every applied status record (:meth:`heard`) and the farm's time as it moves."""

    def __init__(self, own_id: int) -> None:
        self.own_id = own_id
        #: the farm's time (ms) last seen, and the monotonic time (s) when it was first seen at that value
        self.farm_ms = 0
        self._farm_seen_at: float | None = None
        #: monotonic time (s) this node applied each member's latest report
        self._heard_at: dict[int, float] = {}
        #: this node's report date minus the farm's time, at its latest applied report (ms)
        self.skew_ms: int | None = None

    def observe(self, farm_ms: int, local: float) -> None:
        """The farm's time is ``farm_ms`` at monotonic time ``local`` (seconds)."""
        if farm_ms != self.farm_ms or self._farm_seen_at is None:
            self.farm_ms, self._farm_seen_at = farm_ms, local

    def heard(self, member: int, date_ms: int, farm_ms: int, local: float) -> None:
        """A status record of ``member`` dated ``date_ms`` was applied; the farm's time is now ``farm_ms``."""
        self.observe(farm_ms, local)
        self._heard_at[member] = local
        if member == self.own_id and farm_ms > 0:
            self.skew_ms = date_ms - farm_ms

    def farm_now_ms(self, local: float) -> float | None:
        """The farm's time now, estimated; None before the farm has one."""
        if self.farm_ms <= 0 or self._farm_seen_at is None:
            return None
        return self.farm_ms + max(0.0, local - self._farm_seen_at) * 1000

    def age_s(self, member: int, date_ms: int | None, local: float) -> float | None:
        """Seconds since ``member``'s latest report (dated ``date_ms``; None: never reported)."""
        if date_ms is None:
            return None
        farm_now = self.farm_now_ms(local)
        if farm_now is not None:
            return max(0.0, (farm_now - date_ms) / 1000)
        heard = self._heard_at.get(member)
        return None if heard is None else max(0.0, local - heard)

    def clock_skew_s(self) -> float | None:
        """This node's clock minus the farm's time, in seconds (positive: ahead); None if unknown."""
        return None if self.skew_ms is None else self.skew_ms / 1000
