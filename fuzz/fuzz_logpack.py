"""atheris entry point for the logpack target: fuzz.targets.check_logpack (docs/fuzzing.md).

From the repository root: `fuzz/run.sh logpack [RUNS]`, or by hand
`.venv/bin/python -m fuzz.fuzz_logpack [libFuzzer flags] CORPUS_DIR...`.
"""

from fuzz.harness import main

if __name__ == "__main__":
    main("logpack")
