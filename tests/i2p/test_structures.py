"""The I2P structures: round trips, signatures, and one clear error for hostile bytes."""

from __future__ import annotations

import contextlib

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from garlicfarm.i2p.destination import Destination
from garlicfarm.i2p.encoding import b32, b32decode, b64decode, b64encode
from garlicfarm.i2p.errors import I2PFormatError
from garlicfarm.i2p.keys import PrivateKeyFile, create_master, create_transient
from garlicfarm.i2p.mapping import encode_mapping, read_mapping
from garlicfarm.i2p.metals import MetaLease, MetaLeaseSet, OfflineSignature
from garlicfarm.i2p.reader import Reader
from garlicfarm.i2p.signing import SigningKey
from tests.i2p.keysource import counter_random

MASTER = create_master(counter_random("master"))
LEAF = create_master(counter_random("leaf")).destination
NOW = 1_800_000_000


def metals(offline: bool = False, leases: int = 2) -> tuple[MetaLeaseSet, SigningKey]:
    keys = create_transient(MASTER, counter_random("t"), NOW + 86_400) if offline else MASTER
    entries = tuple(MetaLease(LEAF.hash, cost=i, end=NOW + 600) for i in range(leases))
    unsigned = MetaLeaseSet(MASTER.destination, NOW, 600, entries, offline=keys.offline)
    return unsigned.signed(keys.signer), keys.signer


def test_base64_is_i2ps_alphabet() -> None:
    data = bytes([0xFB, 0xFF, 0xBF])
    assert b64encode(data) == "-~-~"
    assert b64decode("-~-~") == data
    for bad in ("+/+/", "-~-", "ab$d", "é"):
        with pytest.raises(I2PFormatError):
            b64decode(bad)


def test_b32_address() -> None:
    address = MASTER.destination.b32
    assert address.endswith(".b32.i2p") and len(address) == 52 + 8
    assert b32decode(address) == MASTER.destination.hash
    with pytest.raises(I2PFormatError):
        b32decode("tooshort.b32.i2p")


def test_destination_round_trip_and_key_position() -> None:
    dest = MASTER.destination
    assert len(dest.encoded) == 391  # 256 + 128 + 3 + 4 (KEY certificate: sig type 7, crypto type 4)
    assert dest.encoded[384:391] == bytes.fromhex("05 0004 0007 0004")
    assert dest.signing_key_field[-32:] == MASTER.signer.public  # a short key sits at its field's end
    assert Destination.decode(dest.encoded) == dest
    assert Destination.from_b64(dest.b64) == dest


def test_destination_null_certificate_is_dsa() -> None:
    dest = Destination(bytes(256), bytes(range(128)), 0, b"")
    assert dest.sig_type.name == "DSA_SHA1" and dest.signing_public_key == bytes(range(128))
    assert Destination.decode(dest.encoded).hash == dest.hash


def test_destination_long_signing_key_spills_into_certificate() -> None:
    payload = (3).to_bytes(2, "big") + (0).to_bytes(2, "big") + b"\xaa\xbb\xcc\xdd"  # P-521: 4 excess bytes
    dest = Destination(bytes(256), b"\x01" * 128, 5, payload)
    assert dest.signing_public_key == b"\x01" * 128 + b"\xaa\xbb\xcc\xdd"
    with pytest.raises(I2PFormatError, match="too short"):
        Destination(bytes(256), bytes(128), 5, payload[:6])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "public key"),
        (bytes(384), "certificate type"),
        (bytes(384) + b"\x05\x00\x02\x00\x07", "KEY certificate holds at least"),
        (bytes(384) + b"\x00\x00\x05\x00", "certificate: needs 5 bytes"),
        (bytes(387) + b"x", "1 bytes after the destination"),
    ],
)
def test_hostile_destinations(data: bytes, message: str) -> None:
    with pytest.raises(I2PFormatError, match=message):
        Destination.decode(data)


def test_mapping_sorted_and_strict() -> None:
    encoded = encode_mapping({"b": "2", "a": "1"})
    assert encoded == bytes.fromhex("000c") + b"\x01a=\x011;\x01b=\x012;"
    assert read_mapping(Reader(encoded)) == (("a", "1"), ("b", "2"))
    for bad, message in [
        (b"\x00\x05\x01a=\x011", "needs 1 bytes"),
        (b"\x00\x06\x01a:\x011;", "'=' expected"),
        (b"\x00\x0c\x01a=\x011;\x01a=\x012;", "appears twice"),
        (b"\x00\x06\x01\xff=\x00;", "not UTF-8"),
        (b"\xff\xff", "needs 65535 bytes"),
    ]:
        with pytest.raises(I2PFormatError, match=message):
            read_mapping(Reader(bad + b"\x00"))


@given(st.dictionaries(st.text(max_size=20), st.text(max_size=20), max_size=8))
def test_mapping_round_trip(pairs: dict[str, str]) -> None:
    reader = Reader(encode_mapping(pairs))
    assert dict(read_mapping(reader)) == pairs
    assert reader.left == 0


def test_metals_signed_by_master_verifies() -> None:
    ls, _ = metals()
    assert MetaLeaseSet.decode(ls.encoded) == ls
    assert ls.verdicts(NOW).ok
    assert ls.verdicts(NOW) == ls.verdicts(NOW + 10**6)  # no offline signature to expire


