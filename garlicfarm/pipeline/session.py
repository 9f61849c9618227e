"""Starting (or joining) the Spark session the pipeline runs in."""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

import garlicfarm
from garlicfarm.pipeline.options import PipelineError

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"

#: the settings the pipeline relies on, whoever starts Spark
REQUIRED_CONF = {
    # days and windows are UTC, as the archive's partitions are
    "spark.sql.session.timeZone": "UTC",
    # HotSpot does not compile a method over 8,000 bytes of bytecode: the line check's whole-stage
    # code was one such, and ran interpreted (the read stage took twice as long). Above this, Spark
    # generates code per operator instead.
    "spark.sql.codegen.hugeMethodLimit": "8000",
    # timestamps as Parquet INT64 (microseconds, UTC), which every reader takes, not legacy INT96
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
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
    """A session for ``master``; without one, spark-submit's, or ``local[*]`` when run directly.

    On a cluster master (``spark://``, ``yarn``, ...) this process ships the garlicfarm package to the
    executors itself and checks, with one task, that they can run the pipeline's code."""
    builder = SparkSession.builder.appName(app_name)
    launching = not under_spark_submit()
    local = master is None or master.startswith("local")
    if launching:
        require_java()
    if master is not None:
        builder = builder.master(master)
    elif launching:
        builder = builder.master("local[*]")
    if launching and "PYSPARK_PYTHON" not in os.environ:
        # Workers run this interpreter unless told otherwise: it has pandas and pyarrow (the PATH's
        # python3 may not). A cluster on other machines needs the same path there, or PYSPARK_PYTHON
        # naming the executors' own (docs/pipeline.md).
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
    if launching and not local:
        try:
            ship_package(spark)
            probe_executors(spark)
        except PipelineError:
            spark.stop()
            raise
    return spark


def require_java() -> None:
    """Spark's JVM: a one-line error instead of PySpark's gateway traceback."""
    home = os.environ.get("JAVA_HOME")
    if (home and Path(home, "bin", "java").is_file()) or (not home and shutil.which("java")):
        return
    where = f"JAVA_HOME={home} has no bin/java" if home else "no java on PATH and no JAVA_HOME"
    raise PipelineError(f"Spark needs Java 17 or later ({where}): install openjdk-17-jre-headless")


def package_zip(directory: Path) -> Path:
    """The garlicfarm package as a zip for the executors' sys.path (what --py-files is under
    spark-submit), from the code this process runs."""
    root = Path(garlicfarm.__file__).parent
    target = directory / "garlicfarm.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                archive.write(path, Path("garlicfarm") / path.relative_to(root))
    return target


def ship_package(spark: SparkSession) -> None:
    directory = Path(tempfile.mkdtemp(prefix="garlicfarm-pyfiles-"))
    atexit.register(shutil.rmtree, directory, True)  # Spark serves the file while the job runs
    spark.sparkContext.addPyFile(str(package_zip(directory)))


#: what the pipeline's Python tasks import on the executors
EXECUTOR_MODULES = ("attrs", "pandas", "pyarrow", "garlicfarm.pipeline.records", "garlicfarm.pipeline.replay")


def _probe(_: object) -> str:
    """Runs on an executor."""
    for name in EXECUTOR_MODULES:
        importlib.import_module(name)
    return sys.executable


def probe_executors(spark: SparkSession) -> None:
    """One task that imports the pipeline's code: fail fast, in one line, if the executors cannot."""
    context = spark.sparkContext
    context.setJobDescription("garlicfarm: can the executors run the pipeline's Python code?")
    try:
        pythons = context.parallelize([0], 1).map(_probe).collect()
    except Exception as e:  # a Py4JJavaError whose text holds the executor's Python traceback
        raise PipelineError(f"the executors cannot run the pipeline: {executor_error(str(e))}") from None
    finally:
        context.setJobDescription(None)  # type: ignore[arg-type]
    log.info("executors run the pipeline with %s", pythons[0])


def executor_error(text: str) -> str:
    """The exception an executor's Python task ended with, out of Spark's report of the failure."""
    found = re.findall(r"^(\w+(?:Error|Exception): .*)$", text, re.MULTILINE)
    if found:
        python = os.environ.get("PYSPARK_PYTHON", "python3")
        return (
            f"{found[-1]} (their Python: {python}; set PYSPARK_PYTHON to one that has attrs, pandas, pyarrow)"
        )
    return text.strip().splitlines()[0] if text.strip() else "unknown error"
