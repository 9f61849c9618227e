"""``garlicfarm decode`` / ``garlicfarm encode``: the protocol inspector (a dissector for operators)."""

from __future__ import annotations

import argparse
import json
import re
from typing import TextIO

from garlicfarm.wire import Decoder, EncodeError, Limits, ProtocolError, encode
from garlicfarm.wire.jsonform import JsonFormError, from_json, to_json

_NOT_HEX = re.compile(r"[^0-9a-fA-F]")


class InspectError(Exception):
    """A one-line error for the user; the command exits 1."""


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    defaults = Limits()
    parser.add_argument(
        "--max-entries-size",
        type=int,
        default=defaults.max_entries_size,
        metavar="BYTES",
        help="largest logEntriesSize accepted in one request (default %(default)s)",
    )
    parser.add_argument(
        "--max-entries",
        type=int,
        default=defaults.max_entries,
        metavar="N",
        help="most entries accepted in one request or LogPack (default %(default)s)",
    )
    parser.add_argument(
        "--max-logpack-size",
        type=int,
        default=defaults.max_logpack_decompressed,
        metavar="BYTES",
        help="most bytes a LogPack may inflate to (default %(default)s)",
    )


def limits_from(args: argparse.Namespace) -> Limits:
    return Limits(
        max_entries_size=args.max_entries_size,
        max_entries=args.max_entries,
        max_logpack_decompressed=args.max_logpack_size,
    )


def parse_hex(text: str) -> bytes:
    """Hex digits with any whitespace between them; a stray character is named by its position."""
    compact: list[str] = []
    for i, ch in enumerate(text):
        if ch.isspace():
            continue
        if _NOT_HEX.match(ch):
            raise InspectError(f"invalid hex: {ch!r} at character {i}")
        compact.append(ch)
    if len(compact) % 2:
        raise InspectError("invalid hex: odd number of digits")
    return bytes.fromhex("".join(compact))


def run_decode(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    if args.file is not None:
        with open(args.file, "rb") as f:
            data = f.read()
    else:
        data = parse_hex(" ".join(args.hex) if args.hex else stdin.read())
    decoder = Decoder(limits_from(args))
    indent = 2 if args.pretty else None
    try:
        decoder.feed(data)
        while (message := decoder.next_message()) is not None:
            stdout.write(json.dumps(to_json(message), indent=indent, ensure_ascii=False) + "\n")
    except ProtocolError as e:
        raise InspectError(f"bad message: {e}") from None
    if decoder.buffered:
        raise InspectError(
            f"bad message: input ends inside a message ({decoder.buffered} bytes left over) "
            f"at byte {decoder.stream_offset}"
        )


def run_encode(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    if args.file is not None:
        with open(args.file, encoding="utf-8") as f:
            lines = f.read().splitlines()
    else:
        lines = stdin.read().splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            stdout.write(encode(from_json(json.loads(line))).hex() + "\n")
        except (ValueError, RecursionError) as e:  # JSONDecodeError, JsonFormError, EncodeError
            kind = "invalid JSON" if not isinstance(e, JsonFormError | EncodeError) else "bad message"
            raise InspectError(f"line {number}: {kind}: {e}") from None


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dec = sub.add_parser(
        "decode",
        help="print wire messages (hex on stdin, or raw bytes with --file) as JSON lines",
        description="Decode one or more concatenated Garlic Farm messages and print one JSON object "
        "per message. Input is hex (whitespace ignored) on stdin or as an argument, or raw bytes "
        "from --file. Exits 1 naming the byte offset of the first malformed field.",
    )
    dec.add_argument("hex", nargs="*", help="hex to decode, spaces allowed (default: read stdin)")
    dec.add_argument("--file", metavar="PATH", help="read raw bytes from PATH instead of hex")
    dec.add_argument("--pretty", action="store_true", help="indent the JSON")
    add_limit_options(dec)
    dec.set_defaults(run=run_decode)

    enc = sub.add_parser(
        "encode",
        help="turn JSON lines (as printed by decode) into hex, one line per message",
        description="Encode JSON objects, one per line, into wire messages printed as hex lines. "
        "The JSON form is the one `garlicfarm decode` prints; see docs/protocol.md.",
    )
    enc.add_argument("--file", metavar="PATH", help="read JSON lines from PATH (default: stdin)")
    enc.set_defaults(run=run_encode)
