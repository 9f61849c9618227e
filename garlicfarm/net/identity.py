"""Which member a peer connection speaks for: the server id its TLS certificate names.

``garlicfarm init`` issues each member a certificate whose common name is ``node-<id>``, signed by the
farm's CA; under mutual TLS only such a certificate gets through, so the name is proof. A connection
bound to server K may send peer messages (votes, appends, snapshots, joins, leaves) only as K: a
message that claims another source is refused and the connection dropped (docs/security.md). A
certificate with another name binds to nothing (a farm with its own naming, or a client's certificate).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID
from OpenSSL import SSL

from garlicfarm.wire import (
    AppendEntriesRequest,
    InstallSnapshotRequest,
    JoinClusterRequest,
    LeaveClusterRequest,
    RequestVoteRequest,
    SyncLogRequest,
)

_NODE_NAME = re.compile(r"node-([1-9][0-9]{0,9})")
MAX_SERVER_ID = 2**31 - 1

#: the requests only a member sends, each naming its sender in ``source``
PEER_REQUESTS = (
    AppendEntriesRequest,
    RequestVoteRequest,
    InstallSnapshotRequest,
    JoinClusterRequest,
    LeaveClusterRequest,
    SyncLogRequest,
)


def server_of_name(name: str | None) -> int | None:
    """``node-<id>`` names server ``id``; any other name, none."""
    match = _NODE_NAME.fullmatch(name or "")
    if match is None:
        return None
    server = int(match[1])
    return server if server <= MAX_SERVER_ID else None


def certificate_name(transport: Any) -> str | None:
    """The common name of the peer's TLS certificate, if the transport is TLS and the peer sent one."""
    get = getattr(transport, "getPeerCertificate", None)
    if get is None:
        return None
    try:
        certificate = get()
    except SSL.Error:  # no finished TLS session: no certificate
        return None
    if certificate is None:
        return None
    names = certificate.to_cryptography().subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else None


def certificate_file_name(path: Path) -> str | None:
    """The common name of the first certificate in the PEM file at ``path`` (None: none, or unreadable:
    the TLS set-up reports that file's problems)."""
    try:
        certificate = x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return None
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else None
