#!/usr/bin/env bash
# The benchmarks' environment: the project's .venv (scripts/setup-env.sh) plus the bench extra —
# PySyncObj, DuckDB, psutil, pyinstrument from PyPI. Then run one, e.g.
#   .venv/bin/python -m bench.compare          (throughput, latency, memory vs PySyncObj)
#   .venv/bin/python -m bench.failover         (kill -9 the leader, 20 trials)
#   .venv/bin/python -m bench.catchup          (a new member joins a 1M-entry log)
# Every command and its last recorded figures are in docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup-env.sh
stamp=.venv/.garlicfarm-bench-installed
if [ ! -f "$stamp" ] || [ setup.cfg -nt "$stamp" ]; then
    echo "== installing the bench extra (PySyncObj, DuckDB, psutil, pyinstrument)"
    .venv/bin/python -m pip install -q -e '.[test,spark,bench]' --config-settings editable_mode=compat
    touch "$stamp"
fi
