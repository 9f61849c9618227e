#!/usr/bin/env bash
# Re-make the console screenshot in docs/admin.md: a real 3-node farm, Debian's headless Chromium
# (Playwright, no browser download), the leader's console after WAIT seconds (default 45) of history.
# Usage: scripts/admin-screenshot.sh [OUTPUT.png]   (default docs/admin-console.png)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/admin-console.png}
GARLICFARM_SCREENSHOT="$out" GARLICFARM_SCREENSHOT_WAIT="${WAIT:-45}" \
    .venv/bin/pytest -q -p no:cacheprovider tests/admin/test_console_browser.py -k marks_the_leader
echo "screenshot: $out"
