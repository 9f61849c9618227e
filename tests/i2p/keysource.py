"""Deterministic key material for tests: bytes from a counter, never os.urandom."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable


def counter_random(seed: str) -> Callable[[int], bytes]:
    counter = itertools.count()

    def urandom(n: int) -> bytes:
        out = b""
        while len(out) < n:
            out += hashlib.sha256(f"{seed}/{next(counter)}".encode()).digest()
        return out[:n]

    return urandom
