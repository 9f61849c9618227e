"""TLS for Garlic Farm connections: the farm's certificates, pins, and Twisted options and endpoints.

Every connection is mutual TLS: each side presents its node certificate and verifies the other's,
either against the farm CA or against pinned fingerprints (see :mod:`garlicfarm.tls.options`).
"""

from garlicfarm.tls.certs import (
    CA_DAYS,
    NODE_DAYS,
    CertifiedKey,
    issue_node,
    load_certificate,
    load_certificates,
    load_certified_key,
    load_private_key,
    new_ca,
    write_certified_key,
    write_file,
)
from garlicfarm.tls.endpoints import client_endpoint, server_endpoint
from garlicfarm.tls.errors import TLSError, UnpinnedPeer
from garlicfarm.tls.options import NodeTLS, client_options, server_options
from garlicfarm.tls.pins import digest, fingerprint, format_pin, is_pinned, parse_pin, parse_pins

__all__ = [
    "CA_DAYS",
    "NODE_DAYS",
    "CertifiedKey",
    "NodeTLS",
    "TLSError",
    "UnpinnedPeer",
    "client_endpoint",
    "client_options",
    "digest",
    "fingerprint",
    "format_pin",
    "is_pinned",
    "issue_node",
    "load_certificate",
    "load_certificates",
    "load_certified_key",
    "load_private_key",
    "new_ca",
    "parse_pin",
    "parse_pins",
    "server_endpoint",
    "server_options",
    "write_certified_key",
    "write_file",
]
