#!/usr/bin/env bash
# Build PurpleI2P's i2pd-tools (only keygen, offlinekeys, keyinfo) from source
# checkouts that the user supplies, and copy the three binaries to OUT/bin.
#
# Nothing is downloaded except Debian build packages (apt-get, only as root and
# only when missing). The i2pd-tools Makefile expects i2pd as a git submodule at
# ./i2pd; this script copies both trees into OUT/build so the user's checkouts
# are never written to.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: scripts/build-i2pd-tools.sh --i2pd-tools SRC --i2pd SRC --out DIR [options]

Build keygen, offlinekeys and keyinfo from PurpleI2P/i2pd-tools and copy them
to DIR/bin.

Required:
  --i2pd-tools SRC   checkout of https://github.com/PurpleI2P/i2pd-tools
  --i2pd SRC         checkout of https://github.com/PurpleI2P/i2pd, ideally at
                     the commit that i2pd-tools pins as its 'i2pd' submodule
                     (a mismatch is reported but not fatal)
  --out DIR          output directory; binaries go to DIR/bin, the build tree
                     to DIR/build, build facts to DIR/BUILD-INFO.txt

Options:
  --jobs N           parallel make jobs (default: 2)
  --clean            remove DIR/build first (default: reuse it, incremental)
  --no-apt           never run apt-get; fail if build packages are missing
  -h, --help         show this help

Debian packages needed: build-essential libboost-dev
libboost-program-options-dev libssl-dev zlib1g-dev. When run as root with
apt-get available, missing ones are installed (apt-get update runs first).
EOF
}

die() { echo "build-i2pd-tools: error: $*" >&2; exit 1; }
log() { echo "build-i2pd-tools: $*" >&2; }

TOOLS_SRC=""
I2PD_SRC=""
OUT=""
JOBS=2
CLEAN=0
NO_APT=0

while [[ $# -gt 0 ]]; do
    case "$1" in
        --i2pd-tools) [[ $# -ge 2 ]] || die "--i2pd-tools needs a value"; TOOLS_SRC="$2"; shift 2 ;;
        --i2pd)       [[ $# -ge 2 ]] || die "--i2pd needs a value"; I2PD_SRC="$2"; shift 2 ;;
        --out)        [[ $# -ge 2 ]] || die "--out needs a value"; OUT="$2"; shift 2 ;;
        --jobs)       [[ $# -ge 2 ]] || die "--jobs needs a value"; JOBS="$2"; shift 2 ;;
        --clean)      CLEAN=1; shift ;;
        --no-apt)     NO_APT=1; shift ;;
        -h|--help)    usage; exit 0 ;;
        *)            usage >&2; die "unknown argument: $1" ;;
    esac
done

[[ -n "$TOOLS_SRC" && -n "$I2PD_SRC" && -n "$OUT" ]] || { usage >&2; die "--i2pd-tools, --i2pd and --out are required"; }
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer"

TOOLS_SRC="$(cd "$TOOLS_SRC" && pwd)" || die "no such directory: $TOOLS_SRC"
I2PD_SRC="$(cd "$I2PD_SRC" && pwd)" || die "no such directory: $I2PD_SRC"
for f in Makefile keygen.cpp offlinekeys.cpp keyinfo.cpp common/key.hpp; do
    [[ -f "$TOOLS_SRC/$f" ]] || die "$TOOLS_SRC does not look like i2pd-tools (missing $f)"
done
for f in Makefile filelist.mk libi2pd/Identity.cpp; do
    [[ -f "$I2PD_SRC/$f" ]] || die "$I2PD_SRC does not look like i2pd (missing $f)"
done

# ---------------------------------------------------------------- packages
PKGS=(build-essential libboost-dev libboost-program-options-dev libssl-dev zlib1g-dev)
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
    for p in "${PKGS[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
else
    log "dpkg-query not found: not a Debian system, assuming the build tools and libraries are present"
fi
if [[ ${#missing[@]} -gt 0 ]]; then
    if [[ $NO_APT -eq 0 && $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        log "installing missing Debian packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    else
        die "missing Debian packages: ${missing[*]} (run as root, or: apt-get install ${missing[*]})"
    fi
fi

# ---------------------------------------------------------------- sources
git_head() { git -C "$1" rev-parse HEAD 2>/dev/null || echo unknown; }
TOOLS_COMMIT="$(git_head "$TOOLS_SRC")"
I2PD_COMMIT="$(git_head "$I2PD_SRC")"
PINNED="$(git -C "$TOOLS_SRC" ls-tree HEAD i2pd 2>/dev/null | awk '$2=="commit"{print $3}')"
PINNED="${PINNED:-unknown}"
if [[ "$PINNED" != unknown && "$I2PD_COMMIT" != "$PINNED" ]]; then
    log "warning: i2pd is at $I2PD_COMMIT but i2pd-tools pins $PINNED"
fi

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
BUILD="$OUT/build"
[[ $CLEAN -eq 1 ]] && rm -rf "$BUILD"
mkdir -p "$BUILD/i2pd-tools/i2pd" "$OUT/bin"

# Copy the trees (not their .git, nor any build products a user's tree has).
copy_tree() { # SRC DEST [extra tar excludes...]
    local src="$1" dest="$2"; shift 2
    tar -C "$src" --exclude=./.git --exclude=./obj --exclude='*.o' --exclude='*.d' \
        --exclude='*.a' --exclude='*.so' "$@" -cf - . | tar -C "$dest" -xf -
}
log "copying sources into $BUILD"
copy_tree "$TOOLS_SRC" "$BUILD/i2pd-tools" --exclude=./i2pd \
    --exclude=./keygen --exclude=./offlinekeys --exclude=./keyinfo
copy_tree "$I2PD_SRC" "$BUILD/i2pd-tools/i2pd" --exclude=./i2pd

# ---------------------------------------------------------------- build
# Only libi2pd.a (the tools need nothing else from i2pd), then the three tools.
log "building libi2pd.a (make -j$JOBS)"
make -C "$BUILD/i2pd-tools/i2pd" -j"$JOBS" mk_obj_dir libi2pd.a
log "building keygen offlinekeys keyinfo (make -j$JOBS)"
make -C "$BUILD/i2pd-tools" -j"$JOBS" keygen offlinekeys keyinfo

for t in keygen offlinekeys keyinfo; do
    install -m 0755 "$BUILD/i2pd-tools/$t" "$OUT/bin/$t"
done

cat > "$OUT/BUILD-INFO.txt" <<EOF
i2pd-tools source: $TOOLS_SRC
i2pd-tools commit: $TOOLS_COMMIT
i2pd source:       $I2PD_SRC
i2pd commit:       $I2PD_COMMIT
i2pd pinned by i2pd-tools: $PINNED
compiler: $(${CXX:-g++} --version | head -n1)
built: $(date -u +%Y-%m-%dT%H:%M:%SZ)
binaries: $OUT/bin/keygen $OUT/bin/offlinekeys $OUT/bin/keyinfo
EOF
log "done: $OUT/bin/{keygen,offlinekeys,keyinfo}"
cat "$OUT/BUILD-INFO.txt"
