"""Which files the job reads: the archive listed and classified (:mod:`.files`), gzip files checked
(:mod:`.gzcheck`), and the verdict logged. A local archive is listed before Spark starts, so an empty
one is an error at once."""

from __future__ import annotations

import logging
import os
from typing import Any

import attrs

from garlicfarm.pipeline.files import (
    QUARANTINED,
    FileReject,
    HadoopFileSystem,
    Listing,
    LocalFileSystem,
    entries,
    list_archive,
    local_root,
)
from garlicfarm.pipeline.gzcheck import MAX_REMOTE_BYTES, check_files
from garlicfarm.pipeline.options import PipelineError

log = logging.getLogger(__name__)

#: file names shown in a log line (the rejects table has them all)
SHOWN = 5


def list_local(uri: str) -> Listing | None:
    """A local archive's listing (no Spark needed); None for a remote one. An archive without one
    archive file is a :class:`PipelineError` here."""
    root = local_root(uri)
    if root is None:
        return None
    if not os.path.isdir(root):
        raise PipelineError(f"no archive directory at {uri}")
    try:
        listing = list_archive(root, LocalFileSystem())
    except OSError as e:
        raise PipelineError(f"cannot list the archive at {uri}: {e.strerror or e}") from None
    require_files(uri, listing)
    return listing


def require_files(uri: str, listing: Listing) -> None:
    if listing.files or listing.quarantined:
        return
    n = len(listing.foreign)
    other = f"; {n} other {entries(n)} there" if n else ""
    raise PipelineError(f"no archive files (date=YYYY-MM-DD/node-<id>.jsonl[.gz]) in {uri}{other}")


def checked_listing(spark: Any, uri: str, listing: Listing | None) -> Listing:
    """``listing`` (or the remote archive's, listed now) with every gzip file checked: the corrupt
    ones moved to the rejects, quarantined."""
    local = listing is not None
    if listing is None:
        listing = list_archive(uri, HadoopFileSystem(spark, uri))
        require_files(uri, listing)
    compressed = [f for f in listing.files if f.compressed and (local or f.size <= MAX_REMOTE_BYTES)]
    unchecked = [f.path for f in listing.files if f.compressed and not local and f.size > MAX_REMOTE_BYTES]
    if unchecked:
        log.warning("%d gzip files too large to check first, read as they are: %s", len(unchecked), unchecked)
    checks = {check.path: check for check in check_files(spark, [f.path for f in compressed], local)}
    bad = {path: check for path, check in checks.items() if check.error is not None}
    rejects = [
        FileReject(
            f.path, f.partition, QUARANTINED, str(bad[f.path].error), bad[f.path].lines, bad[f.path].bytes
        )
        for f in listing.files
        if f.path in bad
    ]
    bom = [*listing.bom, *(path for path, check in checks.items() if check.bom and path not in bad)]
    result = attrs.evolve(
        listing,
        files=tuple(f for f in listing.files if f.path not in bad),
        rejects=(*listing.rejects, *rejects),
        bom=tuple(sorted(bom)),
    )
    report(result)
    return result


def report(listing: Listing) -> None:
    log.info("the archive: %s", listing.describe())
    for reject in listing.quarantined:
        log.warning(
            "quarantined %s: %s (%s lines, %s bytes read)",
            reject.path,
            reject.reason,
            reject.lines_read,
            reject.bytes_read,
        )
    if listing.foreign:
        names = ", ".join(r.path for r in listing.foreign[:SHOWN])
        more = f" and {len(listing.foreign) - SHOWN} more" if len(listing.foreign) > SHOWN else ""
        n = len(listing.foreign)
        log.warning("skipped %d %s that are not archive files: %s%s", n, entries(n), names, more)
    if listing.bom:
        log.info(
            "%d files start with a UTF-8 byte order mark (dropped): %s", len(listing.bom), listing.bom[:SHOWN]
        )
