"""Meta LS2s published through a real i2pd's I2CP, offline in a network namespace with only loopback.

tests/router/i2cp_probe.py does the publishing inside the namespace and reports what i2pd logged; this
module asserts on i2pd's own words: the session created, the Meta LS2 taken (i2pd sets it as the
destination's leaseset and tries to publish it: offline it has no tunnels, so it says the destination
is not ready), the forged one and the one past its offline signature's expiry refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.router.i2cp_probe import TAKEN
from tests.router.test_i2pd_e2e import run_probe

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def seen() -> Iterator[dict[str, Any]]:
    yield from run_probe("tests.router.i2cp_probe", "garlicfarm-i2cp-")


@pytest.fixture(scope="module")
def farm_seen() -> Iterator[dict[str, Any]]:
    yield from run_probe("tests.router.farm_i2cp_probe", "garlicfarm-farm-i2cp-")


def test_a_farm_publishes_through_i2pd(farm_seen: dict[str, Any]) -> None:
    """garlicfarm init's 3-node farm, real processes, [publisher] kind = "i2cp": the member the farm
    chose opens a session under the master (its presigned config) and i2pd takes the Meta LS2."""
    assert farm_seen["publisher"] is not None, farm_seen["node_logs"]
    metals = farm_seen["metals"]
    assert metals["state"] == "published" and metals["error"] is None
    assert len(metals["leases"]) == 3  # one real leaf per member's stand-in router
    lines = farm_seen["i2pd"]
    assert _has(lines, "created") and farm_seen["taken"], lines
    assert not _has(lines, "Invalid LeaseSet2") and not _has(lines, "signature verification failed"), lines
    assert all(farm_seen["nodes_alive"])


def _has(lines: list[str], text: str) -> bool:
    return any(text in line for line in lines)


def test_master_signed_metals_is_taken(seen: dict[str, Any]) -> None:
    lines = seen["master_signed"]
    assert _has(lines, "created") and _has(lines, TAKEN), lines
    assert not _has(lines, "Invalid LeaseSet2") and not _has(lines, "Verification failed"), lines
    status = seen["master_status"]
    assert status["state"] == "published" and len(status["leases"]) == 2
    assert [lease["cost"] for lease in status["leases"]] == [0, 60]  # weights 100 and 40


def test_stop_destroys_the_session(seen: dict[str, Any]) -> None:
    assert _has(seen["stopped"], "destroyed"), seen["stopped"]


def test_offline_signed_metals_with_presigned_session_is_taken(seen: dict[str, Any]) -> None:
    lines = seen["offline_signed"]
    assert _has(lines, "created") and _has(lines, TAKEN), lines
    assert not _has(lines, "Invalid LeaseSet2"), lines


def test_i2pd_refuses_a_flipped_signature_bit(seen: dict[str, Any]) -> None:
    lines = seen["flipped_bit"]
    assert _has(lines, "LeaseSet2: Verification failed") and _has(lines, "Invalid LeaseSet2"), lines


def test_i2pd_refuses_an_expired_offline_signature(seen: dict[str, Any]) -> None:
    lines = seen["offline_expired"]
    assert _has(lines, "Offline signature failed") and _has(lines, "Invalid LeaseSet2"), lines


def test_we_refuse_to_publish_past_the_offline_expiry(seen: dict[str, Any]) -> None:
    assert "offline signature" in seen["our_refusal"] and "expired" in seen["our_refusal"]


def test_a_key_file_i2pd_made_is_read(seen: dict[str, Any]) -> None:
    # i2pd logged the b32 of the key file it created; ours, read from that file, is the same
    assert seen["i2pd_leaf"]["in_log"], seen["i2pd_leaf"]
