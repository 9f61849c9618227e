"""The mutation score per module from mutmut's results in mutants/, and every surviving mutant as a
one-line diff, grouped by function, minus the ones scripts/mutation-equivalent.txt explains.

    python scripts/mutation_report.py            # the score table (Markdown, for docs/verification.md)
    python scripts/mutation_report.py --survivors [PATTERN]   # what is left to kill, with diffs
    python scripts/mutation_report.py --names [PATTERN]       # their names, for mutmut to run again

Reads mutmut's own files (``*.py.meta`` beside each mutated module) and the mutated sources, so it
needs no second pass of ``mutmut show`` per mutant.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import fnmatch
import json
import re
import textwrap
from collections import Counter, defaultdict
from pathlib import Path

import attrs
from mutmut.stats import status_by_exit_code

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
EQUIVALENT = ROOT / "scripts" / "mutation-equivalent.txt"


def equivalent() -> dict[str, str]:
    """Mutant name -> why it cannot be told apart from the original (one per line: NAME  # reason)."""
    out: dict[str, str] = {}
    if EQUIVALENT.exists():
        for line in EQUIVALENT.read_text().splitlines():
            name, _, why = line.partition("#")
            if name.strip():
                out[name.strip()] = why.strip()
    return out


def results() -> dict[str, dict[str, str]]:
    """Module -> mutant name -> verdict."""
    by_module: dict[str, dict[str, str]] = {}
    for meta in sorted(MUTANTS.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        module = str(meta.relative_to(MUTANTS)).removesuffix(".meta")
        by_module[module] = {name: status_by_exit_code[code] for name, code in codes.items()}
    return by_module


LOG_METHODS = {"debug", "info", "warn", "error", "failure", "critical"}


@attrs.frozen
class Change:
    """One mutant: its changed lines (original, then mutant) and whether they all lie inside a
    ``log.<level>(...)`` call, i.e. the mutant changes only what a log line says."""

    text: str
    log_only: bool
    #: why the change cannot alter behaviour, when a rule below shows it (else None)
    rule: str | None = None


#: Python's codec names are case-insensitive: ``"utf-8"`` and ``"UTF-8"`` name one codec
_CODEC = re.compile(r"""(["'])(utf-8|ascii|latin-1)\1""", re.IGNORECASE)
#: ``usedforsecurity`` only matters to a FIPS-restricted OpenSSL, which refuses MD5 and SHA-1 then
_FOR_SECURITY = re.compile(r",?\s*usedforsecurity=\w+")


def _rule(original: list[str], mutant: list[str]) -> str | None:
    """A reason the mutant cannot be told apart from the original by any test, or None."""
    if len(original) != 1 or len(mutant) != 1:
        return None

    def codec(line: str) -> str:
        return _CODEC.sub(lambda m: m.group(0).lower(), line)

    def security(line: str) -> str:
        return re.sub(r",\s*\)", ")", _FOR_SECURITY.sub("", line))

    a, b = original[0].strip(), mutant[0].strip()
    if codec(a) == codec(b):
        return "codec names are case-insensitive"
    if security(a) == security(b) and "usedforsecurity" in a:
        return "usedforsecurity matters only to a FIPS-restricted OpenSSL"
    return None


def _log_call_lines(body: str) -> set[int]:
    """0-based lines of ``body`` (a function's body) that belong to a log call statement."""
    try:
        tree = ast.parse(textwrap.dedent(body))
    except SyntaxError:
        return set()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in LOG_METHODS
            and "log" in ast.unparse(node.func.value)
        ):
            lines.update(range(node.lineno - 1, (node.end_lineno or node.lineno)))
    return lines


def changes(module: str) -> dict[str, Change]:
    """Mutant name -> what it changes, from the mutated source (mutmut keeps each mutant as a copy
    of the function beside ``..._mutmut_orig``)."""
    source = (MUTANTS / module).read_text()
    lines = source.splitlines()
    functions: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name:
            functions[node.name] = lines[node.lineno : node.end_lineno]  # the body, not the def line
    dotted = module.removesuffix(".py").replace("/", ".")
    out: dict[str, Change] = {}
    for name, body in functions.items():
        base, _, number = name.rpartition("__mutmut_")
        if number == "orig":
            continue
        original = functions.get(f"{base}__mutmut_orig", [])
        logged = _log_call_lines("\n".join(original))
        text: list[str] = []
        touched: set[int] = set()
        removed: list[str] = []
        added: list[str] = []
        matcher = difflib.SequenceMatcher(a=original, b=body, autojunk=False)
        for op, a0, a1, b0, b1 in matcher.get_opcodes():
            if op != "equal":
                touched.update(range(a0, a1))
                removed += original[a0:a1]
                added += body[b0:b1]
                text += [f"- {line.strip()}" for line in original[a0:a1]]
                text += [f"+ {line.strip()}" for line in body[b0:b1]]
        out[f"{dotted}.{name}"] = Change(
            "  ⟶  ".join(text), bool(touched) and touched <= logged, _rule(removed, added)
        )
    return out


def explained(name: str, change: dict[str, Change], known: dict[str, str]) -> bool:
    """Whether a surviving mutant is equivalent: listed with its reason, or shown so by a rule."""
    return name in known or (name in change and change[name].rule is not None)


def table(by_module: dict[str, dict[str, str]], known: dict[str, str]) -> str:
    header = (
        "| module | mutants | killed | timeout | equivalent | log text only | survived | no tests "
        "| score | score with log text |"
    )
    rows = [header, "|---" * 10 + "|"]
    for module, verdicts in by_module.items():
        change = changes(module)
        counts = Counter(verdicts.values())
        unkilled = [n for n, v in verdicts.items() if v in ("survived", "no tests")]
        left = [n for n in unkilled if not explained(n, change, known)]
        eq = sum(1 for n, v in verdicts.items() if v == "survived" and explained(n, change, known))
        log_only = sum(1 for n in left if n in change and change[n].log_only)
        untested = sum(
            1 for n in left if verdicts[n] == "no tests" and not (n in change and change[n].log_only)
        )
        caught = counts["killed"] + counts["timeout"]
        missed = len(left) - log_only
        score = f"{100 * caught / (caught + missed):.1f} %" if caught + missed else "-"
        broad = f"{100 * caught / (caught + len(left)):.1f} %" if caught + len(left) else "-"
        rows.append(
            f"| `{module}` | {len(verdicts)} | {counts['killed']} | {counts['timeout']} | {eq} | {log_only} "
            f"| {missed - untested} | {untested} | {score} | {broad} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--survivors", nargs="?", const="*", metavar="PATTERN", help="list survivors (glob)")
    parser.add_argument(
        "--log-text", action="store_true", help="list survivors that change only log text too"
    )
    parser.add_argument(
        "--names", nargs="?", const="*", metavar="PATTERN", help="print survivors' names (glob), one a line"
    )
    args = parser.parse_args()
    if not MUTANTS.exists():
        raise SystemExit("no mutants/ here: run scripts/mutation.sh first")
    by_module = results()
    known = equivalent()
    if args.names is not None:
        # mutmut re-tests a surviving mutant only when its function changes: new tests need this
        for module, verdicts in by_module.items():
            change = changes(module)
            for name, verdict in sorted(verdicts.items()):
                if (
                    verdict in ("survived", "no tests")
                    and not explained(name, change, known)
                    and fnmatch.fnmatch(name, args.names)
                ):
                    print(name)
        return
    if args.survivors is None:
        print(table(by_module, known))
        return
    for module, verdicts in by_module.items():
        grouped: dict[str, list[str]] = defaultdict(list)
        change = changes(module)
        for name, verdict in sorted(verdicts.items()):
            wanted = fnmatch.fnmatch(name, args.survivors)
            quiet = name in change and change[name].log_only and not args.log_text
            if (
                verdict in ("survived", "no tests")
                and not explained(name, change, known)
                and wanted
                and not quiet
            ):
                function = re.sub(r"__mutmut_\d+$", "", name)
                number = name.rsplit("_", 1)[-1]
                text = change[name].text if name in change else "?"
                grouped[function].append(f"  {verdict:8} {number:>4}  {text}")
        for function, lines in grouped.items():
            print(function)
            print("\n".join(lines))


if __name__ == "__main__":
    main()
