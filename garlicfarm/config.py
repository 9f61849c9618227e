"""A node's configuration: TOML (read with ``tomllib``), validated at start with errors that name the key.

Secrets never live in the file or on the command line: ``[auth] password_file`` names a file holding
the password. Relative paths are relative to the configuration file's directory.

```toml
[node]
id = 1
cluster = "farm"
endpoint = "tcp://127.0.0.1:22600"         # advertised in Configuration entries
listen = "tcp:22600:interface=127.0.0.1"   # Twisted server endpoint string; [tls] wraps it in TLS
data_dir = "node-1"

[auth]
username = "farm"
password_file = "credentials"

[tls]                                      # certificates from `garlicfarm init`
ca = "ca.pem"                              # trust roots for peers (or use `pins`)
cert = "node-1.pem"
key = "node-1.key"
pins = []                                  # peers' certificate SHA-256 fingerprints, for farms without a CA

[peers]                                    # the founding members: id = endpoint (wins over the log's)
1 = "tcp://127.0.0.1:22600"
2 = "tcp://127.0.0.1:22601"

[raft]                                     # all optional
profile = "lan"                            # timings: "lan" or "i2p" (below); the next four override it
tick_ms = 10
election_ticks = 20
heartbeat_ticks = 10
campaign_rank_ticks = 4                    # ranked campaigns after a leader dies (0: random timeouts)
snapshot_every = 5000
pre_vote = "auto"                          # "auto": with peers that negotiate it (not JRaft); "on"; "off"

[limits]                                   # all optional
handshake_timeout = 10.0                   # seconds to complete the HTTP upgrade (60 with profile "i2p")
idle_timeout = 600.0                       # an inbound link silent this long is dropped
max_inbound = 256                          # concurrent authenticated inbound connections
max_unauthenticated = 64                   # connections still in TLS/upgrade (oldest pushed out)
max_buffered = 67108864                    # bytes of partly received messages over all connections
                                           # (at least max_entries_size + 64 KiB)
max_entries_size = 16777216                # bytes of log entries in one request

[admin]                                    # optional: the web console (docs/admin.md)
listen = 22700                             # a loopback port, or a Twisted endpoint string

[metrics]                                  # optional: /metrics, /livez, /readyz (docs/operations.md)
listen = 22650                             # a loopback port, or a Twisted endpoint string
```
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from garlicfarm.raft.types import RaftOptions

#: what [limits] max_buffered must hold beyond one message of max_entries_size (its header, with room)
_ROOM = 64 * 1024


class ConfigError(ValueError):
    """The configuration is unusable; the message names the file and the key."""


@attrs.frozen
class TLSConfig:
    ca: Path | None
    cert: Path
    key: Path
    #: "sha256:AB:CD:..." (or bare hex) fingerprints of acceptable peer certificates
    pins: tuple[str, ...] = ()
    #: False ([tls] client_certificates = "optional"): a peer may connect without a client certificate
    #: (Digest still authenticates it); one it does present must still be trusted
    require_client_certificate: bool = True


@attrs.frozen
class NodeConfig:
    path: Path
    id: int
    cluster: str
    endpoint: str
    listen: str
    data_dir: Path
    username: str
    password_file: Path
    tls: TLSConfig | None
    peers: Mapping[int, str]
    tick_seconds: float = 0.05
    #: seconds a client request may wait for its commit decision ([raft] commit_timeout)
    commit_timeout: float = 10.0
    raft: RaftOptions = RaftOptions()
    snapshot_every: int = 5000
    handshake_timeout: float = 10.0
    idle_timeout: float = 600.0
    max_inbound: int = 256
    max_unauthenticated: int = 64
    max_buffered: int = 64 * 1024 * 1024
    max_entries_size: int = 16 * 1024 * 1024
    #: [storage] fsync = false: for benchmarks against stores that do not fsync; never in production
    fsync: bool = True
    #: [storage] writer: "thread" (a leader's own log is written on a thread of its own while its
    #: entries replicate, Raft dissertation §10.2.1) or "inline" (every write on the reactor thread)
    writer: str = "thread"
    extra: Mapping[str, Any] = attrs.field(factory=dict)

    def password(self) -> str:
        return read_secret(self.password_file, f"{self.path}: [auth]")


@attrs.frozen
class TimingProfile:
    """Raft timings for a kind of network: a follower campaigns after a random timeout in
    [election_ticks, 2 * election_ticks) ticks without hearing from a leader; the leader sends a
    heartbeat every heartbeat_ticks."""

    tick_ms: int
    election_ticks: int
    heartbeat_ticks: int
    #: ranked campaigns (docs/raft.md, "Who campaigns first"): the ticks between one follower's
    #: campaign and the next one's in the ring after a dead leader: longer than a pre-vote round trip
    #: and a vote request, so that the first one's real vote reaches the next before it campaigns
    campaign_rank_ticks: int = 0
    #: [limits] handshake_timeout unless given: TLS, the upgrade and a Digest challenge are several
    #: round trips, of seconds each over I2P (10 s timed some out over simulated tunnels)
    handshake_timeout: float = 10.0
    #: [raft] commit_timeout unless given: how long a client request may wait for its commit decision
    #: before the answer "unknown" (over I2P a commit is a few round trips of seconds each, and a
    #: lost chunk costs one more: 10 s timed some out over simulated tunnels)
    commit_timeout: float = 10.0


#: how long a candidate that lost elections by refusal waits at most before campaigning again (the lower
#: end of its timeout; docs/raft.md, "Backing off"): above dmprinter's longest election timeout (5 s), so
#: that a JRaft node with the longer log campaigns first
BACKOFF_BOUND_MS = 6000

#: [raft] profile (docs/operations.md, "Timing profiles"):
#: lan: heartbeats every 100 ms (as PySyncObj's: what a farm at rest costs), campaigns 200 ms after the
#: last one heard, 40 ms more a rank (a leader's kill -9 -> next commit in about 0.25 s); 100 ms of
#: slack between a heartbeat and the timeout, as 50 / 150 ms had;
#: i2p: heartbeats every 1 s, campaigns after 10 s, 6 s more a rank (I2P tunnels: 1-3 s one way,
#: lossy, jittery)
PROFILES: dict[str, TimingProfile] = {
    "lan": TimingProfile(tick_ms=10, election_ticks=20, heartbeat_ticks=10, campaign_rank_ticks=4),
    "i2p": TimingProfile(
        tick_ms=250,
        election_ticks=40,
        heartbeat_ticks=4,
        campaign_rank_ticks=24,
        handshake_timeout=60.0,
        commit_timeout=60.0,
    ),
}


#: [raft] pre_vote: "auto" pre-votes with peers whose handshake says they speak it (plain votes with
#: JRaft); "on" assumes every peer does (a farm of garlicfarm nodes only); "off" never pre-votes
_PRE_VOTE_MODES = ("auto", "on", "off")


def read_secret(path: Path, where: str) -> str:
    """A password kept alone in a file (surrounding whitespace dropped); ConfigError naming ``where``
    (the table that named the file) when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as e:
        raise ConfigError(f"{where} password_file {path}: {e.strerror}") from None


