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

import pyspark
from pyspark import SparkConf, SparkContext
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
    conf = dict(conf or {})
    if launching:
        require_java()
        user = {**spark_defaults(), **conf}
        effective_master = master or "local[*]"  # set below, over spark-defaults.conf's
    else:
        user = {**submitted_conf(), **conf}
        effective_master = master or user.get("spark.master") or "local[*]"
    local = effective_master.startswith("local")
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
    if launching and on_this_machine(effective_master):
        # the JVM this process starts inherits it: the UI and the block manager bind it too
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    binds = bind_conf(effective_master, user, os.environ)
    builder = builder.config("spark.ui.showConsoleProgress", "true")
    for key, value in {**REQUIRED_CONF, **binds, **conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    log.info("Spark %s, master %s; %s", spark.version, spark.sparkContext.master, describe_binds(spark))
    if launching and not local:
        try:
            ship_package(spark)
            probe_executors(spark)
        except PipelineError:
            spark.stop()
            raise
    return spark


#: what keeps the driver off the network; set by the job unless the user set them
BIND_KEYS = ("spark.driver.host", "spark.driver.bindAddress")
_LOOPBACK_HOSTS = re.compile(r"^(localhost|127\.\d+\.\d+\.\d+|\[?::1\]?)$")


def on_this_machine(master: str) -> bool:
    """A master whose executors run on this machine: ``local[...]``, or a standalone master on
    loopback. On any other (a cluster's, ``yarn``, ``k8s://``) the executors must reach the driver
    over the network, so the job does not bind it to loopback."""
    if master.startswith("local"):
        return True
    hosts = re.match(r"^spark://([^/]+)$", master)
    if hosts is None:
        return False
    names = [h.rsplit(":", 1)[0] for h in hosts.group(1).split(",")]
    return all(_LOOPBACK_HOSTS.match(name) for name in names)


def bind_conf(master: str, user: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """The settings that keep what this job starts on loopback, minus those the user set.

    ``user``: the Spark properties already set (``--conf``, spark-submit's, spark-defaults.conf).
    The driver's RPC and block manager bind ``spark.driver.bindAddress`` and advertise
    ``spark.driver.host``; as with Spark's own SPARK_LOCAL_IP, that variable, when set, is the
    address. The UI has no such property: it binds SPARK_LOCAL_IP as the JVM saw it at start, or every
    interface; so without SPARK_LOCAL_IP (under spark-submit, where the JVM started before this code)
    it is turned off unless the user configured it."""
    if not on_this_machine(master):
        return {}
    address = env.get("SPARK_LOCAL_IP") or LOOPBACK
    out = {key: address for key in BIND_KEYS if key not in user}
    ui_keys = ("spark.ui.enabled", "spark.ui.port")
    if not env.get("SPARK_LOCAL_IP") and not any(key in user for key in ui_keys):
        out["spark.ui.enabled"] = "false"
    return out


def describe_binds(spark: SparkSession) -> str:
    conf = spark.sparkContext.getConf()
    ui = spark.sparkContext.uiWebUrl or "off"
    return (
        f"driver {conf.get('spark.driver.host')} (bound to {conf.get('spark.driver.bindAddress')}), UI {ui}"
    )


#: a line of a Java properties file (spark-defaults.conf): ``key value``, ``key=value``
_PROPERTY = re.compile(r"^\s*([^#!\s=:][^\s=:]*)\s*[\s=:]\s*(.*)$")


def spark_defaults() -> dict[str, str]:
    """The properties of spark-defaults.conf, which the JVM this process starts reads."""
    home = os.environ.get("SPARK_CONF_DIR") or str(
        Path(os.environ.get("SPARK_HOME") or _pyspark_home(), "conf")
    )
    path = Path(home, "spark-defaults.conf")
    out: dict[str, str] = {}
    if not path.is_file():
        return out
    for line in path.read_text(errors="replace").splitlines():
        found = _PROPERTY.match(line)
        if found:
            out[found.group(1)] = found.group(2).strip()
    return out


def _pyspark_home() -> str:
    return str(Path(pyspark.__file__).parent)


def submitted_conf() -> dict[str, str]:
    """Under spark-submit: the properties it was given (its --conf, --properties-file, defaults)."""
    SparkContext._ensure_initialized()  # the gateway to spark-submit's JVM
    return dict(SparkConf().getAll())


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
