"""Digest credentials, configs and the auth-header grammar, word for word: the server's refusal detail
is built from these messages. And the qop text kept as sent, since the response covers it."""

from __future__ import annotations

import pytest

from garlicfarm.handshake import (
    Algorithm,
    AuthHeaderSyntaxError,
    ConfigError,
    CredentialsError,
    DigestCredentials,
)
from garlicfarm.handshake.authheader import parse_challenges, parse_credentials
from tests.handshake.helpers import client_config, server_config
from tests.handshake.test_digest import _GOOD


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"qop": None, "nc": None, "cnonce": None}, "missing qop, nc, cnonce"),
        ({"userhash": "true"}, "userhash is not supported"),
        ({"nc": "00000000"}, "nc 00000000: a nonce count starts at 00000001 (RFC 7616 section 3.4)"),
        ({"cnonce": ""}, "empty cnonce"),
    ],
)
def test_unusable_credentials_are_named(change: dict[str, str | None], words: str) -> None:
    params = {**_GOOD, **change}
    with pytest.raises(CredentialsError) as info:
        DigestCredentials.from_params({k: v for k, v in params.items() if v is not None})
    assert str(info.value) == words


@pytest.mark.parametrize("qop", ["auth", "AUTH", "Auth"])
def test_the_qop_is_kept_as_sent(qop: str) -> None:
    """Matched without case, kept as written: the server hashes the text the client hashed."""
    assert DigestCredentials.from_params({**_GOOD, "qop": qop}).qop == qop


def test_a_scheme_must_be_followed_by_a_space() -> None:
    """RFC 7235: ``auth-scheme [ 1*SP ...]``; after a tab the parameters are not the scheme's."""
    with pytest.raises(AuthHeaderSyntaxError) as info:
        parse_challenges("Digest\trealm=x")
    assert str(info.value) == "expected a token at character 12"


def test_a_missing_token_is_named_with_its_position() -> None:
    with pytest.raises(AuthHeaderSyntaxError) as info:
        parse_credentials("Digest =x")
    assert str(info.value) == "expected a token at character 7"


def test_bad_configs_are_named() -> None:
    with pytest.raises(ConfigError) as info:
        server_config(realm="x\n")
    assert str(info.value) == "realm must be non-empty printable ASCII, not 'x\\n'"
    with pytest.raises(ConfigError) as info:
        client_config(algorithms=(Algorithm.MD5, Algorithm.MD5))
    assert str(info.value) == (
        "algorithms must list distinct Algorithm values, not (<Algorithm.MD5: 'MD5'>, <Algorithm.MD5: 'MD5'>)"
    )
