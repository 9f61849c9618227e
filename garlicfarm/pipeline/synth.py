"""``garlicfarm synth``: realistic telemetry archives at any scale, in the layout the farm writes.

One archive, as if from one node: ``OUT/date=YYYY-MM-DD/node-<node>.jsonl``, one line per committed
status record, ``{"index", "recorded", "record"}`` (see :mod:`garlicfarm.app.archive`). Farms are
independent logs, so ``index`` counts per farm; it follows the order reports are committed, which is
date order except for stale reports delivered late.

What makes it realistic: members go silent for a while (outages, after which the router restarts and
its uptime starts again from zero), hang and deliver a report minutes late (stale), spend a while in
router error states (no tunnels), and report bandwidth and tunnels that follow a daily curve with noise.
Each member hosts one to three destinations. A small share of lines is broken the way a disk or a buggy
writer breaks them: cut short, not JSON at all, wrong types, bytes that are not UTF-8, an unknown
schema version, nesting deeper than the schema allows, a record larger than it allows.

Deterministic for a seed (each farm draws from its own PRNG seeded by the seed and the farm). Records
are written with plain string formatting: they are compact (defaulted fields left out) but valid
under schema v1. About 900 bytes a record (850 to 950, more with more members a farm): 10 million
records are ~9 GB.
"""

from __future__ import annotations

import datetime
import logging
import math
import random
import re
from collections.abc import Callable
from pathlib import Path

import attrs

from garlicfarm.i2p.destination import Destination
from garlicfarm.i2p.signing import SigningKey
from garlicfarm.i2p.sigtypes import CRYPTO_TYPES

log = logging.getLogger(__name__)

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
STALE_MS = 240_000  # a held report is delivered at least this late: staler than scoring.FRESH_MS

# Events per member per hour of reporting: a member of a week-long archive sees a few of each.
OUTAGE_PER_HOUR = 1 / 60
STALL_PER_HOUR = 1 / 24
ERROR_PER_HOUR = 1 / 36
BAD_SHARE = 0.001

ERROR_STATES = (
    "ERROR_CLOCK_SKEW",
    "ERROR_I2CP",
    "ERROR_SYMMETRIC_NAT",
    "ERROR_UDP_PORT_IN_USE",
    "DISCONNECTED",
)
BAD_KINDS = (
    "truncated",
    "date-string",
    "status-number",
    "not-utf8",
    "id-zero",
    "no-record",
    "destinations-object",
    "publish-config",
    "version",
    "deep",
    "huge",
    "not-json",
)

# Good lines are exactly what the farm's TelemetryArchive writes (record_to_json, keys sorted, every
# field present): tests/pipeline/test_synth.py holds them to it. The bad variants below are made by
# replacing one field.
_PREFIX = '{"index":%d,"record":'
_SUFFIX = ',"recorded":%d}'
_BODY = (
    '{"cluster":"%s","config":{},"date":%d,"destinations":[%s],"id":%d,'
    '"meta":{"destination":null,"lastPublishedLS":null,"lastPublishedTime":0,"publishConfig":"%s",'
    '"publishing":false},'
    '"router":{"bandwidthConfigured":%d,"bandwidthCurrent":%d,"exploratoryTunnels":0,"jobLag":%d,'
    '"lastPublishedRI":null,"netStatus":"%s","participatingTunnels":%d,"uptime":%d},"version":1}'
)
_DEST = (
    '{"bandwidthConfigured":0,"bandwidthCurrent":%d,"blocklist":[],"connectionsConfigured":0,'
    '"connectionsCurrent":0,"destination":"%s","tunnelsConfigured":0,"tunnelsCurrent":%d,"uptime":%d}'
)


@attrs.frozen
class SynthSettings:
    farms: int
    members: int
    days: int
    interval_s: int = 60
    seed: int = 0
    start: datetime.date = datetime.date(2026, 1, 1)
    node: int = 1
    bad_share: float = BAD_SHARE


@attrs.define
class SynthResult:
    records: int = 0  #: valid status records written
    bad: int = 0  #: broken lines written
    files: int = 0
    bytes: int = 0
    bad_kinds: dict[str, int] = attrs.field(factory=dict)


