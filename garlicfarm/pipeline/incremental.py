"""Incremental runs: what changed in the archive since the last run, and where each farm's replay
resumes (docs/pipeline.md, "Incremental runs"). Driver side only, no Spark.

The archive's unit of change is the partition (``date=YYYY-MM-DD``: a record's copies, from several
nodes, all sit in the partition of the record's date). The *manifest* (``manifest.json`` in the
checkpoint directory, written last, atomically) holds, per partition, a fingerprint of its files'
contents and, per farm in it, its rows' lowest and highest log index, members and record days. The
*checkpoints* (``cluster=<farm>/day=<D>/state.json``, replay.py's payload) hold a farm's replay as it
stood when its log time left day D. A partition whose fingerprint differs (or that is new, or gone)
is read again; a farm it touches resumes from its latest checkpoint cut before the first log index
the change touches; everything before that is neither read nor replayed.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from garlicfarm.pipeline.files import QUARANTINED, Listing
from garlicfarm.pipeline.replay import CHECKPOINT_VERSION, FarmReplay

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
STATE = "state.json"
MANIFEST_VERSION = 1
#: the checkpoint directory's default place, under ``--out``
DEFAULT_DIR = "_checkpoints"
DAY_MS = 86_400_000


@attrs.frozen
class FarmPart:
    """One farm's rows in one partition."""

    lo: int  #: lowest log index
    hi: int  #: highest log index
    rows: int  #: valid rows, copies included
    members: tuple[int, ...]
    days: tuple[str, ...]  #: the UTC days of the records' dates (the partition's own, normally)

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FarmPart:
        return cls(
            int(data["lo"]),
            int(data["hi"]),
            int(data["rows"]),
            tuple(int(i) for i in data["members"]),
            tuple(str(d) for d in data["days"]),
        )


@attrs.frozen
class Partition:
    fingerprint: str
    lines: int  #: lines read (valid and rejected)
    farms: dict[str, FarmPart]

    def to_json(self) -> dict[str, Any]:
        farms = {name: part.to_json() for name, part in sorted(self.farms.items())}
        return {"fingerprint": self.fingerprint, "lines": self.lines, "farms": farms}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Partition:
        farms = {str(k): FarmPart.from_json(v) for k, v in data["farms"].items()}
        return cls(str(data["fingerprint"]), int(data["lines"]), farms)


@attrs.frozen
class Manifest:
    settings: dict[str, Any]
    partitions: dict[str, Partition]

    def members(self, farm: str) -> tuple[int, ...]:
        ids = {i for p in self.partitions.values() if farm in p.farms for i in p.farms[farm].members}
        return tuple(sorted(ids))

    def farms(self) -> set[str]:
        return {farm for p in self.partitions.values() for farm in p.farms}


def content_fingerprints(listing: Listing) -> dict[str, str]:
    """Per partition: a SHA-256 over its archive files' names and contents (quarantined ones too), so
    that a line added to, changed in or removed from an old day is seen."""
    files: dict[str, list[tuple[str, str]]] = {}
    for f in listing.files:
        files.setdefault(f.partition, []).append((os.path.basename(f.path), _file_digest(f.path)))
    for r in listing.rejects:
        if r.kind == QUARANTINED and r.partition is not None:
            files.setdefault(r.partition, []).append((os.path.basename(r.path), _file_digest(r.path)))
    out = {}
    for partition, named in files.items():
        digest = hashlib.sha256()
        for name, content in sorted(named):
            digest.update(f"{name}\0{content}\n".encode())
        out[partition] = digest.hexdigest()
    return out


def _file_digest(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as e:
        return f"unreadable: {e.strerror or e}"


def settings_of(archive: str, window_ms: int, interval_ms: int | None, fmt: str) -> dict[str, Any]:
    """What the outputs depend on besides the archive: a run with other settings replays in full."""
    return {"archive": archive, "window_ms": window_ms, "interval_ms": interval_ms, "format": fmt}


def read_manifest(directory: Path) -> Manifest | None:
    """The last run's manifest; None when there is none or it cannot be read (said in the log)."""
    path = directory / MANIFEST
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_bytes())
        if data.get("version") != MANIFEST_VERSION:
            raise ValueError(f"version {data.get('version')!r}")
        partitions = {str(k): Partition.from_json(v) for k, v in data["partitions"].items()}
        return Manifest(dict(data["settings"]), partitions)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        log.warning("the checkpoint manifest %s cannot be read (%s): a full replay", path, e)
        return None


def write_manifest(directory: Path, manifest: Manifest) -> None:
    body = {
        "version": MANIFEST_VERSION,
        "settings": manifest.settings,
        "partitions": {k: p.to_json() for k, p in sorted(manifest.partitions.items())},
    }
    write_atomically(directory / MANIFEST, json.dumps(body, sort_keys=True, indent=1).encode())


