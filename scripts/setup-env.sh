# Sourced by the scripts: create .venv if needed, install the project with its test and spark extras into it,
# and put it first on PATH. Idempotent and quiet when everything is already installed.
set -euo pipefail
if [ ! -x .venv/bin/python ]; then
    echo "== creating .venv"
    python3 -m venv .venv
fi
stamp=.venv/.garlicfarm-installed
if [ ! -f "$stamp" ] || [ setup.cfg -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "== installing garlicfarm and its test dependencies"
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[test,spark]'
    # (setup.cfg's package_dir makes the editable install a static path: Twisted finds twisted/plugins/ here)
    touch "$stamp"
fi
export PATH="$PWD/.venv/bin:$PATH"
