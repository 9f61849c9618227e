#!/usr/bin/env bash
# Check Meta LeaseSet2 files with Java I2P's own net.i2p.data.MetaLeaseSet
# (readBytes + verifySignature), compiled from Java I2P sources plus our stubs.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: scripts/java-i2p-verify.sh --i2p-src DIR FILE...

  --i2p-src DIR  directory holding the Java I2P sources listed in
                 tests/javai2p/i2p-files.txt (package layout, e.g. DIR/net/i2p/data/MetaLeaseSet.java);
                 a checkout's core/java/src also works (only the listed files are used)
  FILE...        MetaLeaseSet files, netDb layout: LS2 header (destination) first,
                 no leading type byte, signature last

Compiles those files, tests/javai2p/stubs and tests/javai2p/VerifyMetaLS.java with javac
into a temporary directory and runs: java VerifyMetaLS FILE...
Prints one JSON line per file; exits 1 if any file fails to parse or verify.
Needs javac/java (tested with 17). Ed25519 (sig type 7) is verified by I2P's own
net.i2p.crypto.eddsa.EdDSAEngine (listed in i2p-files.txt), called from our DSAEngine stub.
Set JAVA_OPTS=-Dverify.now=<ms> to run the check as of another time.
USAGE
}

src=""
files=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --i2p-src) [ $# -ge 2 ] || { usage >&2; exit 2; }; src="$2"; shift 2 ;;
        --i2p-src=*) src="${1#--i2p-src=}"; shift ;;
        --) shift; files+=("$@"); break ;;
        -*) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
        *) files+=("$1"); shift ;;
    esac
done
[ -n "$src" ] || { echo "--i2p-src DIR is required" >&2; usage >&2; exit 2; }
[ ${#files[@]} -gt 0 ] || { echo "no FILE given" >&2; usage >&2; exit 2; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
list="$here/tests/javai2p/i2p-files.txt"
stubs="$here/tests/javai2p/stubs"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

srcs=()
while IFS=$'\t' read -r path _rest; do
    case "$path" in ''|'#'*) continue ;; esac
    [ -f "$src/$path" ] || { echo "missing Java I2P source: $src/$path" >&2; exit 2; }
    srcs+=("$src/$path")
done < "$list"

# our stubs only for classes the Java I2P set does not provide
while IFS= read -r f; do
    rel="${f#"$stubs"/}"
    skip=0
    for s in "${srcs[@]}"; do [ "${s#"$src"/}" = "$rel" ] && skip=1; done
    [ $skip -eq 1 ] || srcs+=("$f")
done < <(find "$stubs" -name '*.java' | sort)
srcs+=("$here/tests/javai2p/VerifyMetaLS.java")

javac -nowarn -encoding UTF-8 -d "$tmp/classes" "${srcs[@]}" 2> "$tmp/javac.err" || { cat "$tmp/javac.err" >&2; exit 2; }
# absolute paths, since java runs from anywhere
abs=()
for f in "${files[@]}"; do abs+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"); done
# shellcheck disable=SC2086
java ${JAVA_OPTS:-} -cp "$tmp/classes" VerifyMetaLS "${abs[@]}"
