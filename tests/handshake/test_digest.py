"""Digest computation (known answers from the RFCs) and the auth-header syntax."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from garlicfarm.handshake import (
    Algorithm,
    AuthHeaderSyntaxError,
    Challenge,
    CredentialsError,
    DigestCredentials,
    compute_response,
)
from garlicfarm.handshake.authheader import (
    AuthItem,
    credentials_scheme,
    parse_challenges,
    parse_credentials,
    quote,
)


def test_rfc2617_section_3_5_md5_example() -> None:
    assert (
        compute_response(
            Algorithm.MD5,
            username="Mufasa",
            realm="testrealm@host.com",
            password="Circle Of Life",
            method="GET",
            uri="/dir/index.html",
            nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093",
            nc="00000001",
            cnonce="0a4f113b",
        )
        == "6629fae49393a05397450978507c4ef1"
    )


@pytest.mark.parametrize(
    ("algorithm", "expected"),
    [
        (Algorithm.SHA256, "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
        (Algorithm.MD5, "8ca523f5e9506fed4657c9700eebdbec"),
    ],
)
def test_rfc7616_section_3_9_1_examples(algorithm: Algorithm, expected: str) -> None:
    assert (
        compute_response(
            algorithm,
            username="Mufasa",
            realm="http-auth@example.org",
            password="Circle of Life",
            method="GET",
            uri="/dir/index.html",
            nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
            nc="00000001",
            cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ",
        )
        == expected
    )


def test_rfc7616_challenge_parses() -> None:
    # The two challenges of RFC 7616 §3.9.1, in one header as RFC 7235 allows.
    value = (
        'Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=SHA-256, '
        'nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", '
        'opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS", '
        'Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=MD5, '
        'nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", '
        'opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"'
    )
    challenges = [Challenge.from_item(item) for item in parse_challenges(value)]
    assert [c.algorithm if c else None for c in challenges] == [Algorithm.SHA256, Algorithm.MD5]
    assert challenges[0] == Challenge(
        "http-auth@example.org",
        "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
        Algorithm.SHA256,
        "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS",
    )


def test_challenge_formats_like_rfc7616() -> None:
    challenge = Challenge("farm", "n0nce", Algorithm.SHA256, "op", stale=True)
    assert challenge.to_header() == (
        'Digest realm="farm", qop="auth", algorithm=SHA-256, nonce="n0nce", opaque="op", stale=true'
    )
    assert Challenge.from_item(parse_challenges(challenge.to_header())[0]) == challenge


def test_mixed_schemes_in_one_header() -> None:
    items = parse_challenges('Basic realm="x", Negotiate abc==, Digest realm="y", nonce=n, qop=auth, Bearer')
    assert [i.scheme for i in items] == ["basic", "negotiate", "digest", "bearer"]
    assert items[1].token68 == "abc=="
    assert items[2].params == {"realm": "y", "nonce": "n", "qop": "auth"}
    assert Challenge.from_item(items[2]) == Challenge("y", "n", Algorithm.MD5)  # no algorithm: MD5


@pytest.mark.parametrize(
    "value",
    [
        'Digest realm="x", nonce="n", qop="auth", algorithm=MD5-sess',
        'Digest realm="x", nonce="n", qop="auth", algorithm=SHA-512-256',
        'Digest realm="x", nonce="n"',  # RFC 2069: no qop, no nc, no replay protection
        'Digest realm="x", nonce="n", qop="auth-int"',
        'Digest nonce="n", qop="auth"',
        'Digest realm="x", nonce="", qop="auth"',
        'Basic realm="x"',
    ],
)
def test_unusable_challenges(value: str) -> None:
    assert [Challenge.from_item(i) for i in parse_challenges(value)] == [None]


@pytest.mark.parametrize(
    "value",
    [
        'Digest realm="unterminated',
        "Digest realm=x, realm=y",
        'Digest realm="x" nonce="y"',
        "Digest realm=,x=y",  # "realm=" would be a token68, but then no params may follow
        'Digest realm="x", nonce=',
        "=x",
        'Digest realm="\x01"',
    ],
)
def test_syntax_errors(value: str) -> None:
    with pytest.raises(AuthHeaderSyntaxError):
        parse_challenges(value)


def test_quoted_string_escapes_round_trip() -> None:
    value = 'a "quoted" back\\slash'
    assert parse_credentials(f"Digest username={quote(value)}").params == {"username": value}


def test_credentials_basic_is_token68() -> None:
    assert parse_credentials("Basic YWxpY2U6cHc=") == AuthItem("basic", token68="YWxpY2U6cHc=")
    assert credentials_scheme("  Basic ####") == "basic"
    assert credentials_scheme("") == ""


def test_credentials_round_trip() -> None:
    challenge = Challenge("farm", "n", Algorithm.SHA256, "op")
    c = DigestCredentials.answer(
        challenge, username="alice", password="pw", method="GET", uri="/x", nc=10, cnonce="cn"
    )
    assert c.nc == "0000000a"
    assert c.nc_value == 10
    assert DigestCredentials.from_params(parse_credentials(c.to_header()).params) == c


_GOOD = {
    "username": "u",
    "realm": "r",
    "nonce": "n",
    "uri": "/",
    "response": "0" * 64,
    "qop": "auth",
    "nc": "00000001",
    "cnonce": "c",
    "algorithm": "SHA-256",
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cnonce": None}, "missing cnonce"),
        ({"nc": "1"}, "not 8 hex digits"),
        ({"nc": "0000000g"}, "not 8 hex digits"),
        ({"nc": "00000000"}, "starts at 00000001"),
        ({"algorithm": "MD5-sess"}, "unsupported algorithm"),
        ({"algorithm": "SHA-256-sess"}, "unsupported algorithm"),
        ({"algorithm": "SHA-512"}, "unsupported algorithm"),
        ({"qop": "auth-int"}, "unsupported qop"),
        ({"userhash": "true"}, "userhash"),
        ({"cnonce": ""}, "empty cnonce"),
    ],
)
def test_unusable_credentials(change: dict[str, str | None], message: str) -> None:
    params = {**_GOOD, **change}
    with pytest.raises(CredentialsError, match=message):
        DigestCredentials.from_params({k: v for k, v in params.items() if v is not None})


def test_credentials_defaults_to_md5_when_algorithm_absent() -> None:
    params = {k: v for k, v in _GOOD.items() if k != "algorithm"}
    assert DigestCredentials.from_params(params).algorithm is Algorithm.MD5


_printable = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=30)


@given(username=_printable, realm=_printable, nonce=_printable, uri=_printable, nc=st.integers(1, 2**32 - 1))
def test_format_then_parse_is_identity(username: str, realm: str, nonce: str, uri: str, nc: int) -> None:
    challenge = Challenge(realm, nonce, Algorithm.MD5, opaque=nonce)
    assert Challenge.from_item(parse_challenges(challenge.to_header())[0]) == challenge
    c = DigestCredentials.answer(
        challenge, username=username, password="p", method="GET", uri=uri, nc=nc, cnonce="c"
    )
    assert DigestCredentials.from_params(parse_credentials(c.to_header()).params) == c
