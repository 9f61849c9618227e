"""The console's Digest check (garlicfarm.admin.auth.DigestGuard) on the nonces it takes: only one this
console issued, and only within its lifetime — up to the lifetime itself, not a moment past it."""

from __future__ import annotations

import pytest

from garlicfarm.admin.auth import Credential, DigestGuard, Refused, User
from garlicfarm.handshake.digest import Algorithm, Challenge, DigestCredentials, compute_response
from garlicfarm.handshake.nonces import NonceRegistry

LIFETIME = 3600.0
ISSUED = 1000.0
CREDENTIALS = [Credential("farm", "farm", "secret")]


def _random(n: int) -> bytes:
    return b"\x07" * n


def _guard(registry: NonceRegistry | None = None) -> DigestGuard:
    return DigestGuard(registry or NonceRegistry(_random, lifetime=LIFETIME))


def _authorization(nonce: str, *, nc: int = 1, password: str = "secret", uri: str = "/api/farms") -> str:
    challenge = Challenge("garlicfarm-admin", nonce, Algorithm.SHA256)
    return DigestCredentials.answer(
        challenge, username="farm", password=password, method="GET", uri=uri, nc=nc, cnonce="c0ffee"
    ).to_header()


def _check(guard: DigestGuard, authorization: str, now: float) -> User | Refused:
    return guard.authenticate(authorization, "GET", "/api/farms", CREDENTIALS, now)


def test_a_nonce_it_issued_is_accepted() -> None:
    guard = _guard()
    nonce = guard.nonces.issue(ISSUED)
    assert _check(guard, _authorization(nonce), ISSUED) == User("farm", frozenset({"farm"}))


def test_a_nonce_another_console_issued_is_refused() -> None:
    """Same password, right digest, but a nonce this process never issued (another secret: another
    console, or this one before a restart)."""
    guard = _guard()
    other = NonceRegistry(lambda n: b"\x08" * n, lifetime=LIFETIME)
    verdict = _check(guard, _authorization(other.issue(ISSUED)), ISSUED)
    assert verdict == Refused("unknown nonce", stale=True)


@pytest.mark.parametrize(
    "nonce",
    [
        "x" * 48,  # the right length, not base64 of a MAC'd body
        "",
        "abc",
    ],
)
def test_a_made_up_nonce_is_refused(nonce: str) -> None:
    verdict = _check(_guard(), _authorization(nonce), ISSUED)
    assert isinstance(verdict, Refused) and verdict.reason == "unknown nonce"


def test_a_nonce_with_its_issue_time_changed_is_refused() -> None:
    guard = _guard()
    issued = guard.nonces.issue(ISSUED)
    later = guard.nonces.issue(ISSUED + 10 * LIFETIME)
    # splice: the later time on the earlier nonce's random part and MAC
    forged = later[:10] + issued[10:]
    assert forged != issued
    verdict = _check(guard, _authorization(forged), ISSUED + 10 * LIFETIME)
    assert verdict == Refused("unknown nonce", stale=True)


def test_a_nonce_is_accepted_until_its_lifetime_and_refused_just_after() -> None:
    guard = _guard()
    at_the_end = guard.nonces.issue(ISSUED)
    past_it = guard.nonces.issue(ISSUED)
    assert isinstance(_check(guard, _authorization(at_the_end), ISSUED + LIFETIME), User)
    verdict = _check(guard, _authorization(past_it), ISSUED + LIFETIME + 0.001)
    assert verdict == Refused("expired nonce", stale=True)


def test_a_nonce_in_use_expires_too() -> None:
    guard = _guard()
    nonce = guard.nonces.issue(ISSUED)
    assert isinstance(_check(guard, _authorization(nonce, nc=1), ISSUED + 1), User)
    assert isinstance(_check(guard, _authorization(nonce, nc=2), ISSUED + LIFETIME), User)
    verdict = _check(guard, _authorization(nonce, nc=3), ISSUED + LIFETIME + 0.001)
    assert verdict == Refused("expired nonce", stale=True)


def test_a_wrong_password_leaves_the_nonce_unused() -> None:
    guard = _guard()
    nonce = guard.nonces.issue(ISSUED)
    assert _check(guard, _authorization(nonce, password="guess"), ISSUED) == Refused(
        "wrong password for user 'farm'"
    )
    assert len(guard.nonces) == 0
    assert isinstance(_check(guard, _authorization(nonce), ISSUED), User)


def test_the_challenge_offers_a_nonce_that_then_works() -> None:
    guard = _guard()
    headers = guard.challenges(ISSUED)
    assert [h.split(",")[0] for h in headers] == ['Digest realm="garlicfarm-admin"'] * 2
    nonce = headers[0].split('nonce="')[1].split('"')[0]
    assert isinstance(_check(guard, _authorization(nonce), ISSUED + LIFETIME), User)
    assert isinstance(_check(guard, _authorization(nonce, nc=2), ISSUED + LIFETIME + 0.001), Refused)


def _fresh(guard: DigestGuard) -> str:
    return guard.nonces.issue(ISSUED)


@pytest.mark.parametrize(
    ("authorization", "reason"),
    [
        (None, "no credentials"),
        ("Basic ZmFybTpzZWNyZXQ=", "not Digest"),
        ('Digest username="farm"', "bad credentials: missing realm, nonce, uri, response, qop, nc, cnonce"),
    ],
)
def test_a_refusal_says_what_was_wrong_with_the_header(authorization: str | None, reason: str) -> None:
    guard = _guard()
    assert guard.authenticate(authorization, "GET", "/api/farms", CREDENTIALS, ISSUED) == Refused(reason)


def test_a_refusal_names_the_realm_uri_or_user_that_did_not_match() -> None:
    guard = _guard()
    other_realm = _authorization(_fresh(guard)).replace('realm="garlicfarm-admin"', 'realm="elsewhere"')
    assert _check(guard, other_realm, ISSUED) == Refused("realm 'elsewhere'")
    other_uri = _authorization(_fresh(guard), uri="/api/other")
    assert _check(guard, other_uri, ISSUED) == Refused("uri '/api/other' is not the request target")
    stranger = _authorization(_fresh(guard)).replace('username="farm"', 'username="eve"')
    assert _check(guard, stranger, ISSUED) == Refused("unknown user 'eve'")


def test_a_qop_spelled_in_capitals_is_hashed_as_sent() -> None:
    """RFC 7616's response covers the qop token the client sent; a client spelling it ``AUTH`` hashed
    ``AUTH``, so the console checks that spelling, not its own."""
    guard = _guard()
    nonce = _fresh(guard)
    response = compute_response(
        Algorithm.SHA256,
        username="farm",
        realm="garlicfarm-admin",
        password="secret",
        method="GET",
        uri="/api/farms",
        nonce=nonce,
        nc="00000001",
        cnonce="c0ffee",
        qop="AUTH",
    )
    authorization = (
        f'Digest username="farm", realm="garlicfarm-admin", uri="/api/farms", algorithm=SHA-256, '
        f'nonce="{nonce}", nc=00000001, cnonce="c0ffee", qop=AUTH, response="{response}"'
    )
    assert _check(guard, authorization, ISSUED) == User("farm", frozenset({"farm"}))


def test_a_challenge_carries_the_consoles_opaque_and_is_stale_only_when_asked() -> None:
    guard = _guard()
    fresh, stale = guard.challenges(ISSUED), guard.challenges(ISSUED, stale=True)
    for header in fresh + stale:
        assert f'opaque="{guard.nonces.opaque}"' in header
    assert not any("stale" in h for h in fresh)
    assert all(h.endswith("stale=true") for h in stale)
