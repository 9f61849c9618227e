"""The mutation score per module from mutmut's results in mutants/, and every surviving mutant as a
one-line diff, grouped by function, minus the ones scripts/mutation-equivalent.txt explains.

    python scripts/mutation_report.py            # the score table (Markdown, for docs/verification.md)
    python scripts/mutation_report.py --survivors [PATTERN]   # what is left to kill, with diffs

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
from collections import Counter, defaultdict
from pathlib import Path

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


def diffs(module: str) -> dict[str, str]:
    """Mutant name -> the changed line(s), original then mutant, from the mutated source."""
    source = (MUTANTS / module).read_text()
    lines = source.splitlines()
    functions: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name:
            functions[node.name] = "\n".join(lines[node.lineno : node.end_lineno])  # the body, not the name
    dotted = module.removesuffix(".py").replace("/", ".")
    out: dict[str, str] = {}
    for name, body in functions.items():
        base, _, number = name.rpartition("__mutmut_")
        if number == "orig":
            continue
        original = functions.get(f"{base}__mutmut_orig", "")
        changed = [
            line.strip()
            for line in difflib.unified_diff(original.splitlines(), body.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
        out[f"{dotted}.{name}"] = "  ⟶  ".join(changed)
    return out


def table(by_module: dict[str, dict[str, str]], known: dict[str, str]) -> str:
    header = "| module | mutants | killed | timeout | equivalent | survived | no tests | score |"
    rows = [header, "|---" * 8 + "|"]
    for module, verdicts in by_module.items():
        counts = Counter(verdicts.values())
        eq = sum(1 for name, v in verdicts.items() if v == "survived" and name in known)
        survived = counts["survived"] - eq
        caught = counts["killed"] + counts["timeout"]
        relevant = caught + survived + counts["no tests"]
        score = f"{100 * caught / relevant:.1f} %" if relevant else "-"
        rows.append(
            f"| `{module}` | {len(verdicts)} | {counts['killed']} | {counts['timeout']} | {eq} | {survived} "
            f"| {counts['no tests']} | {score} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--survivors", nargs="?", const="*", metavar="PATTERN", help="list survivors (glob)")
    args = parser.parse_args()
    if not MUTANTS.exists():
        raise SystemExit("no mutants/ here: run scripts/mutation.sh first")
    by_module = results()
    known = equivalent()
    if args.survivors is None:
        print(table(by_module, known))
        return
    for module, verdicts in by_module.items():
        grouped: dict[str, list[str]] = defaultdict(list)
        changes = diffs(module)
        for name, verdict in sorted(verdicts.items()):
            wanted = fnmatch.fnmatch(name, args.survivors)
            if verdict in ("survived", "no tests") and name not in known and wanted:
                function = re.sub(r"__mutmut_\d+$", "", name)
                number = name.rsplit("_", 1)[-1]
                grouped[function].append(f"  {verdict:8} {number:>4}  {changes.get(name, '?')}")
        for function, lines in grouped.items():
            print(function)
            print("\n".join(lines))


if __name__ == "__main__":
    main()
