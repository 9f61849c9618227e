"""atheris entry point for the handshake target: fuzz.targets.check_handshake (docs/fuzzing.md).

From the repository root: `fuzz/run.sh handshake [RUNS]`, or by hand
`.venv/bin/python -m fuzz.fuzz_handshake [libFuzzer flags] CORPUS_DIR...`.
"""

from fuzz.harness import main

if __name__ == "__main__":
    main("handshake")
