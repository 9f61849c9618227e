#!/usr/bin/env bash
# The main job on a fresh machine: sets up .venv, then decodes every test vector of docs/protocol.md
# with the protocol inspector (until the service lands this is what garlicfarm runs end to end),
# and replays them through `garlicfarm encode` to show the round trip.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup-env.sh

vectors=$(awk '/^```hex$/{on=1; next} /^```$/{on=0} on' docs/protocol.md)
echo "== garlicfarm decode  (the $(grep -c '^```hex$' docs/protocol.md) vectors of docs/protocol.md)"
json=$(printf '%s\n' "$vectors" | garlicfarm decode)
printf '%s\n' "$json"
echo "== garlicfarm encode  (the same messages back to hex)"
printf '%s\n' "$json" | garlicfarm encode
