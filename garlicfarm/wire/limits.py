"""Decoder limits: what a peer may make us buffer or inflate. All configurable, all with safe defaults."""

from __future__ import annotations

import attrs

MiB = 1024 * 1024


@attrs.frozen
class Limits:
    #: total size of the entries of one request (the header's logEntriesSize)
    max_entries_size: int = 16 * MiB
    #: number of entries in one request or one LogPack
    max_entries: int = 100_000
    #: bytes a LogPack may inflate to (a gzip bomb stops here)
    max_logpack_decompressed: int = 64 * MiB


DEFAULT_LIMITS = Limits()
