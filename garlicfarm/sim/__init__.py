"""Deterministic cluster simulation and the checks run on what it produces."""
