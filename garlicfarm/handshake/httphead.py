"""Small helpers over h11 shared by both sides: header access and head-size accounting."""

from __future__ import annotations

from collections.abc import Iterable

import h11

Headers = Iterable[tuple[bytes, bytes]]


def decode_headers(headers: Headers) -> tuple[tuple[str, str], ...]:
    """h11 headers (names already lower-case) as text. Latin-1 never fails and keeps every byte."""
    return tuple((name.decode("latin-1"), value.decode("latin-1")) for name, value in headers)


def header_values(headers: Headers, name: bytes) -> list[bytes]:
    return [value for key, value in headers if key == name]


def comma_tokens(headers: Headers, name: bytes) -> set[str]:
    """Lower-cased elements of a comma-separated header (``Connection``, ``Upgrade``), all lines merged."""
    return {
        item.strip().lower()
        for value in header_values(headers, name)
        for item in value.decode("latin-1").split(",")
        if item.strip()
    }


def head_size(conn: h11.Connection, received: int) -> int:
    """Bytes the head just parsed took: everything fed so far minus what h11 still buffers.

    h11's ``max_incomplete_event_size`` only bounds a head still *incomplete*; a complete oversized
    head arriving in one read passes it, so both sides check this as well.
    """
    return received - len(conn.trailing_data[0])
