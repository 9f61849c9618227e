#!/usr/bin/env bash
# The whole test suite on a fresh machine: sets up .venv, installs the project with its test extras
# and the Debian packages the end-to-end tests drive (scripts/system-deps.sh), then runs ruff, mypy
# and pytest. Extra arguments go to pytest (e.g. `scripts/test.sh -m "not e2e"`).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup-env.sh
. scripts/system-deps.sh

echo "== ruff"
ruff check .
ruff format --check .
echo "== mypy"
mypy
echo "== pytest"
set +e
pytest -q -p no:cacheprovider --durations=20 "$@"
status=$?
set -e
# pytest exits 5 when it collected nothing: that is a failure of the suite, not a pass.
exit "$status"