class _Member:
    __slots__ = (
        "bandwidth",
        "destinations",
        "error_until",
        "held",
        "id",
        "net",
        "offset",
        "publish",
        "silent_until",
        "started",
        "status",
        "tunnels",
    )

    def __init__(
        self, cluster: str, member: int, rng: random.Random, start_ms: int, interval_ms: int
    ) -> None:
        self.id = member
        draw = rng.random()
        self.publish = "on" if draw < 0.05 else "off" if draw < 0.13 else "auto"
        # the router has been up for up to a week when the archive begins
        self.started = start_ms - int(rng.random() * 7 * DAY_MS)
        self.net = "FIREWALLED" if rng.random() < 0.2 else "OK"
        self.status = self.net
        self.bandwidth = int(256 * 1024 + rng.random() * 4 * 1024 * 1024)  # bytes/s configured
        self.tunnels = int(200 + rng.random() * 3000)  # typical participating tunnels
        self.destinations = [_leaf(rng) for _ in range(1 + int(rng.random() * 3))]
        self.offset = int(rng.random() * interval_ms / 2)  # each router reports at its own second
        self.silent_until = 0
        self.error_until = 0
        self.held: tuple[int, str] | None = None  # (date, record) of a report delivered late


def _leaf(rng: random.Random) -> str:
    """A real leaf destination's b32 address (an Ed25519 key from the seeded generator): what a member
    reports and what the Meta LS2 names, without the 520 characters of the full destination."""
    key = SigningKey(rng.randbytes(32))
    crypto = rng.randbytes(32)  # any 32 bytes are an X25519 public key
    return Destination.create(key.public, crypto, rng.randbytes(224 + 96), crypto=CRYPTO_TYPES[4]).b32


def _diurnal(phase: float) -> list[float]:
    """Load by hour of day: busier in the operator's evening (``phase`` shifts the peak)."""
    return [1.0 + 0.45 * math.sin(2 * math.pi * (hour - phase) / 24) for hour in range(24)]


