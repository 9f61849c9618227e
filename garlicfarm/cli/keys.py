"""``garlicfarm keys …`` (I2P key files in the routers' format) and ``garlicfarm metals decode``."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any, TextIO

from garlicfarm.cli.inspect import InspectError
from garlicfarm.i2p.encoding import b32
from garlicfarm.i2p.errors import I2PFormatError, UnsupportedSigType
from garlicfarm.i2p.i2cp import SESSION_OPTIONS, SessionConfig
from garlicfarm.i2p.keys import PrivateKeyFile, create_master, create_transient
from garlicfarm.i2p.metals import MetaLeaseSet
from garlicfarm.i2p.sigtypes import CRYPTO_TYPES, SIG_TYPES

DEFAULT_DAYS = 90


def add_parsers(sub: Any) -> None:
    keys = sub.add_parser(
        "keys",
        help="make and read I2P key files (Java I2P's and i2pd's private key file format)",
        description="Make the farm's master destination, each member's offline-signed transient key, and "
        "presigned I2CP session configs; read key files, including those i2pd and i2pd-tools make.",
    )
    ksub = keys.add_subparsers(dest="keys_command", metavar="ACTION", required=True)

    master = ksub.add_parser(
        "master",
        help="a new master destination and its private key file (keep it offline)",
        description="Writes a new private key file (Ed25519 signing, X25519 encryption) and prints the "
        "destination's b32 address and base64. Keep this file off the farm's machines: members get "
        "transient keys made from it.",
    )
    master.add_argument("out", type=Path, help="the key file to write (refused if it exists)")
    master.set_defaults(run=run_master)

    transient = ksub.add_parser(
        "transient",
        help="an offline-signed transient key for one member, valid for --days",
        description="Writes a key file in the form i2pd-tools' offlinekeys writes: the master's destination, "
        "a fresh transient Ed25519 key and the master's signature over it, valid until the expiry. A member "
        "holding it can sign the Meta LS2 until then, and no longer.",
    )
    transient.add_argument("--master", type=Path, required=True, help="the master's private key file")
    transient.add_argument(
        "--days", type=float, default=DEFAULT_DAYS, help="validity in days (default %(default)s)"
    )
    transient.add_argument("out", type=Path, help="the member's key file to write")
    transient.set_defaults(run=run_transient)

    session = ksub.add_parser(
        "session",
        help="an I2CP session config signed by the master key, for members publishing through i2pd",
        description="i2pd checks an I2CP CreateSession only against the destination's own key, so a member "
        "holding a transient key cannot sign one: the master signs it here, once, and the member's "
        "[publisher] session = FILE sends it as it is.",
    )
    session.add_argument("--master", type=Path, required=True, help="the master's private key file")
    session.add_argument("out", type=Path, help="the session config file to write")
    session.set_defaults(run=run_session)

    show = ksub.add_parser(
        "show",
        help="what a key file holds (destination, types, offline signature), as JSON",
        description="Reads a private key file (ours, i2pd's .dat, i2pd-tools' or Java I2P's) and prints its "
        "destination, types and offline signature as JSON; exit 1 when a key does not match.",
    )
    show.add_argument("file", type=Path)
    show.set_defaults(run=run_show)

    metals = sub.add_parser("metals", help="inspect Meta LeaseSets", description="Inspect Meta LeaseSet2s.")
    msub = metals.add_subparsers(dest="metals_command", metavar="ACTION", required=True)
    decode = msub.add_parser(
        "decode",
        help="print a Meta LS2 (netDb bytes) as JSON, with a verdict for each signature",
        description='Prints the Meta LS2 in FILE (its netDb bytes, as [publisher] format = "binary" writes '
        "them) as JSON; exit 1 when a signature fails or the offline signature has expired.",
    )
    decode.add_argument("file", type=Path)
    decode.add_argument("--now", type=int, help="judge expiry at this time (seconds since the epoch)")
    decode.set_defaults(run=run_decode)


def _write_new(path: Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InspectError(f"{path} exists: not overwriting a key file") from None
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def read_keys(path: Path) -> PrivateKeyFile:
    try:
        keys = PrivateKeyFile.decode(path.read_bytes())
        keys.check()
    except I2PFormatError as e:
        raise InspectError(f"{path}: not a usable private key file: {e}") from None
    return keys


def _master(path: Path) -> PrivateKeyFile:
    keys = read_keys(path)
    if keys.is_offline:
        raise InspectError(f"{path} is an offline (transient) key file: the master's own key file is needed")
    return keys


def run_master(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    keys = create_master(os.urandom)
    _write_new(args.out, keys.encoded)
    json.dump(describe(keys), stdout, indent=2)
    stdout.write("\n")


def run_transient(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    if not 0 < args.days <= 3650:
        raise InspectError("--days must be more than 0 and at most 3650")
    master = _master(args.master)
    member = create_transient(master, os.urandom, int(time.time() + args.days * 86_400))
    _write_new(args.out, member.encoded)
    json.dump(describe(member), stdout, indent=2)
    stdout.write("\n")


def run_session(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    master = _master(args.master)
    config = SessionConfig.create(master.destination, master.signer, int(time.time() * 1000), SESSION_OPTIONS)
    _write_new(args.out, config.encoded)
    stdout.write(f"{args.out}: I2CP session config for {master.destination.b32}\n")


def run_show(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    try:
        keys = PrivateKeyFile.decode(args.file.read_bytes())
    except I2PFormatError as e:
        raise InspectError(f"{args.file}: not a private key file: {e}") from None
    out = describe(keys)
    failed = False
    try:
        keys.check()
        out["check"] = "keys match"
    except UnsupportedSigType as e:
        out["check"] = f"not checked: {e}"
    except I2PFormatError as e:
        out["check"] = str(e)
        failed = True
    json.dump(out, stdout, indent=2)
    stdout.write("\n")
    if failed:
        raise InspectError(f"{args.file}: {out['check']}")


def describe(keys: PrivateKeyFile) -> dict[str, Any]:
    dest = keys.destination
    out: dict[str, Any] = {
        "b32": dest.b32,
        "destination": dest.b64,
        "signingType": _name(SIG_TYPES, dest.sig_code),
        "cryptoType": _name(CRYPTO_TYPES, dest.crypto_code),
        "offline": None,
    }
    if keys.offline is not None:
        out["offline"] = {
            "expires": keys.offline.expires,
            "expiresUtc": _utc(keys.offline.expires),
            "transientType": keys.offline.transient_type.name,
        }
    return out


def _name(table: dict[int, Any], code: int) -> str:
    known = table.get(code)
    return f"{code} ({known.name})" if known else f"{code} (unknown)"


def _utc(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def run_decode(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    try:
        ls = MetaLeaseSet.decode(args.file.read_bytes())
    except I2PFormatError as e:
        raise InspectError(f"{args.file}: not a Meta LS2: {e}") from None
    now = args.now if args.now is not None else int(time.time())
    verdicts = ls.verdicts(now)
    out = metals_json(ls)
    out["verdicts"] = {"offlineSignature": verdicts.offline, "signature": verdicts.signature}
    json.dump(out, stdout, indent=2)
    stdout.write("\n")
    if not verdicts.ok:
        raise InspectError(
            f"{args.file}: signature {verdicts.signature}"
            + (f", offline signature {verdicts.offline}" if verdicts.offline else "")
        )


def metals_json(ls: MetaLeaseSet) -> dict[str, Any]:
    offline = ls.offline
    return {
        "master": ls.destination.b32,
        "published": ls.published,
        "publishedUtc": _utc(ls.published),
        "expires": ls.expires_at,
        "expiresUtc": _utc(ls.expires_at),
        "flags": ls.all_flags,
        "offlineSignature": None
        if offline is None
        else {
            "expires": offline.expires,
            "expiresUtc": _utc(offline.expires),
            "transientType": offline.transient_type.name,
        },
        "options": dict(ls.options),
        "leases": [
            {"hash": b32(lease.hash), "type": lease.entry_type, "cost": lease.cost, "end": lease.end}
            for lease in ls.leases
        ],
        "revocations": [b32(h) for h in ls.revocations],
    }
