"""Starting (or joining) the Spark session the pipeline runs in."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"

#: the settings the pipeline relies on, whoever starts Spark
REQUIRED_CONF = {
    # days and windows are UTC, as the archive's partitions are
    "spark.sql.session.timeZone": "UTC",
}


def under_spark_submit() -> bool:
    """True when spark-submit launched this Python (it hands the driver a running JVM)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(
    master: str | None = None,
    *,
    app_name: str = "garlicfarm-pipeline",
    driver_memory: str | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A session for ``master``; without one, spark-submit's, or ``local[*]`` when run directly."""
    builder = SparkSession.builder.appName(app_name)
    launching = not under_spark_submit()
    local = master is None or master.startswith("local")
    if master is not None:
        builder = builder.master(master)
    elif launching:
        builder = builder.master("local[*]")
    if launching and local and "PYSPARK_PYTHON" not in os.environ:
        # Local workers must run this interpreter: it has garlicfarm and pandas (the PATH's python3
        # may not). On a cluster the executors' Python is the cluster's business (docs/pipeline.md).
        os.environ["PYSPARK_PYTHON"] = sys.executable
    if launching and driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    if launching:
        # Everything this process starts listens on loopback unless told otherwise: the driver, its
        # block manager and the UI (which binds SPARK_LOCAL_IP, or every interface without it).
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
        for key in ("spark.driver.host", "spark.driver.bindAddress"):
            if key not in (conf or {}):
                builder = builder.config(key, os.environ["SPARK_LOCAL_IP"])
    builder = builder.config("spark.ui.showConsoleProgress", "true")
    for key, value in {**REQUIRED_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    log.info("Spark %s, master %s", spark.version, spark.sparkContext.master)
    return spark