class _FarmGenerator:
    """One farm's members and PRNG; :meth:`day` returns that day's lines (index order)."""

    def __init__(self, settings: SynthSettings, farm: int) -> None:
        self.settings = settings
        self.cluster = f"farm-{farm:03d}"
        self.rng = random.Random(f"{settings.seed}:{farm}")  # noqa: S311 - determinism, not secrecy
        self.interval_ms = settings.interval_s * 1000
        start_ms = _day_ms(settings.start)
        self.members = [
            _Member(self.cluster, m, self.rng, start_ms, self.interval_ms)
            for m in range(1, settings.members + 1)
        ]
        self.load = _diurnal(self.rng.random() * 24)
        self.index = 0
        per_report = settings.interval_s / 3600
        self.p_outage = OUTAGE_PER_HOUR * per_report
        self.p_stall = self.p_outage + STALL_PER_HOUR * per_report
        self.p_error = self.p_stall + ERROR_PER_HOUR * per_report

    def day(self, day_ms: int, result: SynthResult) -> list[str]:
        rnd = self.rng.random
        interval = self.interval_ms
        settings = self.settings
        prefix_node = settings.node
        bad_share = settings.bad_share
        cluster = self.cluster
        p_outage, p_stall, p_error = self.p_outage, self.p_stall, self.p_error
        stall_steps = math.ceil(STALE_MS / interval)
        lines: list[str] = []
        for step in range(DAY_MS // interval):
            t = day_ms + step * interval
            load = self.load[(step * interval // HOUR_MS) % 24]
            for m in self.members:
                if t < m.silent_until:
                    continue
                if m.held is not None:
                    self.index += 1
                    lines.append(_PREFIX % self.index + m.held[1] + _SUFFIX % prefix_node)
                    result.records += 1
                    m.held = None
                date = t + m.offset + int(rnd() * 1000)
                event = rnd()
                if event < p_outage:
                    # silent from 5 minutes to ~5 hours; the router restarts when it comes back
                    m.silent_until = t + int(300_000 * 2 ** (rnd() * 6))
                    m.started = m.silent_until + int(rnd() * interval)
                    continue
                if event < p_stall and t + (stall_steps + 3) * interval < day_ms + DAY_MS:
                    # hung: this report is committed only when the router recovers, a few minutes late
                    m.silent_until = t + (stall_steps + int(rnd() * 3)) * interval
                    stale = True
                elif event < p_error:
                    m.error_until = t + int(300_000 + rnd() * 3_300_000)
                    m.status = ERROR_STATES[int(rnd() * len(ERROR_STATES))]
                    stale = False
                else:
                    stale = False
                if t >= m.error_until:
                    m.status = "TESTING" if rnd() < 0.002 else m.net
                healthy = not (m.status.startswith("ERROR") or m.status == "DISCONNECTED")
                uptime = max(0, date - m.started)
                noise = 0.8 + 0.4 * rnd()
                bandwidth = int(m.bandwidth * 0.35 * load * noise) if healthy else int(rnd() * 2048)
                tunnels = int(m.tunnels * load * noise) if healthy else 0
                lag = int(rnd() * rnd() * 400) if rnd() < 0.97 else int(1000 + rnd() * 9000)
                dests = ",".join(
                    [
                        _DEST % (int(bandwidth * 0.05), d, (2 + int(rnd() * 5)) if healthy else 0, uptime)
                        for d in m.destinations
                    ]
                )
                body = _BODY % (
                    cluster,
                    date,
                    dests,
                    m.id,
                    m.publish,
                    m.bandwidth,
                    bandwidth,
                    lag,
                    m.status,
                    tunnels,
                    uptime,
                )
                if stale:
                    m.held = (date, body)
                    continue
                self.index += 1
                if rnd() < bad_share:
                    kind = BAD_KINDS[int(rnd() * len(BAD_KINDS))]
                    lines.append(_break(kind, self.index, prefix_node, body, date, m.id, m.status))
                    result.bad += 1
                    result.bad_kinds[kind] = result.bad_kinds.get(kind, 0) + 1
                else:
                    lines.append(_PREFIX % self.index + body + _SUFFIX % prefix_node)
                    result.records += 1
        return lines


def _break(kind: str, index: int, node: int, body: str, date: int, member: int, status: str) -> str:
    """A broken line of one ``kind`` (a lone surrogate stands for a byte that is not UTF-8)."""
    prefix, suffix = _PREFIX % index, _SUFFIX % node
    if kind == "truncated":
        line = prefix + body + suffix
        return line[: len(line) // 2]
    if kind == "not-json":
        return "<html><body>502 Bad Gateway</body></html>"
    if kind == "no-record":
        return f'{{"index":{index},"recorded":{node}}}'
    edits: dict[str, Callable[[str], str]] = {
        "date-string": lambda b: b.replace(f'"date":{date},', f'"date":"{date}",', 1),
        "status-number": lambda b: b.replace(f'"netStatus":"{status}"', '"netStatus":7', 1),
        "not-utf8": lambda b: b.replace('"cluster":"', '"cluster":"\udcff', 1),
        "id-zero": lambda b: b.replace(f'"id":{member},', '"id":0,', 1),
        "destinations-object": lambda b: _DESTINATIONS.sub(r'"destinations":{"list":[\1]},"id"', b, 1),
        "publish-config": lambda b: b.replace('"publishConfig":"', '"publishConfig":"sometimes-', 1),
        "version": lambda b: b.replace('"version":1}', '"version":2}', 1),
        # deeper than schema.MAX_DEPTH, in the free-form config section
        "deep": lambda b: b.replace('"config":{}', '"config":' + '{"a":' * 40 + "1" + "}" * 40, 1),
        # more than schema.MAX_RECORD_BYTES
        "huge": lambda b: b.replace('"config":{}', '"config":{"pad":"' + "x" * 70_000 + '"}', 1),
    }
    return prefix + edits[kind](body) + suffix


_DESTINATIONS = re.compile(r'"destinations":\[(.*?)\],"id"')


def _day_ms(day: datetime.date) -> int:
    return int(datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC).timestamp() * 1000)


def generate(
    settings: SynthSettings, out: Path, progress: Callable[[int, int], None] | None = None
) -> SynthResult:
    """Write the archive under ``out`` (existing partition files of the same node are replaced)."""
    if settings.farms < 1 or settings.members < 1 or settings.days < 1:
        raise ValueError("farms, members and days must be at least 1")
    if not 1 <= settings.interval_s <= 3600 or (DAY_MS // 1000) % settings.interval_s:
        raise ValueError("the interval must divide a day and be from 1 to 3600 seconds")
    result = SynthResult()
    farms = [_FarmGenerator(settings, f) for f in range(settings.farms)]
    for d in range(settings.days):
        day = settings.start + datetime.timedelta(days=d)
        partition = out / f"date={day.isoformat()}"
        partition.mkdir(parents=True, exist_ok=True)
        with open(partition / f"node-{settings.node}.jsonl", "wb") as f:
            for farm in farms:
                lines = farm.day(_day_ms(day), result)
                if lines:
                    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
                    f.write(data)
                    result.bytes += len(data)
        result.files += 1
        log.info("synth: %s written, %d records so far", partition.name, result.records + result.bad)
        if progress is not None:
            progress(d + 1, settings.days)
    return result
