"""Statement deletion: every statement of the given modules removed in turn (replaced by ``pass``), each
against the fast tests that run it. A mutant no test kills is a statement the suite does not need —
or a gap (mutmut makes no such mutant: it changes operators and constants, never drops a line).

    python scripts/statement_deletion.py [--jobs 2] [--out FILE] [--again RESULTS]
        [--tests TEST_PATH...] -- MODULE...

Defaults: the modules of raft/, storage/, handshake/ and the admission path (net/inbound.py,
net/budget.py, net/identity.py) against tests/raft, tests/storage, tests/handshake, tests/net and
tests/app, without e2e/slow tests. First one coverage run (pytest-cov, a context per test) says which
tests run each line; then each mutant runs only those, in a process forked from one that has already
imported pytest, Twisted and the other libraries (a run costs what its tests cost). Each job works in a
copy of the sources under a scratch directory: the checkout is never changed.

Lines that only log (``self.log.info(...)``) are counted apart: removing one changes what an operator
reads, which tests check for the lines operators act on only. Results: a table per module and every
survivor as ``path:line: source`` (docs/verification.md).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODULES = [
    "garlicfarm/raft/core.py",
    "garlicfarm/raft/driver.py",
    "garlicfarm/raft/log.py",
    "garlicfarm/raft/progress.py",
    "garlicfarm/raft/types.py",
    "garlicfarm/raft/writers.py",
    "garlicfarm/storage/sqlite.py",
    "garlicfarm/storage/snapshots.py",
    "garlicfarm/storage/_rules.py",
    "garlicfarm/storage/memory.py",
    "garlicfarm/storage/datadir.py",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "garlicfarm/handshake").glob("*.py")),
    "garlicfarm/net/inbound.py",
    "garlicfarm/net/budget.py",
    "garlicfarm/net/identity.py",
]
TESTS = ["tests/raft", "tests/storage", "tests/handshake", "tests/net", "tests/app"]
MARKERS = "not e2e and not slow"
#: a mutant's run may take this many times its tests' own time (plus a floor) before it counts as hung
TIMEOUT_FACTOR, TIMEOUT_FLOOR = 10.0, 30.0
LOG_NAMES = {"log", "_log"}


def statements(path: Path) -> list[dict[str, Any]]:
    """The statements inside functions that deleting means something for (not docstrings, ``pass``
    or nested definitions): line span, indentation, whether it only logs."""
    tree = ast.parse(path.read_text())
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            if node is func or not isinstance(node, ast.stmt):
                continue
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Pass):
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # a docstring
            found.append(
                {
                    "line": node.lineno,
                    "end": node.end_lineno or node.lineno,
                    "col": node.col_offset,
                    "log_only": _logs(node),
                    "func": func.name,
                }
            )
    # a statement is found once per enclosing def; the innermost (walked last) names it
    unique = {(s["line"], s["end"]): s for s in found}
    return sorted(unique.values(), key=lambda s: (s["line"], s["end"]))


def _logs(node: ast.stmt) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    func = node.value.func
    while isinstance(func, ast.Attribute):
        if func.attr in LOG_NAMES:
            return True
        func = func.value
    return isinstance(func, ast.Name) and func.id in LOG_NAMES


def deleted(source: str, stmt: dict[str, Any]) -> str:
    """``source`` with the statement replaced by ``pass`` (line numbers kept)."""
    lines = source.splitlines(keepends=True)
    first, last = stmt["line"] - 1, stmt["end"] - 1
    head = lines[first]
    # a statement that shares its first line with what opens its block (`if x: y`) keeps the opener
    replacement = head[: stmt["col"]] + "pass\n"
    blanks = ["\n"] * (last - first)
    return "".join([*lines[:first], replacement, *blanks, *lines[last + 1 :]])


def coverage_map(work: Path, modules: list[str], tests: list[str]) -> dict[str, dict[int, list[str]]]:
    """For each module, line -> the test node ids that run it (one pytest-cov run with contexts)."""
    data = work / ".coverage"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        MARKERS,
        "--cov=garlicfarm",
        "--cov-context=test",
        "--cov-report=",
        *tests,
    ]
    print(f"coverage run: {' '.join(cmd[3:])}", file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=work, check=False, env={**os.environ, "COVERAGE_FILE": str(data)})
    import coverage

    cov = coverage.CoverageData(basename=str(data))
    cov.read()
    out: dict[str, dict[int, list[str]]] = {}
    for module in modules:
        by_line = cov.contexts_by_lineno(str(work / module))
        out[module] = {
            line: sorted({c.rsplit("|", 1)[0] for c in contexts if c}) for line, contexts in by_line.items()
        }
    return out


def durations(work: Path, tests: list[str]) -> dict[str, float]:
    """Each test's own time, from one run (to bound a mutant's run)."""
    report = work / "durations.json"
    plugin = work / "_durations_plugin.py"
    plugin.write_text(
        "import json, time\n"
        "T = {}\n"
        "def pytest_runtest_logreport(report):\n"
        "    if report.when == 'call': T[report.nodeid] = report.duration\n"
        f"def pytest_sessionfinish(session):\n    open({str(report)!r}, 'w').write(json.dumps(T))\n"
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "_durations_plugin",
            "-m",
            MARKERS,
            *tests,
        ],
        cwd=work,
        check=False,
        env={**os.environ, "PYTHONPATH": str(work)},
        capture_output=True,
    )
    return json.loads(report.read_text()) if report.exists() else {}


# ------------------------------------------------------------------------------------------ worker


def worker(work: Path, jobs_file: Path, results_file: Path) -> None:
    """Runs the mutants in ``jobs_file`` (JSON Lines) in ``work``, a fork per mutant."""
    sys.path.insert(0, str(work))
    os.chdir(work)
    # what every test run imports, imported once before the forks
    import hypothesis  # noqa: F401
    import pytest
    import twisted.internet.defer
    import twisted.internet.task
    import twisted.trial.unittest  # noqa: F401

    with open(results_file, "a") as out:
        for line in jobs_file.read_text().splitlines():
            job = json.loads(line)
            path = work / job["module"]
            original = path.read_text()
            path.write_text(deleted(original, job["stmt"]))
            started = time.monotonic()
            pid = os.fork()
            if pid == 0:  # the child: run the tests against the mutated module, never return
                try:
                    devnull = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(devnull, 1)
                    os.dup2(devnull, 2)
                    args = ["-x", "-q", "-p", "no:cacheprovider", "-m", MARKERS, *job["tests"]]
                    os._exit(int(pytest.main(args)))
                except BaseException:
                    os._exit(99)
            outcome = _wait(pid, job["timeout"])
            path.write_text(original)
            out.write(
                json.dumps({**job, "outcome": outcome, "seconds": round(time.monotonic() - started, 2)})
                + "\n"
            )
            out.flush()


def _wait(pid: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            return "survived" if code == 0 else ("no tests" if code == 5 else "killed")
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.02)


# ------------------------------------------------------------------------------------------ parent


def copy_sources(dest: Path) -> None:
    for name in ("garlicfarm", "tests", "scripts"):
        shutil.copytree(REPO / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "setup.cfg"):
        shutil.copy2(REPO / name, dest / name)


def report(results: list[dict[str, Any]], modules: list[str]) -> str:
    rows: defaultdict[str, defaultdict[str, int]] = defaultdict(lambda: defaultdict(int))
    survivors = []
    for r in results:
        kind = r["outcome"]
        if kind in ("survived", "no tests") and r["stmt"]["log_only"]:
            kind = "log line only"
        rows[r["module"]][kind] += 1
        rows[r["module"]]["statements"] += 1
        if kind in ("survived", "no tests"):
            survivors.append(r)
    lines = [
        "| module | statements | killed | timeout | log line only | survived | no tests | score |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for module in modules:
        row = rows[module]
        if not row["statements"]:
            continue
        counted = row["statements"] - row["log line only"]
        score = (row["killed"] + row["timeout"]) / counted * 100 if counted else 100.0
        lines.append(
            f"| `{module}` | {row['statements']} | {row['killed']} | {row['timeout']}"
            f" | {row['log line only']} | {row['survived']} | {row['no tests']} | {score:.1f} % |"
        )
    lines.append("")
    for r in sorted(survivors, key=lambda r: (r["module"], r["stmt"]["line"])):
        lines.append(f"- {r['module']}:{r['stmt']['line']}: {r['outcome']}: `{r['source']}`")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("modules", nargs="*", default=MODULES)
    parser.add_argument("--tests", nargs="*", default=TESTS)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/statement-deletion.jsonl")
    parser.add_argument(
        "--again",
        type=Path,
        metavar="RESULTS",
        help="a former run's results: run again only its survivors (statements of the same text; one "
        "the tests given now do not reach keeps its former outcome), "
        "keep its other outcomes, and report the whole of it",
    )
    parser.add_argument(
        "--within",
        nargs="+",
        metavar="FUNCTION",
        help="only the statements of functions of these names (with --again: only their survivors run "
        "again, the former run's other outcomes are kept)",
    )
    parser.add_argument("--worker", nargs=3, metavar=("WORK", "JOBS", "RESULTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(Path(args.worker[0]), Path(args.worker[1]), Path(args.worker[2]))
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="statement-deletion."))
    base = scratch / "base"
    copy_sources(base)
    covered = coverage_map(base, args.modules, args.tests)
    took = durations(base, args.tests)
    mutants = []
    for module in args.modules:
        source_lines = (REPO / module).read_text().splitlines()
        for stmt in statements(REPO / module):
            # fastest first: with -x a killed mutant costs its quickest failing test, not the whole set
            tests = sorted(
                {t for line in range(stmt["line"], stmt["end"] + 1) for t in covered[module].get(line, [])},
                key=lambda t: (took.get(t, 0.5), t),
            )
            timeout = TIMEOUT_FLOOR + TIMEOUT_FACTOR * sum(took.get(t, 0.5) for t in tests)
            source = source_lines[stmt["line"] - 1].strip()[:100]
            mutants.append(
                {"module": module, "stmt": stmt, "tests": tests, "timeout": timeout, "source": source}
            )
    if args.within:
        mutants = [m for m in mutants if m["stmt"]["func"] in args.within]
    kept: list[dict[str, Any]] = []
    was: dict[tuple[str, int], str] = {}
    if args.again:
        former = [json.loads(line) for line in args.again.read_text().splitlines()]
        wanted = {(r["module"], r["source"]) for r in former if r["outcome"] in ("survived", "no tests")}
        mutants = [m for m in mutants if (m["module"], m["source"]) in wanted]
        rerun = {(m["module"], m["stmt"]["line"]) for m in mutants}
        kept = [
            r
            for r in former
            if r["module"] in args.modules
            and (r["module"], r["stmt"]["line"] if "stmt" in r else r["line"]) not in rerun
            and ((r["module"], r["source"]) not in wanted or args.within)
        ]
        # a statement the tests of this run do not reach keeps what the former run found
        was = {(r["module"], r["stmt"]["line"]): r["outcome"] for r in former if "stmt" in r}
    untested = [m for m in mutants if not m["tests"]]
    for m in untested:
        m["outcome"] = was.get((m["module"], m["stmt"]["line"]), "no tests")
    to_run = [m for m in mutants if m["tests"]]
    print(f"{len(mutants)} statements, {len(untested)} run by no test, {len(to_run)} to run", file=sys.stderr)
    procs, results_files = [], []
    for j in range(args.jobs):
        work = scratch / f"job-{j}"
        copy_sources(work)
        jobs_file, results_file = scratch / f"jobs-{j}.jsonl", scratch / f"results-{j}.jsonl"
        jobs_file.write_text("".join(json.dumps(m) + "\n" for m in to_run[j :: args.jobs]))
        results_files.append(results_file)
        procs.append(
            subprocess.Popen(
                [sys.executable, __file__, "--worker", str(work), str(jobs_file), str(results_file)]
            )
        )
    while any(p.poll() is None for p in procs):
        time.sleep(10)
        done = sum(len(f.read_text().splitlines()) for f in results_files if f.exists())
        print(f"  {done}/{len(to_run)} mutants run", file=sys.stderr, flush=True)
    results = (
        kept
        + untested
        + [json.loads(line) for f in results_files if f.exists() for line in f.read_text().splitlines()]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in results))
    print(report(results, args.modules))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
