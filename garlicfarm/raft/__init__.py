"""Raft: a sans-I/O core (step/tick in, Ready out) and the Twisted driver that runs it."""
