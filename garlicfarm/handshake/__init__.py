"""The HTTP/1.1 upgrade handshake with Digest authentication (proposal 150), sans-I/O.

No sockets, no clock, no hidden randomness: the handshakes consume bytes and return events; time comes
in as ``now`` arguments and randomness from an injected ``random_bytes``. See ``docs/handshake.md``.
"""

from garlicfarm.handshake.cache import CachedChallenge, CacheKey, ChallengeCache
from garlicfarm.handshake.client import ClientHandshake
from garlicfarm.handshake.config import (
    DEFAULT_CLUSTER,
    DEFAULT_MAX_HEAD_SIZE,
    PROTOCOL_VERSION,
    ClientConfig,
    CredentialLookup,
    ServerConfig,
    request_target,
)
from garlicfarm.handshake.digest import Algorithm, Challenge, DigestCredentials, compute_response
from garlicfarm.handshake.errors import (
    AuthHeaderSyntaxError,
    ConfigError,
    CredentialsError,
    HandshakeError,
    HandshakeStateError,
)
from garlicfarm.handshake.events import (
    Authenticated,
    ClientEvent,
    Close,
    Failed,
    Failure,
    Reconnect,
    Reject,
    Rejected,
    SendBytes,
    ServerEvent,
    Upgraded,
)
from garlicfarm.handshake.features import (
    COMMIT_ACK,
    FEATURES_HEADER,
    OUR_FEATURES,
    PRE_VOTE,
    TRANSFER,
    format_features,
    parse_features,
)
from garlicfarm.handshake.nonces import NonceRegistry, NonceVerdict
from garlicfarm.handshake.server import ServerHandshake

__all__ = [
    "COMMIT_ACK",
    "DEFAULT_CLUSTER",
    "DEFAULT_MAX_HEAD_SIZE",
    "FEATURES_HEADER",
    "OUR_FEATURES",
    "PRE_VOTE",
    "PROTOCOL_VERSION",
    "TRANSFER",
    "Algorithm",
    "AuthHeaderSyntaxError",
    "Authenticated",
    "CacheKey",
    "CachedChallenge",
    "Challenge",
    "ChallengeCache",
    "ClientConfig",
    "ClientEvent",
    "ClientHandshake",
    "Close",
    "ConfigError",
    "CredentialLookup",
    "CredentialsError",
    "DigestCredentials",
    "Failed",
    "Failure",
    "HandshakeError",
    "HandshakeStateError",
    "NonceRegistry",
    "NonceVerdict",
    "Reconnect",
    "Reject",
    "Rejected",
    "SendBytes",
    "ServerConfig",
    "ServerEvent",
    "ServerHandshake",
    "Upgraded",
    "compute_response",
    "format_features",
    "parse_features",
    "request_target",
]
