#!/usr/bin/env bash
# Debian packages the test suite needs, installed when missing. Run it, or source it from scripts/test.sh.
# Idempotent and silent when everything is installed; `apt-get update` runs only when apt needs it.

# package name -> why (keep one a line; the e2e tests say which to install when one is missing)
GARLICFARM_SYSTEM_PACKAGES=(
    tinyproxy-bin  # /usr/bin/tinyproxy: the HTTP CONNECT proxy of tests/net/test_httpproxy_e2e.py
    i2pd           # /usr/sbin/i2pd: the real I2PControl router of tests/router/test_i2pd_e2e.py
    chromium       # /usr/bin/chromium: the headless browser Playwright drives in tests/admin (no download)
    openjdk-17-jre-headless  # java for Spark: garlicfarm pipeline and tests/pipeline
    prometheus     # /usr/bin/prometheus, promtool: docs/alerts.yml's tests and tests/metrics' e2e scrape
    # LazyFS (third_party/lazyfs, built by scripts/build-lazyfs.sh): tests/powerloss
    fuse3 libfuse3-dev cmake g++ make libspdlog-dev libtoml11-dev
)

garlicfarm_system_deps() {
    local pkg missing=() sudo=()
    if ! command -v dpkg-query >/dev/null 2>&1; then
        echo "system-deps: not a Debian system; install by hand: ${GARLICFARM_SYSTEM_PACKAGES[*]}" >&2
        return 0
    fi
    for pkg in "${GARLICFARM_SYSTEM_PACKAGES[@]}"; do
        if [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" != "install ok installed" ]; then
            missing+=("$pkg")
        fi
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "system-deps: missing ${missing[*]}; run as root: apt-get install ${missing[*]}" >&2
            return 1
        fi
        sudo=(sudo)
    fi
    echo "== installing Debian packages: ${missing[*]}"
    # Refresh the package lists first only if apt does not know a candidate (fresh image, no lists yet).
    for pkg in "${missing[@]}"; do
        if [[ "$(apt-cache policy "$pkg" 2>/dev/null)" != *"Candidate: "[!\(]* ]]; then
            "${sudo[@]}" apt-get update -q || return 1
            break
        fi
    done
    if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}"; then
        # Stale lists point at versions the mirror no longer has: refresh once and retry.
        "${sudo[@]}" apt-get update -q &&
            "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
                apt-get install -y -q --no-install-recommends "${missing[@]}" || return 1
    fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail # run, not sourced: a sourcing script keeps its own options
fi
garlicfarm_system_deps
