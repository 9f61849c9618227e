#!/usr/bin/env bash
# The main job on a fresh machine: set up .venv, create a local 3-node farm over TLS on loopback
# (./farm, kept between runs), start it, show that it elects a leader and commits, then keep it
# running until Ctrl-C. Options: --nodes N (default 3), --dir DIR (default ./farm), --once (stop
# after showing the status, for scripts).
set -euo pipefail
cd "$(dirname "$0")/.."

nodes=3
dir=farm
once=
while [ $# -gt 0 ]; do
    case "$1" in
        --nodes) nodes=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --once) once=1; shift ;;
        -h|--help) sed -n '2,5s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done

. scripts/setup-env.sh

if [ ! -f "$dir/node-1.toml" ]; then
    echo "== garlicfarm init $dir --nodes $nodes"
    garlicfarm init "$dir" --nodes "$nodes"
fi
nodes=$(ls "$dir"/node-*.toml | wc -l)

# The admin console (docs/admin.md): on loopback, at each node's port + 100, if not configured yet.
for toml in "$dir"/node-*.toml; do
    if ! grep -q '^\[admin\]' "$toml"; then
        port=$(sed -n 's/^listen = "tcp:\([0-9]*\).*/\1/p' "$toml" | head -1)
        printf '\n# The admin console (docs/admin.md), added by scripts/run.sh.\n[admin]\nlisten = %s\n' \
            "$((port + 100))" >>"$toml"
    fi
done

# A farm left running by an earlier run would answer for ours (and hold its ports): refuse.
# (status exits 0, or 2 when the node answered but knows no leader; 1 when nothing answered)
answered=0
garlicfarm status --config "$dir/node-1.toml" --timeout 2 >/dev/null 2>&1 || answered=$?
if [ "$answered" -ne 1 ]; then
    echo "run.sh: a farm from an earlier run is still running in $dir; stop its nodes first" >&2
    exit 1
fi

pids=()
stop() {
    trap - EXIT INT TERM
    echo "== stopping the farm"
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
}
trap stop EXIT INT TERM

echo "== starting $nodes nodes (logs in $dir/node-N.log)"
for i in $(seq 1 "$nodes"); do
    garlicfarm run --config "$dir/node-$i.toml" >>"$dir/node-$i.log" 2>&1 &
    pids+=($!)
done

# Our own nodes must be the ones answering: a node that exited is a failed start, shown with its log.
check_alive() {
    for i in $(seq 1 "$nodes"); do
        if ! kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
            echo "run.sh: node $i did not start; the end of $dir/node-$i.log:" >&2
            tail -n 5 "$dir/node-$i.log" >&2
            exit 1
        fi
    done
}

echo "== waiting for a leader"
leader=
for _ in $(seq 1 120); do
    check_alive
    if garlicfarm status --config "$dir/node-1.toml" --timeout 2 2>/dev/null | grep -q '"leader": [0-9]'; then
        leader=1
        break
    fi
    sleep 0.5
done
if [ -z "$leader" ]; then
    echo "run.sh: no leader within 60 s; see $dir/node-N.log" >&2
    exit 1
fi
check_alive

echo "== garlicfarm submit (through node 1; a follower redirects to the leader)"
index=$(garlicfarm submit --config "$dir/node-1.toml" '{"hello": "farm"}')
echo "committed at index $index"

echo "== garlicfarm status, each node"
for i in $(seq 1 "$nodes"); do
    garlicfarm status --config "$dir/node-$i.toml" --timeout 5 --brief || true  # 2: no leader (printed)
done

echo "== the Meta LS2 the farm publishes (signed by the chosen member; garlicfarm metals decode)"
metals=
for _ in $(seq 1 60); do
    metals=$(ls -t "$dir"/node-*/metals.bin 2>/dev/null | head -1 || true)
    [ -n "$metals" ] && break
    sleep 0.5
done
if [ -z "$metals" ]; then
    echo "run.sh: no member wrote a Meta LS2 within 30 s; see $dir/node-N.log" >&2
    exit 1
fi
echo "$metals: master $(sed -n 's/^master = "\(.*\)"/\1/p' "$dir/node-1.toml")"
garlicfarm metals decode "$metals"

echo "== the admin console (user: farm, password: the file $dir/credentials; the farm's own CA signs it)"
for i in $(seq 1 "$nodes"); do
    { garlicfarm status --config "$dir/node-$i.toml" --timeout 5 || true; } | sed -n 's/.*"admin_url": "\(.*\)".*/  node '"$i"': \1/p'
done

if [ -n "$once" ]; then
    exit 0
fi
echo "== the farm is running; try: garlicfarm status --config $dir/node-2.toml   (Ctrl-C stops it)"
wait
