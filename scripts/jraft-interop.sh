#!/usr/bin/env bash
# Mixed farms of real JRaft (dmprinter) and garlicfarm nodes on loopback: prints a verdict per scenario.
#
#   scripts/jraft-interop.sh SRC [--only TEXT]
#
# SRC is a JRaft source tree (GitHub datatechnology/jraft, e.g. `git archive` of it). It is compiled
# with plain javac from Debian packages only, no network and no Maven:
#   apt-get install openjdk-17-jdk-headless liblog4j1.2-java libgoogle-gson-java
# The HTTP module (servlets) and the H2 log store are left out: dmprinter needs neither. Nothing of
# JRaft is copied into this repository. Not run in CI. Results: docs/interop.md.
set -euo pipefail

if [[ $# -lt 1 || ! -d "$1/core/src/main/java" ]]; then
    echo "usage: $0 JRAFT_SOURCE_TREE [--only TEXT]" >&2
    exit 2
fi
src=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$here/.venv/bin/python}
jars=/usr/share/java/log4j-1.2.jar:/usr/share/java/gson.jar
for jar in ${jars//:/ }; do
    if [[ ! -f $jar ]]; then
        echo "missing $jar: apt-get install liblog4j1.2-java libgoogle-gson-java" >&2
        exit 2
    fi
done
command -v javac >/dev/null || { echo "javac missing: apt-get install openjdk-17-jdk-headless" >&2; exit 2; }

work=${WORK:-$(mktemp -d /tmp/jraft-interop.XXXXXX)}
classes=$work/classes
mkdir -p "$classes"
find "$src/core/src/main/java" "$src/exts/src/main/java" "$src/dmprinter/src/main/java" -name '*.java' \
    | grep -v '/http/' | grep -v 'H2LogStore' >"$work/sources.txt"
echo "compiling $(wc -l <"$work/sources.txt") JRaft sources from $src"
javac -nowarn -encoding UTF-8 -d "$classes" -cp "$jars" @"$work/sources.txt"
cp "$src/dmprinter/src/main/java/log4j.properties" "$classes/"
echo "work directory: $work"
cd "$here"
exec "$python" scripts/jraft_interop.py --classes "$classes:$jars" --work "$work" "$@"
