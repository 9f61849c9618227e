#!/usr/bin/env bash
# Builds LazyFS (third_party/lazyfs: the FUSE file system that keeps unsynced writes in its own cache
# and drops them on command, as a power loss would) into ~/.cache/garlicfarm/lazyfs (kept across
# clones), and prints the binary's path.
#
#   scripts/build-lazyfs.sh [BUILD_DIR]
#
# Offline, from Debian's packages only (scripts/system-deps.sh installs them): LazyFS's CMake would
# download toml11 v3.7.1 and spdlog v1.10.0; Debian ships exactly those versions, so each is handed to
# it as a tiny source directory that finds the installed package. A build is reused while the sources
# are unchanged. Used by tests/powerloss; safe to run by hand.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/garlicfarm/lazyfs}
src=$here/third_party/lazyfs
stamp=$(cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
binary=$build/tree/lazyfs/build/lazyfs
if [[ -x $binary && "$(cat "$build/stamp" 2>/dev/null)" == "$stamp" ]]; then
    echo "$binary"
    exit 0
fi
for tool in cmake g++ make; do
    command -v "$tool" >/dev/null || { echo "build-lazyfs: $tool missing (scripts/system-deps.sh)" >&2; exit 2; }
done
for header in /usr/include/fuse3/fuse.h /usr/include/spdlog/spdlog.h /usr/include/toml.hpp; do
    [[ -f $header ]] || { echo "build-lazyfs: $header missing (scripts/system-deps.sh)" >&2; exit 2; }
done
rm -rf "$build"
mkdir -p "$build/shims/toml" "$build/shims/spdlog"
cp -r "$src" "$build/tree"
cat >"$build/shims/toml/CMakeLists.txt" <<'CMAKE'
find_package(toml11 3.7 REQUIRED GLOBAL)
CMAKE
cat >"$build/shims/spdlog/CMakeLists.txt" <<'CMAKE'
find_package(spdlog 1.10 REQUIRED GLOBAL)
add_library(spdlog INTERFACE)
target_link_libraries(spdlog INTERFACE spdlog::spdlog)
CMAKE
log=$build/build.log
(
    set -e
    cd "$build/tree/libs/libpcache" && mkdir -p build && cd build
    cmake .. -Wno-dev -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
        -DFETCHCONTENT_SOURCE_DIR_TOML="$build/shims/toml" \
        -DFETCHCONTENT_SOURCE_DIR_SPDLOG="$build/shims/spdlog"
    cmake --build . -j2
    cd "$build/tree/lazyfs" && mkdir -p build && cd build
    # Debian's spdlog uses the separate fmt library: LazyFS links neither by itself
    cmake -Wno-dev -DLAZYFS_BUILD_TESTS=OFF -DCMAKE_CXX_STANDARD_LIBRARIES="-lspdlog -lfmt" ..
    cmake --build . -j2
) >"$log" 2>&1 || { tail -20 "$log" >&2; echo "build-lazyfs: failed; the whole log: $log" >&2; exit 1; }
echo "$stamp" >"$build/stamp"
echo "$binary"
