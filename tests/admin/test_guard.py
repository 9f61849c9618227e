"""An action's Origin (garlicfarm.admin.guard.origin_refusal) must be the console's own, or one of
``[admin] origins``, exactly: one that merely begins like one (another port, a longer name) is foreign."""

from __future__ import annotations

import string

import pytest

from garlicfarm.admin.guard import CsrfTokens, origin_refusal

HOST = "127.0.0.1:9101"
ALLOWED = ("https://console.example", "https://console.example:8443")


@pytest.mark.parametrize(
    "origin",
    [
        None,  # command-line clients send none
        "http://127.0.0.1:9101",
        "HTTP://127.0.0.1:9101",
        "https://console.example",
        "https://console.example/",
        "https://CONSOLE.example",
        "https://console.example:8443",
    ],
)
def test_the_consoles_own_origin_and_the_allowed_ones_pass(origin: str | None) -> None:
    assert origin_refusal(origin, None, "http", HOST, ALLOWED) is None


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:91011",  # one digit more
        "http://127.0.0.1:910",  # one digit less
        "http://127.0.0.1:9101.evil.example",
        "http://127.0.0.1:9101@evil.example",
        "http://127.0.0.1",
        "https://127.0.0.1:9101",  # the scheme is part of the origin
        "https://console.example.evil",
        "https://console.examplex",
        "https://console.example:84431",
        "https://console.example:844",
        "https://console.exampl",
        "http://console.example",
        "null",
        "",
    ],
)
def test_an_origin_that_only_begins_like_an_allowed_one_is_refused(origin: str) -> None:
    refusal = origin_refusal(origin, None, "http", HOST, ALLOWED)
    assert refusal == f"Origin {origin!r} is not this console's (http://{HOST})"


def test_without_a_host_only_the_allowed_origins_pass() -> None:
    assert origin_refusal("http://127.0.0.1:9101", None, "http", None, ALLOWED) is not None
    assert origin_refusal("http://", None, "http", None, ()) is not None
    assert origin_refusal("https://console.example", None, "http", None, ALLOWED) is None


@pytest.mark.parametrize("site", ["cross-site", "same-site", "CROSS-SITE", "anything"])
def test_a_fetch_from_another_site_is_refused(site: str) -> None:
    assert origin_refusal(None, site, "http", HOST, ALLOWED) == f"Sec-Fetch-Site: {site}"
    assert origin_refusal("http://127.0.0.1:9101", site, "http", HOST, ALLOWED) is not None


@pytest.mark.parametrize("site", [None, "same-origin", "none", "Same-Origin"])
def test_a_fetch_from_the_console_itself_passes(site: str | None) -> None:
    assert origin_refusal("http://127.0.0.1:9101", site, "http", HOST, ALLOWED) is None


def test_a_csrf_token_lives_to_the_end_of_the_next_window_and_comes_from_no_later_one() -> None:
    now = [250.0]
    tokens = CsrfTokens(b"k" * 32, lambda: now[0], window=100.0)
    token = tokens.token_for("farm")  # window 2: [200, 300)
    now[0] = 199.999  # window 1: the token is one window ahead
    assert tokens.check("farm", token) == "wrong"
    for valid in (200.0, 299.999, 300.0, 399.999):
        now[0] = valid
        assert tokens.check("farm", token) == "valid", valid
    now[0] = 400.0  # window 4: two windows on
    assert tokens.check("farm", token) == "expired"
    assert tokens.check("someone else", token) == "wrong"


def test_without_a_host_no_origin_is_taken_for_the_consoles_own() -> None:
    """With no Host header the console has no origin of its own: not even the one a missing host
    would spell (``http://None``)."""
    for origin in ("http://none", "http://None", "http://"):
        assert origin_refusal(origin, None, "http", None, ()) is not None


@pytest.mark.parametrize(("digits", "verdict"), [(20, "valid"), (21, "wrong")])
def test_a_token_number_of_20_digits_is_read_and_one_of_21_is_not(digits: int, verdict: str) -> None:
    """The window number is capped before ``int()`` reads it (a long digit string costs time, and past
    4,300 digits ``int()`` raises): a clock far on shows the cap is at 20 digits, not 19 or 21."""
    window = 10 ** (digits - 1)
    tokens = CsrfTokens(b"k" * 32, lambda: window * 100.0, window=100.0)
    token = tokens.token_for("farm")
    assert len(token.partition(".")[0]) == digits
    assert tokens.check("farm", token) == verdict


@pytest.mark.parametrize(
    "token",
    [
        "2.\ud800",  # a lone surrogate (a JSON string may carry one): no exception, no match
        "2.abc\udfff",
        "",
        ".",
        "2",
        "x2.abc",
        "2.abc.def",
        "9" * 5000 + ".abc",
    ],
)
def test_a_malformed_token_is_wrong_and_raises_nothing(token: str) -> None:
    tokens = CsrfTokens(b"k" * 32, lambda: 250.0, window=100.0)
    assert tokens.check("farm", token) == "wrong"
    assert not tokens.valid("farm", token)


def test_valid_says_what_check_says() -> None:
    tokens = CsrfTokens(b"k" * 32, lambda: 250.0, window=100.0)
    token = tokens.token_for("farm")
    assert tokens.valid("farm", token)
    assert not tokens.valid("other", token) and not tokens.valid("farm", None)


def test_a_tokens_mac_covers_its_window_number() -> None:
    """An expired token relabelled with the current window's number is wrong: the number is under
    the MAC, so a stolen token cannot be carried forward."""
    now = [250.0]
    tokens = CsrfTokens(b"k" * 32, lambda: now[0], window=100.0)
    number, _, mac = tokens.token_for("farm").partition(".")
    now[0] = 450.0
    assert tokens.check("farm", f"{int(number) + 2}.{mac}") == "wrong"
    assert tokens.check("farm", tokens.token_for("farm")) == "valid"


def test_a_token_is_its_window_number_and_a_192_bit_mac_in_url_safe_base64() -> None:
    """What the page sends back in ``X-CSRF-Token``: digits, a dot, 32 characters (no padding)."""
    token = CsrfTokens(b"k" * 32, lambda: 250.0, window=100.0).token_for("farm")
    number, _, mac = token.partition(".")
    assert number == "2"
    assert len(mac) == 32 and set(mac) <= set(string.ascii_letters + string.digits + "-_")


@pytest.mark.parametrize("window", [0.5, 1e-3])
def test_a_csrf_window_may_be_any_positive_length(window: float) -> None:
    tokens = CsrfTokens(b"k" * 32, lambda: 10.0, window=window)
    assert tokens.check("farm", tokens.token_for("farm")) == "valid"


@pytest.mark.parametrize("window", [0.0, -1.0, float("nan")])
def test_a_csrf_window_that_is_not_positive_is_refused(window: float) -> None:
    with pytest.raises(ValueError, match=f"^the CSRF window must be positive, not {window!r}$"):
        CsrfTokens(b"k" * 32, lambda: 10.0, window=window)
