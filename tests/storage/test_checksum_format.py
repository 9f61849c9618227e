"""The rows' checksums are part of the file format: a store written today must verify after an
upgrade, so each checksum function is pinned to values computed once (format 2). Any change to the
seed, the packed layout or the vote's encoding turns every existing store "corrupt"."""

from __future__ import annotations

from garlicfarm.storage.sqlite import entry_crc, hard_state_crc, snapshot_crc


def test_an_entrys_checksum() -> None:
    assert entry_crc(7, 3, 1, b'{"a":1}') == 0x15479FD2


def test_a_hard_states_checksum_with_and_without_a_vote() -> None:
    assert hard_state_crc(3, None, 5) == 0x694222B8
    assert hard_state_crc(3, 2, 5) == 0xC012C17D


def test_a_snapshots_checksum() -> None:
    assert snapshot_crc(9, 4, b"config") == 0xCD7197FC
