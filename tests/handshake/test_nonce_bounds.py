"""The nonce registry at its bounds: the smallest lifetimes, the words of a bad setting, one spelling
per nonce, and the memory a jump in nc costs."""

from __future__ import annotations

import tracemalloc

import pytest

from garlicfarm.handshake import ConfigError, NonceRegistry, NonceVerdict
from tests.handshake.helpers import T0, rng


@pytest.mark.parametrize("lifetime", [0.5, 1.0])
def test_any_positive_lifetime_is_allowed(lifetime: float) -> None:
    """Positive, not "more than one second": a lifetime of 1 s or less is a valid setting."""
    nonces = NonceRegistry(rng(), lifetime=lifetime)
    n = nonces.issue(T0)
    assert nonces.admit(n, 1, T0 + lifetime) is NonceVerdict.ACCEPTED
    assert nonces.admit(n, 2, T0 + lifetime + 0.25) is NonceVerdict.EXPIRED


def test_bad_settings_are_named() -> None:
    with pytest.raises(ConfigError) as info:
        NonceRegistry(rng(), lifetime=0)
    assert str(info.value) == "nonce lifetime must be a positive number of seconds, not 0"
    with pytest.raises(ConfigError) as info:
        NonceRegistry(rng(), max_tracked=0)
    assert str(info.value) == "max_tracked must be at least 1, not 0"


@pytest.mark.parametrize(("ours", "other"), [("-", "+"), ("_", "/")])
def test_a_nonce_has_one_spelling(ours: str, other: str) -> None:
    """base64url only: the standard alphabet's '+' and '/' for '-' and '_' make a nonce not ours, or
    the same nonce under a second text would get a second nc history."""
    nonces = NonceRegistry(rng(1))
    n = next(n for n in (nonces.issue(T0) for _ in range(100)) if ours in n)
    respelled = n.replace(ours, other)
    assert nonces.issued_at(respelled) is None
    assert nonces.admit(n, 1, T0) is NonceVerdict.ACCEPTED
    assert nonces.admit(respelled, 1, T0) is NonceVerdict.UNKNOWN


@pytest.mark.parametrize("junk", ["!", " ", "\n", "*", "."])
def test_a_nonce_with_a_character_outside_the_alphabet_is_unknown(junk: str) -> None:
    nonces = NonceRegistry(rng(1))
    n = nonces.issue(T0)
    for at in (0, 10, len(n) - 1):
        bad = n[:at] + junk + n[at + 1 :]
        assert nonces.issued_at(bad) is None
        assert nonces.admit(bad, 1, T0) is NonceVerdict.UNKNOWN


def test_a_jump_in_nc_costs_no_memory() -> None:
    """A jump far past the window keeps no bit and shifts nothing: no 2**32-bit integer."""
    nonces = NonceRegistry(rng())
    n = nonces.issue(T0)
    assert nonces.admit(n, 1, T0) is NonceVerdict.ACCEPTED
    tracemalloc.start()
    try:
        assert nonces.admit(n, 0xFFFFFFFF, T0) is NonceVerdict.ACCEPTED
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert nonces.admit(n, 1, T0) is NonceVerdict.REPLAYED
