"""atheris entry point for the codec target: fuzz.targets.check_codec (docs/fuzzing.md).

From the repository root: `fuzz/run.sh codec [RUNS]`, or by hand
`.venv/bin/python -m fuzz.fuzz_codec [libFuzzer flags] CORPUS_DIR...`.
"""

from fuzz.harness import main

if __name__ == "__main__":
    main("codec")
