"""Monitoring: ``/metrics`` for Prometheus, ``/livez`` and ``/readyz`` for health checks (docs/operations.md,
"Monitoring"), served on the ``[metrics] listen`` address.

The node's state is read at scrape time into a :class:`~garlicfarm.metrics.snapshot.NodeSnapshot`;
the collector and the health checks are functions of that snapshot alone.
"""
