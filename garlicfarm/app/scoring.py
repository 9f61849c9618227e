"""The common algorithm: who publishes the Meta LS2, and what it holds. Pure and deterministic.

Every server runs it over the same committed log and reaches the same answer; the Spark pipeline
imports this module to compute the same answer offline. Integer arithmetic only, no clock: time is the
log's own (:func:`farm_time`), so replaying a log gives the same result anywhere.

The farm's time is the date that a quorum of the members has reached: the ``n // 2 + 1``-th newest
of the members' latest record dates (a member with no record counts as 0), never going back. No
single member — a wrong clock or a forged record dated 2100 — can move it while the farm has two or
more members, just as no single member can commit an entry. A record dated more than
``MAX_AHEAD_MS`` past the farm's time is not believed: it is not fresh, and the member's next record
replaces it (docs/protocol.md, "The farm's time").

Publisher: among *eligible* members — a configuration member whose latest record is fresh (at
most ``FRESH_MS`` older than the log's time), whose ``publishConfig`` is not ``off`` and whose router
is healthy (its ``netStatus`` is not an ``ERROR...`` one: i2pd reports ``UNKNOWN`` in normal
operation when it cannot test its reachability) — the one with the best score; ``publishConfig =
on`` ranks above ``auto``. Hysteresis: the current publisher keeps the role while it is eligible and
its score is within ``HYSTERESIS_PERCENT`` of the best, so close scores do not make the role flap.
Ties go to the lowest id.

Score (higher is better):
    10 per hour of router uptime (at most a week)
  + participating tunnels / 10 (at most 500)
  + current bandwidth in KB/s / 10 (at most 1000)
  - job lag in ms / 10 (at most 1000)

Meta LS2 contents: the destinations of fresh members with healthy routers, except excluded ones and
those known dead (tunnels configured, none current; a router that reports no tunnel numbers at all,
as I2PControl cannot, leaves them in at the lowest weight), each weighted 1..100 by its tunnels,
bandwidth and uptime; the best ``MAX_LEASES`` by weight (ties by destination), heaviest first. A
destination reported by several members keeps its highest weight.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from garlicfarm.app.schema import Destination, StatusRecord

FRESH_MS = 180_000
#: a record dated further than this past the farm's time is not believed (a wrong clock or a forgery)
MAX_AHEAD_MS = 600_000
HYSTERESIS_PERCENT = 20
MAX_LEASES = 16


@attrs.frozen
class Lease:
    destination: str
    weight: int


def healthy(record: StatusRecord) -> bool:
    return not record.router.netStatus.startswith("ERROR")


def fresh(record: StatusRecord, now: int) -> bool:
    return -MAX_AHEAD_MS <= now - record.date <= FRESH_MS


def ahead(record: StatusRecord, now: int) -> bool:
    """Dated too far past the farm's time to be believed."""
    return record.date - now > MAX_AHEAD_MS


def farm_time(latest: Mapping[int, StatusRecord], members: frozenset[int], previous: int) -> int:
    """The date a quorum of ``members`` has reached (see the module's docstring); never below
    ``previous``. Without a configuration yet, every member with a record counts."""
    voters = members or frozenset(latest)
    if not voters:
        return previous
    dates = sorted((latest[m].date if m in latest else 0 for m in voters), reverse=True)
    return max(previous, dates[len(dates) // 2])


def score(record: StatusRecord) -> int:
    router = record.router
    return (
        min(router.uptime // 3_600_000, 168) * 10
        + min(router.participatingTunnels, 5000) // 10
        + min(router.bandwidthCurrent // 1024, 10_000) // 10
        - min(router.jobLag, 10_000) // 10
    )


def rank(record: StatusRecord) -> tuple[int, int]:
    """What the publisher choice maximises: an operator's ``on`` first, then the score."""
    return (1 if record.meta.publishConfig == "on" else 0, score(record))


def eligible(record: StatusRecord, now: int, members: frozenset[int]) -> bool:
    return (
        record.id in members and fresh(record, now) and record.meta.publishConfig != "off" and healthy(record)
    )


def choose_publisher(
    latest: Mapping[int, StatusRecord], now: int, members: frozenset[int], current: int | None
) -> int | None:
    candidates = [r for r in latest.values() if eligible(r, now, members)]
    if not candidates:
        return None
    best = max(candidates, key=lambda r: (rank(r), -r.id))
    incumbent = latest.get(current) if current is not None else None
    if incumbent is not None and eligible(incumbent, now, members):
        on_best, score_best = rank(best)
        on_current, score_current = rank(incumbent)
        close = score_current * 100 >= score_best * (100 - HYSTERESIS_PERCENT) or score_best <= 0
        if on_current >= on_best and close:
            return incumbent.id
    return best.id


def weight(destination: Destination) -> int:
    value = (
        min(destination.tunnelsCurrent, 16) * 4
        + min(destination.bandwidthCurrent // 1024, 1000) // 40
        + min(destination.uptime // 3_600_000, 24)
    )
    return max(1, min(100, value))


def meta_ls(latest: Mapping[int, StatusRecord], now: int, excluded: Iterable[str]) -> tuple[Lease, ...]:
    banned = set(excluded)
    best: dict[str, int] = {}
    for record in latest.values():
        if not (fresh(record, now) and healthy(record)):
            continue
        for destination in record.destinations:
            dead = destination.tunnelsConfigured > 0 and destination.tunnelsCurrent <= 0
            if destination.destination in banned or dead:
                continue
            w = weight(destination)
            if w > best.get(destination.destination, 0):
                best[destination.destination] = w
    ordered = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    return tuple(Lease(d, w) for d, w in ordered[:MAX_LEASES])
