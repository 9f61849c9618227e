"""The server's nonce registry: stateless nonces, each nc once (a sliding window), bounded memory."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from garlicfarm.handshake import ConfigError, NonceRegistry, NonceVerdict
from garlicfarm.handshake.nonces import NC_WINDOW
from tests.handshake.helpers import HOUR, T0, rng


def test_each_nc_once_in_any_order_within_the_window() -> None:
    nonces = NonceRegistry(rng())
    n = nonces.issue(T0)
    assert nonces.admit(n, 1, T0) is NonceVerdict.ACCEPTED
    assert nonces.admit(n, 1, T0 + 1) is NonceVerdict.REPLAYED
    assert nonces.admit(n, 3, T0 + 2) is NonceVerdict.ACCEPTED  # gaps are fine (a lost connection)
    # a client's concurrent connections take nc 2 and 3 in order; 3 may reach us first
    assert nonces.admit(n, 2, T0 + 3) is NonceVerdict.ACCEPTED
    assert nonces.admit(n, 2, T0 + 3) is NonceVerdict.REPLAYED
    assert nonces.admit(n, 3 + NC_WINDOW, T0 + 4) is NonceVerdict.ACCEPTED
    assert nonces.admit(n, 4, T0 + 5) is NonceVerdict.ACCEPTED  # 63 below the highest: not seen yet
    assert nonces.admit(n, 3, T0 + 5) is NonceVerdict.REPLAYED  # seen, and 64 below: out of the window
    assert nonces.admit(n, 0xFFFFFFFF, T0 + 6) is NonceVerdict.ACCEPTED  # a jump keeps memory bounded
    assert nonces.admit(n, 0xFFFFFFFF - NC_WINDOW, T0 + 6) is NonceVerdict.REPLAYED
    assert nonces.admit(n, 0xFFFFFFFF - NC_WINDOW + 1, T0 + 6) is NonceVerdict.ACCEPTED


@given(st.lists(st.integers(min_value=1, max_value=200), max_size=60))
def test_nc_verdicts_match_the_window_model(ncs: list[int]) -> None:
    """Accepted exactly when not accepted before and less than NC_WINDOW below the highest accepted
    so far: never a repeat, whatever the order."""
    nonces = NonceRegistry(rng())
    n = nonces.issue(T0)
    accepted: set[int] = set()
    for nc in ncs:
        expected = nc not in accepted and (not accepted or nc > max(accepted) - NC_WINDOW)
        verdict = nonces.admit(n, nc, T0)
        assert verdict is (NonceVerdict.ACCEPTED if expected else NonceVerdict.REPLAYED)
        if expected:
            accepted.add(nc)


def test_nonces_are_distinct_and_cost_nothing_until_used() -> None:
    nonces = NonceRegistry(rng())
    issued = {nonces.issue(T0) for _ in range(1000)}
    assert len(issued) == 1000
    assert len(nonces) == 0
    assert all(nonces.issued_at(n) == T0 for n in issued)


def test_valid_for_the_whole_lifetime_and_not_after() -> None:
    nonces = NonceRegistry(rng())
    assert nonces.lifetime == HOUR
    n = nonces.issue(T0)
    assert nonces.admit(n, 1, T0 + HOUR) is NonceVerdict.ACCEPTED
    assert nonces.admit(n, 2, T0 + HOUR + 0.001) is NonceVerdict.EXPIRED
    short = NonceRegistry(rng(), lifetime=10)
    m = short.issue(T0)
    assert short.admit(m, 1, T0 + 11) is NonceVerdict.EXPIRED


def test_expired_entries_are_forgotten() -> None:
    nonces = NonceRegistry(rng(), lifetime=10)
    for i in range(5):
        assert nonces.admit(nonces.issue(T0 + i), 1, T0 + i) is NonceVerdict.ACCEPTED
    assert len(nonces) == 5
    late = nonces.issue(T0 + 100)
    assert nonces.admit(late, 1, T0 + 100) is NonceVerdict.ACCEPTED
    assert len(nonces) == 1


def test_clock_stepping_back_does_not_revive_a_purged_nonce() -> None:
    nonces = NonceRegistry(rng(), lifetime=10)
    old = nonces.issue(T0)
    assert nonces.admit(old, 1, T0) is NonceVerdict.ACCEPTED
    assert nonces.admit(nonces.issue(T0 + 20), 1, T0 + 20) is NonceVerdict.ACCEPTED  # purges `old`
    assert nonces.admit(old, 1, T0 + 5) is NonceVerdict.FORGOTTEN


@pytest.mark.parametrize(
    "mangle",
    [
        lambda n: n[:-1] + ("A" if n[-1] != "A" else "B"),  # MAC no longer matches
        lambda n: ("A" if n[0] != "A" else "B") + n[1:],  # the timestamp changed
        lambda n: n + "A",
        lambda n: n[:-1],
        lambda n: n[:-1] + "é",
        lambda n: n[:-1] + "=",
        lambda _: "",
        lambda _: "dcd98b7102dd2f0e8b11d0f600bfb0c093",
    ],
)
def test_forged_or_mangled_nonces_are_unknown(mangle: object) -> None:
    nonces = NonceRegistry(rng())
    n = nonces.issue(T0)
    assert callable(mangle)
    bad = mangle(n)
    assert nonces.issued_at(bad) is None
    assert nonces.admit(bad, 1, T0) is NonceVerdict.UNKNOWN


def test_another_registrys_nonce_is_unknown() -> None:
    # E.g. from before a restart: a new secret. The server answers it with stale=true.
    assert NonceRegistry(rng(1)).admit(NonceRegistry(rng(2)).issue(T0), 1, T0) is NonceVerdict.UNKNOWN


def test_bounded_table_never_admits_a_replay() -> None:
    nonces = NonceRegistry(rng(), max_tracked=3)
    issued = [nonces.issue(T0 + i) for i in range(6)]
    for n in issued[:5]:
        assert nonces.admit(n, 1, T0 + 10) is NonceVerdict.ACCEPTED
    assert len(nonces) == 3
    # The two issued first were dropped: their nc history is gone, so they are refused (as stale,
    # the client just takes a fresh challenge) rather than accepted with an nc they already used.
    assert nonces.admit(issued[0], 1, T0 + 11) is NonceVerdict.FORGOTTEN
    assert nonces.admit(issued[1], 99, T0 + 11) is NonceVerdict.FORGOTTEN
    # Tracked ones keep their history; an unused nonce issued after the watermark is still good.
    assert nonces.admit(issued[4], 1, T0 + 11) is NonceVerdict.REPLAYED
    assert nonces.admit(issued[5], 1, T0 + 11) is NonceVerdict.ACCEPTED
    assert len(nonces) == 3


@pytest.mark.parametrize(
    "kwargs",
    [{"lifetime": 0}, {"lifetime": -1}, {"lifetime": math.inf}, {"lifetime": math.nan}, {"max_tracked": 0}],
)
def test_bad_settings(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        NonceRegistry(rng(), **kwargs)  # type: ignore[arg-type]


def test_opaque_is_stable_per_registry() -> None:
    nonces = NonceRegistry(rng())
    assert nonces.opaque == nonces.opaque
    assert nonces.opaque != NonceRegistry(rng(5)).opaque


@given(
    max_tracked=st.integers(1, 4),
    uses=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 6), st.integers(0, 30)), max_size=60),
)
def test_no_nc_is_ever_accepted_twice(max_tracked: int, uses: list[tuple[int, int, int]]) -> None:
    """Whatever the order and the evictions: an accepted (nonce, nc) was never accepted before, and
    memory stays bounded."""
    nonces = NonceRegistry(rng(), lifetime=20, max_tracked=max_tracked)
    issued = [nonces.issue(T0 + i) for i in range(8)]
    accepted: set[tuple[str, int]] = set()
    now = T0
    for index, nc, step in uses:
        now += step / 10
        n = issued[index]
        if nonces.admit(n, nc, now) is NonceVerdict.ACCEPTED:
            assert (n, nc) not in accepted
            assert now - nonces.issued_at(n) <= 20  # type: ignore[operator]
            accepted.add((n, nc))
        assert len(nonces) <= max_tracked