def load_config(path: str | Path) -> NodeConfig:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    return parse_config(raw, path)


#: every table and key a node's TOML may hold ([peers] holds ids): a typo is refused, not ignored
KNOWN_KEYS: dict[str, frozenset[str] | None] = {
    "node": frozenset({"id", "cluster", "endpoint", "listen", "data_dir"}),
    "auth": frozenset({"username", "password_file"}),
    "tls": frozenset({"ca", "cert", "key", "pins", "client_certificates"}),
    "peers": None,
    "raft": frozenset(
        {
            "profile",
            "commit_timeout",
            "tick_ms",
            "pre_vote",
            "election_ticks",
            "heartbeat_ticks",
            "campaign_rank_ticks",
            "max_entries_per_append",
            "snapshot_every",
        }
    ),
    "limits": frozenset(
        {
            "handshake_timeout",
            "idle_timeout",
            "max_inbound",
            "max_unauthenticated",
            "max_buffered",
            "max_entries_size",
        }
    ),
    "storage": frozenset({"fsync", "writer"}),
    "app": frozenset({"interval", "publish_config", "master"}),
    "router": frozenset({"kind", "url", "password_file", "pin", "leaves", "status_file"}),
    "publisher": frozenset(
        {
            "kind",
            "path",
            "command",
            "url",
            "format",
            "keys",
            "expires",
            "i2cp",
            "session",
            "username",
            "password_file",
        }
    ),
    "archive": frozenset({"dir", "retention_days"}),
    "admin": frozenset(
        {
            "listen",
            "username",
            "password_file",
            "url",
            "origins",
            "sample_interval",
            "max_connections",
            "request_deadline",
        }
    ),
    "metrics": frozenset({"listen", "username", "password_file", "tls"}),
}


