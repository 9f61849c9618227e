"""Chaos testing of real node processes: a fault-injecting proxy, kill -9 cycles, a checked workload."""
