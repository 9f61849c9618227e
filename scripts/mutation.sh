#!/usr/bin/env bash
# Mutation testing (mutmut) of the package: wire/, handshake/, net/, tls/, admin/, app/, router/,
# storage/, raft/ and client.py, against the fast tests (no e2e/slow ones). The scope is [tool.mutmut]
# in pyproject.toml; the results are in docs/verification.md.
#
#   scripts/mutation.sh                      # run, then print the score per module (Markdown)
#   scripts/mutation.sh --survivors [GLOB]   # run, then list what survived, as one-line diffs
#   scripts/mutation.sh --report-only ...    # no run: report on the last one
#   scripts/mutation.sh --recheck [GLOB]     # run the survivors again (after adding tests), then report
#
# Incremental: mutmut keeps its results in mutants/ and re-tests only the functions that changed
# since (new tests alone re-test nothing: use --recheck). A full run is 18,634 mutants; each runs
# the tests that reach its function, quickest first, until one fails (tests/conftest.py): a killed
# mutant takes seconds, a survivor of raft/ up to minutes. The whole of it is most of a day on this
# 2-core machine (run it on a machine of its own).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == --help || ${1:-} == -h ]]; then
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi
. scripts/setup-env.sh
python -m pip install -q -e '.[test,spark,mutation]'
# mutmut bounds a mutant's CPU time, not its wall time: a mutant that leaves a test waiting on a
# Deferred that never fires would hold its worker forever. pytest-timeout fails such a test (the
# mutant is caught: a hang is a failure).
export PYTEST_TIMEOUT=${PYTEST_TIMEOUT:-300}
if [[ ${1:-} == --report-only ]]; then
    shift
elif [[ ${1:-} == --recheck ]]; then
    # mutmut re-tests a mutant only when its function changes; a survivor a new test may kill is
    # named here (the first run over the changed sources happens too)
    python -m mutmut run --max-children "$(nproc)"
    mapfile -t names < <(python scripts/mutation_report.py --names "${2:-*}")
    if ((${#names[@]})); then
        python -m mutmut run --max-children "$(nproc)" "${names[@]}"
    fi
    set -- --survivors "${2:-*}"
else
    python -m mutmut run --max-children "$(nproc)"
fi
python scripts/mutation_report.py "$@"