@attrs.frozen
class ExtraTable:
    """A table of a node's TOML that a layer at the edge reads itself ([admin], [metrics]): checked to be
    a table of known keys; ``where`` prefixes its errors."""

    table: Mapping[str, Any]
    where: str

    @classmethod
    def of(cls, node: NodeConfig, name: str) -> ExtraTable:
        table = node.extra.get(name, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{node.path}: {name} must be a table ([{name}])")
        where = f"{node.path}: [{name}]"
        known = KNOWN_KEYS[name] or frozenset()
        unknown = sorted(set(table) - known)
        if unknown:
            raise ConfigError(f"{where} unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
        return cls(table, where)

    def text(self, key: str) -> str | None:
        """A non-empty string, or None when the key is absent."""
        value = self.table.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigError(f"{self.where} {key} must be a non-empty string")
        return value


def _check_known(raw: Mapping[str, Any], path: Path) -> None:
    for table, value in raw.items():
        if table not in KNOWN_KEYS:
            raise ConfigError(f"{path}: unknown table [{table}]{_did_you_mean(table, KNOWN_KEYS)}")
        keys = KNOWN_KEYS[table]
        if keys is None or not isinstance(value, dict):
            continue
        for key in value:
            if key not in keys:
                raise ConfigError(f"{path}: [{table}] unknown key {key!r}{_did_you_mean(key, keys)}")


def _did_you_mean(word: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(sorted(known))})"


def parse_config(raw: Mapping[str, Any], path: Path) -> NodeConfig:
    base = path.parent
    _check_known(raw, path)
    reader = _Reader(raw, path)
    node = reader.table("node")
    auth = reader.table("auth")
    server_id = reader.integer(node, "node", "id", 1, 2**31 - 1)
    tls_table = raw.get("tls")
    tls = None
    if tls_table is not None:
        tls_raw = reader.table("tls")
        ca = reader.string(tls_raw, "tls", "ca", required=False)
        pins = reader.strings(tls_raw, "tls", "pins")
        if ca is None and not pins:
            raise ConfigError(f"{path}: [tls] needs ca or pins, to know which peers to trust")
        client_certificates = tls_raw.get("client_certificates", "required")
        if client_certificates not in ("required", "optional"):
            raise ConfigError(f'{path}: [tls] client_certificates must be "required" or "optional"')
        tls = TLSConfig(
            ca=base / ca if ca else None,
            cert=base / reader.string(tls_raw, "tls", "cert"),
            key=base / reader.string(tls_raw, "tls", "key"),
            pins=tuple(pins),
            require_client_certificate=client_certificates == "required",
        )
    peers_raw = reader.table("peers", required=False)
    peers: dict[int, str] = {}
    for key, value in peers_raw.items():
        try:
            peer_id = int(key)
        except ValueError:
            raise ConfigError(f"{path}: [peers] key {key!r} must be a server id (an integer)") from None
        if not 1 <= peer_id <= 2**31 - 1:
            raise ConfigError(f"{path}: [peers] id {peer_id} out of range 1..2147483647")
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{path}: [peers] {key} must be an endpoint string")
        peers[peer_id] = value
    raft = reader.table("raft", required=False)
    profile_name = raft.get("profile", "lan")
    profile = PROFILES.get(profile_name) if isinstance(profile_name, str) else None
    if profile is None:
        names = " or ".join(f'"{name}"' for name in PROFILES)
        raise ConfigError(f"{path}: [raft] profile must be {names}, not {profile_name!r}")
    tick_ms = reader.integer(raft, "raft", "tick_ms", 1, 60_000, default=profile.tick_ms)
    defaults = RaftOptions()
    pre_vote = raft.get("pre_vote", "auto")
    if pre_vote not in _PRE_VOTE_MODES:
        raise ConfigError(f'{path}: [raft] pre_vote must be "auto", "on" or "off", not {pre_vote!r}')
    # read (each with its own message naming the file) before RaftOptions checks how they fit together
    election_ticks = reader.integer(raft, "raft", "election_ticks", 2, 10_000, default=profile.election_ticks)
    heartbeat_ticks = reader.integer(
        raft, "raft", "heartbeat_ticks", 1, 10_000, default=profile.heartbeat_ticks
    )
    campaign_rank_ticks = reader.integer(
        raft, "raft", "campaign_rank_ticks", 0, 10_000, default=profile.campaign_rank_ticks
    )
    max_entries_per_append = reader.integer(
        raft, "raft", "max_entries_per_append", 1, 100_000, default=defaults.max_entries_per_append
    )
    try:
        options = RaftOptions(
            pre_vote=pre_vote != "off",
            negotiated_pre_vote=pre_vote == "auto",
            election_ticks=election_ticks,
            heartbeat_ticks=heartbeat_ticks,
            campaign_rank_ticks=campaign_rank_ticks,
            max_entries_per_append=max_entries_per_append,
            max_backoff_ticks=-(-BACKOFF_BOUND_MS // tick_ms),
        )
    except ValueError as e:
        raise ConfigError(f"{path}: [raft] {e}") from None
    limits = reader.table("limits", required=False)
    storage = reader.table("storage", required=False)
    fsync = storage.get("fsync", True)
    if not isinstance(fsync, bool):
        raise ConfigError(f"{path}: [storage] fsync must be true or false")
    writer = storage.get("writer", "thread")
    if writer not in ("thread", "inline"):
        raise ConfigError(f'{path}: [storage] writer must be "thread" or "inline", not {writer!r}')
    known = {"node", "auth", "tls", "peers", "raft", "limits", "storage"}
    max_entries_size = reader.integer(
        limits, "limits", "max_entries_size", 1024, 2**31, default=16 * 1024 * 1024
    )
    max_buffered = reader.integer(
        limits,
        "limits",
        "max_buffered",
        1024 * 1024,
        2**40,
        default=max(64 * 1024 * 1024, 2 * max_entries_size),
    )
    if max_buffered < max_entries_size + _ROOM:
        raise ConfigError(
            f"{path}: [limits] max_buffered ({max_buffered}) must hold one largest message: "
            f"at least max_entries_size + {_ROOM} ({max_entries_size + _ROOM})"
        )
    return NodeConfig(
        path=path,
        id=server_id,
        cluster=reader.string(node, "node", "cluster", default="farm"),
        endpoint=reader.string(node, "node", "endpoint"),
        listen=reader.string(node, "node", "listen"),
        data_dir=base / reader.string(node, "node", "data_dir"),
        username=reader.string(auth, "auth", "username"),
        password_file=base / reader.string(auth, "auth", "password_file"),
        tls=tls,
        peers=peers,
        tick_seconds=tick_ms / 1000,
        commit_timeout=reader.number(raft, "raft", "commit_timeout", 0.1, 3600, profile.commit_timeout),
        raft=options,
        snapshot_every=reader.integer(raft, "raft", "snapshot_every", 10, 10**9, default=5000),
        handshake_timeout=reader.number(
            limits, "limits", "handshake_timeout", 0.1, 3600, profile.handshake_timeout
        ),
        idle_timeout=reader.number(limits, "limits", "idle_timeout", 1, 10**7, 600.0),
        max_inbound=reader.integer(limits, "limits", "max_inbound", 1, 100_000, default=256),
        max_unauthenticated=reader.integer(limits, "limits", "max_unauthenticated", 1, 100_000, default=64),
        max_buffered=max_buffered,
        fsync=fsync,
        writer=writer,
        max_entries_size=max_entries_size,
        extra={k: v for k, v in raw.items() if k not in known},
    )


class _Reader:
    def __init__(self, raw: Mapping[str, Any], path: Path) -> None:
        self.raw = raw
        self.path = path

    def table(self, name: str, required: bool = True) -> Mapping[str, Any]:
        value = self.raw.get(name)
        if value is None:
            if required:
                raise ConfigError(f"{self.path}: missing table [{name}]")
            return {}
        if not isinstance(value, dict):
            raise ConfigError(f"{self.path}: {name} must be a table ([{name}])")
        return value

    def string(
        self,
        table: Mapping[str, Any],
        section: str,
        key: str,
        default: str | None = None,
        required: bool = True,
    ) -> Any:
        value = table.get(key, default)
        if value is None:
            if required:
                raise ConfigError(f"{self.path}: missing [{section}] {key}")
            return None
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{self.path}: [{section}] {key} must be a non-empty string")
        return value

    def strings(self, table: Mapping[str, Any], section: str, key: str) -> list[str]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{self.path}: [{section}] {key} must be a list of strings")
        return value

    def number(
        self, table: Mapping[str, Any], section: str, key: str, low: float, high: float, default: float
    ) -> float:
        value = table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            raise ConfigError(f"{self.path}: [{section}] {key} must be a number from {low} to {high}")
        return float(value)

    def integer(
        self,
        table: Mapping[str, Any],
        section: str,
        key: str,
        low: int,
        high: int,
        default: int | None = None,
    ) -> int:
        value = table.get(key, default)
        if value is None:
            raise ConfigError(f"{self.path}: missing [{section}] {key}")
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(f"{self.path}: [{section}] {key} must be an integer from {low} to {high}")
        return value
