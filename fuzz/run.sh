#!/usr/bin/env bash
# Fuzz one target, or merge what a run found into the committed corpus. See docs/fuzzing.md.
#
#   fuzz/run.sh TARGET [RUNS]     fuzz TARGET (codec, logpack, handshake) for RUNS executions
#                                 (default 1000000); grows /tmp/fuzz-corpus-TARGET, never the repo
#   fuzz/run.sh TARGET merge      minimise seeds + fuzz/corpus/TARGET + the grown corpus into
#                                 fuzz/corpus/TARGET (hand-made seed-* files always kept)
#
# Environment: FUZZ_WORK (default /tmp) holds the grown corpus, crash files and the log;
# FUZZ_MAX_LEN (default 65536); PYTHON (default .venv/bin/python).
set -euo pipefail

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
[[ ${1:-} == -h || ${1:-} == --help ]] && usage 0
target=${1:-}
case $target in codec | logpack | handshake) ;; *) echo "fuzz/run.sh: unknown target '${target}'" >&2; usage ;; esac
what=${2:-1000000}

cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
work=${FUZZ_WORK:-/tmp}
grown=$work/fuzz-corpus-$target
seeds=fuzz/corpus/$target
mkdir -p "$grown" "$work/fuzz-artifacts-$target"

if [[ $what == merge ]]; then
    # Minimise seeds + committed + grown inputs into the smallest set with the same coverage, then keep
    # the hand-made seeds (seed-*) and the rest of that set (libFuzzer names files by their SHA-1).
    before=$(find "$seeds" -type f | wc -l)
    minimal=$(mktemp -d)
    trap 'rm -rf "$minimal"' EXIT
    nice -n 10 "$python" -m "fuzz.fuzz_$target" -merge=1 -max_len="${FUZZ_MAX_LEN:-65536}" "$minimal" "$seeds" "$grown"
    for seed in "$seeds"/seed-*; do rm -f "$minimal/$(sha1sum <"$seed" | cut -d' ' -f1)"; done
    find "$seeds" -type f ! -name 'seed-*' -delete
    cp "$minimal"/* "$seeds"/ 2>/dev/null || true
    after=$(find "$seeds" -type f | wc -l)
    echo "fuzz/run.sh: $seeds: $before -> $after files ($(du -sh "$seeds" | cut -f1))"
    exit 0
fi
[[ $what =~ ^[0-9]+$ ]] || { echo "fuzz/run.sh: RUNS must be a number or 'merge', not '$what'" >&2; usage; }

log=$work/fuzz-$target.log
echo "fuzz/run.sh: $(date -u +%FT%TZ) $target, $what runs; log $log, crashes $work/fuzz-artifacts-$target/"
set -x
nice -n 10 "$python" -m "fuzz.fuzz_$target" \
    -atheris_runs="$what" -max_len="${FUZZ_MAX_LEN:-65536}" -rss_limit_mb=2048 -timeout=30 \
    -print_final_stats=1 -artifact_prefix="$work/fuzz-artifacts-$target/" \
    "$grown" "$seeds" 2>&1 | tee "$log" | grep --line-buffered -v -E '[[:space:]](NEW|REDUCE)[[:space:]]'