def test_metals_offline_signed_verifies_until_expiry() -> None:
    ls, _ = metals(offline=True)
    assert ls.all_flags == 1
    assert MetaLeaseSet.decode(ls.encoded) == ls
    assert ls.verdicts(NOW).ok
    late = ls.verdicts(NOW + 86_401)
    assert (late.offline, late.signature, late.ok) == ("expired", "valid", False)


def test_every_flipped_signature_bit_is_caught() -> None:
    for offline in (False, True):
        ls, _ = metals(offline=offline)
        data = bytearray(ls.encoded)
        for bit in range(0, 64 * 8, 37):
            forged = bytearray(data)
            forged[len(data) - 64 + bit // 8] ^= 1 << (bit % 8)
            assert MetaLeaseSet.decode(bytes(forged)).verdicts(NOW).signature == "invalid"


def test_a_changed_lease_is_caught() -> None:
    ls, _ = metals()
    forged = attrs.evolve(ls, leases=(attrs.evolve(ls.leases[0], cost=200), *ls.leases[1:]))
    assert forged.verdicts(NOW).signature == "invalid"


def test_forged_offline_block_is_caught() -> None:
    ls, _ = metals(offline=True)
    assert ls.offline is not None
    stretched = attrs.evolve(ls.offline, expires=ls.offline.expires + 1)
    assert attrs.evolve(ls, offline=stretched).verdicts(NOW).offline == "invalid"


def test_signing_with_the_wrong_key_is_refused() -> None:
    ls, _ = metals(offline=True)
    with pytest.raises(ValueError, match="not the one"):
        ls.signed(MASTER.signer)  # the master, where the transient key is named


def test_lease_layout() -> None:
    lease = MetaLease(bytes(range(32)), cost=7, end=0x01020304)
    assert lease.encoded == bytes(range(32)) + b"\x00\x00\x03\x07\x01\x02\x03\x04"
    assert MetaLease.read(Reader(lease.encoded)) == lease


def test_hostile_metals_bytes_get_one_clear_error() -> None:
    ls, _ = metals()
    data = ls.encoded
    head = len(MASTER.destination.encoded) + 8 + 2  # destination, published/expires/flags, empty options
    cases = [
        (data[:-1], "signature: needs 64 bytes, 63 left"),
        (data + b"\x00", "1 bytes after the Meta LS2"),
        (data[:head] + b"\xff" + data[head + 1 :], "lease: "),  # 255 leases announced, 2 present
    ]
    for bad, message in cases:
        with pytest.raises(I2PFormatError, match=message):
            MetaLeaseSet.decode(bad)
    for cut in range(0, len(data), 7):  # every truncation: an I2PFormatError, nothing else
        with pytest.raises(I2PFormatError):
            MetaLeaseSet.decode(data[:cut])


@settings(max_examples=200)
@given(st.binary(max_size=700))
def test_any_bytes_decode_or_raise_format_error(data: bytes) -> None:
    with contextlib.suppress(I2PFormatError):
        MetaLeaseSet.decode(data)


@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 0xFFFF),
    st.lists(
        st.tuples(
            st.binary(min_size=32, max_size=32),
            st.integers(0, 255),
            st.integers(0, 2**32 - 1),
            st.sampled_from([1, 3, 5]),
        ),
        max_size=16,
    ),
    st.lists(st.binary(min_size=32, max_size=32), max_size=3),
    st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=3),
)
def test_metals_round_trip(
    published: int,
    expires: int,
    leases: list[tuple[bytes, int, int, int]],
    revoked: list[bytes],
    options: dict[str, str],
) -> None:
    entries = tuple(MetaLease(h, c, e, t) for h, c, e, t in leases)
    ls = MetaLeaseSet(
        MASTER.destination,
        published,
        expires,
        entries,
        options=tuple(sorted(options.items())),
        revocations=tuple(revoked),
    ).signed(MASTER.signer)
    assert MetaLeaseSet.decode(ls.encoded) == ls
    assert ls.verdicts(published).ok


def test_key_files_round_trip_and_check() -> None:
    assert PrivateKeyFile.decode(MASTER.encoded) == MASTER
    MASTER.check()
    member = create_transient(MASTER, counter_random("m"), NOW)
    assert len(member.encoded) == 391 + 32 + 32 + (4 + 2 + 32 + 64) + 32
    decoded = PrivateKeyFile.decode(member.encoded)
    assert decoded == member and decoded.is_offline
    decoded.check()
    assert decoded.signer.public != MASTER.signer.public
    with pytest.raises(ValueError, match="cannot vouch"):
        create_transient(member, counter_random("x"), NOW)


def test_key_file_hostile() -> None:
    with pytest.raises(I2PFormatError, match="private key"):
        PrivateKeyFile.decode(MASTER.encoded[:-1])
    wrong = attrs.evolve(MASTER, signing_private=bytes(31) + b"\x01")
    with pytest.raises(I2PFormatError, match="not the destination's"):
        wrong.check()


def test_offline_signature_layout() -> None:
    offline = OfflineSignature.create(MASTER.signer, b"\x11" * 32, 0x01020304)
    assert offline.signed_data == bytes.fromhex("01020304 0007") + b"\x11" * 32
    assert offline.verify(MASTER.destination)


def test_b32_of_a_hash() -> None:
    assert b32(bytes(32)) == "a" * 52 + ".b32.i2p"
