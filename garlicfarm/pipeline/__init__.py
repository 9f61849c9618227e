"""The telemetry pipeline: the farm's status archive on Spark, and a generator of realistic archives.

``synth`` writes archives in the layout of :mod:`garlicfarm.app.archive` and needs nothing beyond the
standard library. Everything else here imports PySpark (the ``spark`` extra); the CLI imports it only
when ``garlicfarm pipeline`` runs. See docs/pipeline.md.
"""