def write_atomically(path: Path, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all: a temporary file beside it, synced, then renamed
    over it (a reader never sees half a file; a temporary file a kill left behind is never read)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def changed_partitions(old: Manifest | None, fingerprints: dict[str, str]) -> tuple[set[str], set[str]]:
    """(partitions to read again: new or changed, partitions gone since the last run)."""
    before = old.partitions if old is not None else {}
    changed = {p for p, fp in fingerprints.items() if p not in before or before[p].fingerprint != fp}
    return changed, set(before) - set(fingerprints)


def first_touched(old: Manifest | None, new: Manifest, touched: Iterable[str]) -> dict[str, tuple[int, str]]:
    """Per farm a change touches: the lowest log index and the earliest record day of its rows in the
    ``touched`` partitions, before the change and after."""
    out: dict[str, tuple[int, str]] = {}
    for partition in touched:
        for manifest in (old, new):
            if manifest is None or partition not in manifest.partitions:
                continue
            for farm, part in manifest.partitions[partition].farms.items():
                low = (part.lo, min(part.days))
                out[farm] = min(out.get(farm, low), low)
    return out


def checkpoint_path(directory: Path, farm: str, day: str) -> Path:
    return directory / f"cluster={farm}" / f"day={day}" / STATE


def day_name(day_start_ms: int) -> str:
    return datetime.datetime.fromtimestamp(day_start_ms / 1000, datetime.UTC).date().isoformat()


def saved_days(directory: Path, farm: str) -> list[str]:
    """The days of a farm's checkpoints, newest first."""
    farm_dir = directory / f"cluster={farm}"
    if not farm_dir.is_dir():
        return []
    return sorted((d.name.removeprefix("day=") for d in farm_dir.glob("day=*")), reverse=True)


def load_checkpoint(
    directory: Path, farm: str, before_index: int, members: tuple[int, ...], window_ms: int
) -> dict[str, Any] | None:
    """The farm's latest usable checkpoint whose cut lies before ``before_index``; None: replay from
    the start. A checkpoint that cannot be read, or was made for other members or windows, is passed
    over with a warning for the one before it."""
    for day in saved_days(directory, farm):
        path = checkpoint_path(directory, farm, day)
        try:
            saved = json.loads(path.read_bytes())
            if saved.get("version") != CHECKPOINT_VERSION or saved.get("cluster") != farm:
                raise ValueError("not a checkpoint of this farm")
            if int(saved["cut"][0]) >= before_index:
                continue  # made after the change: the replay must go back further
            if saved.get("window_ms") != window_ms or tuple(saved["members"]) != members:
                log.info("%s: checkpoint of %s made for other members or windows, not used", farm, day)
                return None  # every earlier one was too
            FarmReplay.resume(farm, members, window_ms, saved["replay"])  # a trial restore
            return dict(saved)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
            log.warning(
                "%s: checkpoint %s is unusable (%s: %s); trying the one before",
                farm,
                path,
                type(e).__name__,
                e,
            )
    return None


def remove_checkpoints_after(directory: Path, farm: str, day: str | None) -> None:
    """Drop a farm's checkpoints of days after ``day`` (all if None): the resumed replay writes them
    again, and one left from another history must not be picked up."""

    for saved in saved_days(directory, farm):
        if day is None or saved > day:
            shutil.rmtree(directory / f"cluster={farm}" / f"day={saved}", ignore_errors=True)


@attrs.frozen
class FarmPlan:
    """What a run does with one farm a change touched."""

    saved: dict[str, Any] | None  #: the checkpoint its replay resumes from; None: from the start
    kept_day: str | None  #: its timeline and weights of this day and before stay; None: none
    since: str | None  #: its member health is recomputed from this day on; None: all
    cut: int  #: rows of a higher log index are replayed (those up to it only seed the copies)
    records: int  #: rows the replay goes through (its place among the tasks)


@attrs.frozen
class RunPlan:
    """Which partitions this run reads, against the last run's manifest."""

    full: bool
    settings: dict[str, Any]
    old: Manifest | None
    fingerprints: dict[str, str]
    changed: frozenset[str]  #: partitions read and checked again (all of them in a full run)
    removed: frozenset[str]  #: partitions gone since the last run

    @classmethod
    def full_run(cls, settings: dict[str, Any], listing: Listing) -> RunPlan:
        """Everything read and replayed, no checkpoints (an ``--out`` that is not local)."""
        every = frozenset(_partitions(listing))
        return cls(True, settings, None, dict.fromkeys(every, ""), every, frozenset())

    @classmethod
    def plan(cls, settings: dict[str, Any], listing: Listing, directory: Path, force_full: bool) -> RunPlan:
        fingerprints = content_fingerprints(listing)
        old = None if force_full else read_manifest(directory)
        if old is not None and old.settings != settings:
            log.info("the last run had other settings (%s): a full replay", old.settings)
            old = None
        if settings.get("interval_ms") is None:
            log.info("--interval auto measures each member over its whole history: a full replay")
            old = None
        changed, removed = changed_partitions(old, fingerprints)
        log.info(
            "%s: %d of %d partitions new or changed, %d gone",
            "full run" if old is None else "incremental run",
            len(changed),
            len(fingerprints),
            len(removed),
        )
        return cls(old is None, settings, old, fingerprints, frozenset(changed), frozenset(removed))

    def to_read(self, listing: Listing) -> Listing:
        """``listing`` cut down to the partitions to read (every entry that is not an archive file is
        reported again: the listing is whole each run)."""
        files = tuple(f for f in listing.files if f.partition in self.changed)
        rejects = tuple(r for r in listing.rejects if r.kind != QUARANTINED or r.partition in self.changed)
        paths = {f.path for f in files}
        return attrs.evolve(
            listing, files=files, rejects=rejects, bom=tuple(b for b in listing.bom if b in paths)
        )

    def next_manifest(self, read: dict[str, Partition]) -> Manifest:
        """This run's manifest: the partitions read now, and the others as the last run saw them."""
        partitions = {}
        for name, fingerprint in self.fingerprints.items():
            if name in self.changed:
                found = read.get(name, Partition(fingerprint, 0, {}))
                partitions[name] = attrs.evolve(found, fingerprint=fingerprint)
            else:
                assert self.old is not None
                partitions[name] = self.old.partitions[name]
        return Manifest(self.settings, partitions)

    def farm_plans(self, manifest: Manifest, directory: Path | None) -> dict[str, FarmPlan]:
        """Each farm the change touches, and where its replay and health resume."""
        plans = {}
        window_ms = int(self.settings["window_ms"])
        for farm, (low, first_day) in first_touched(self.old, manifest, self.changed | self.removed).items():
            members = manifest.members(farm)
            if not members:
                continue  # gone from the archive: its outputs are dropped
            saved = None
            if directory is not None and self.old is not None and self.old.members(farm) == members:
                saved = load_checkpoint(directory, farm, low, members, window_ms)
            kept = day_name(int(saved["day"]) * DAY_MS) if saved is not None else None
            cut = int(saved["cut"][0]) if saved is not None else -1
            since = None if kept is None else min(first_day, day_name((int(saved["day"]) + 1) * DAY_MS))  # type: ignore[index]
            records = sum(
                p.farms[farm].rows
                for p in manifest.partitions.values()
                if farm in p.farms and p.farms[farm].hi > cut
            )
            plans[farm] = FarmPlan(saved, kept, since, cut, records)
            log.info(
                "%s: replayed from %s, member health from %s",
                farm,
                "the start" if kept is None else f"its checkpoint of {kept}",
                since or "the start",
            )
        return plans

    def gone_farms(self, manifest: Manifest) -> set[str]:
        return (self.old.farms() if self.old is not None else set()) - manifest.farms()


def partitions_for(plans: dict[str, FarmPlan], manifest: Manifest) -> set[str]:
    """The partitions whose rows the replays and health need: a farm's rows after its cut (and every
    row of those partitions: the copies a resumed replay drops), and its days from ``since`` on."""
    needed = set()
    for name, partition in manifest.partitions.items():
        for farm, plan in plans.items():
            part = partition.farms.get(farm)
            if part is None:
                continue
            if part.hi > plan.cut or plan.since is None or max(part.days) >= plan.since:
                needed.add(name)
                break
    return needed


def carry_partitions(plans: dict[str, FarmPlan], manifest: Manifest) -> set[str]:
    """The partitions holding each member's last report before its farm's health's ``since``: the
    newest partition before it that the member reported in, when every partition holds its own day
    only (as the archive writes them); else every partition with a day before ``since``."""
    needed: set[str] = set()
    for farm, plan in plans.items():
        if plan.since is None:
            continue
        since = plan.since
        earlier = {
            n: p.farms[farm]
            for n, p in manifest.partitions.items()
            if farm in p.farms and min(p.farms[farm].days) < since
        }
        if any(part.days != (name,) for name, part in earlier.items()):
            needed |= set(earlier)
            continue
        for member in manifest.members(farm):
            holding = [name for name, part in earlier.items() if member in part.members]
            if holding:
                needed.add(max(holding))
    return needed


def _partitions(listing: Listing) -> set[str]:
    names = {f.partition for f in listing.files}
    return names | {r.partition for r in listing.rejects if r.kind == QUARANTINED and r.partition is not None}
