"""The pipeline on a real Spark standalone cluster (a master and a worker on loopback, started from
PySpark's own jars), unchanged: `garlicfarm pipeline --master spark://...` ships the package to the
executors itself and writes the same tables as local mode (regression, issue 18: the executors failed
with ModuleNotFoundError). docs/pipeline.md's cluster recipe is what this runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from garlicfarm.chaos.procs import free_base_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

BIN = Path(sys.executable).parent
TABLES = ("publisher_timeline", "destination_weights", "member_health", "rejects")


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def loopback_env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(tmp / "logs"),
        "SPARK_WORKER_DIR": str(tmp / "work"),
    }


def wait_for_worker(ui: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as answer:
                state = json.load(answer)
            if state.get("aliveworkers", 0) >= 1:
                return
        except OSError:
            pass
        time.sleep(0.5)  # a JVM starting: nothing to wait on but its port
    raise AssertionError("the Spark worker did not register with the master in time")


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``spark://127.0.0.1:PORT``: a standalone master and a worker (2 cores, 1 GiB), as docs/pipeline.md."""
    tmp = tmp_path_factory.mktemp("spark-cluster")
    env = loopback_env(tmp)
    base = free_base_port(4)
    port, master_ui, worker_ui, worker_port = base, base + 1, base + 2, base + 3
    spark_class = str(spark_home() / "bin" / "spark-class")
    processes = [
        subprocess.Popen(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(master_ui)),
            ],
            env=env,
            stdout=(tmp / "master.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
    ]
    try:
        processes.append(
            subprocess.Popen(
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    f"spark://127.0.0.1:{port}",
                    *("--host", "127.0.0.1", "--port", str(worker_port), "--webui-port", str(worker_ui)),
                    *("--cores", "2", "--memory", "1g", "--work-dir", str(tmp / "work")),
                ],
                env=env,
                stdout=(tmp / "worker.log").open("wb"),
                stderr=subprocess.STDOUT,
            )
        )
        wait_for_worker(master_ui, time.monotonic() + 120)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("archive")
    argv = ["synth", "--out", str(out), "--farms", "3", "--members", "3", "--days", "1", "--interval", "600"]
    subprocess.run([str(BIN / "garlicfarm"), *argv], check=True, capture_output=True, timeout=120)
    return out


def pipeline(archive: Path, out: Path, master: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = [str(BIN / "garlicfarm"), "pipeline", "--archive", str(archive), "--out", str(out)]
    argv += [
        "--master",
        master,
        "--conf",
        "spark.sql.shuffle.partitions=4",
        "--conf",
        "spark.ui.enabled=false",
    ]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)


def table(out: Path, name: str) -> list[tuple[object, ...]]:
    import pandas as pd

    frame = pd.read_parquet(out / name)
    return sorted(
        (tuple(str(v) for v in row) for row in frame[sorted(frame.columns)].itertuples(index=False)), key=str
    )


@pytest.fixture(scope="module")
def local_out(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tables in local mode, to compare the cluster's with."""
    tmp = tmp_path_factory.mktemp("local")
    env = loopback_env(tmp)
    env.pop("PYSPARK_PYTHON", None)
    local = pipeline(archive, tmp / "out", "local[2]", env)
    assert local.returncode == 0, local.stderr[-3000:]
    return tmp / "out"


def test_the_pipeline_on_a_standalone_cluster_writes_what_local_mode_writes(
    master: str, archive: Path, local_out: Path, tmp_path: Path
) -> None:
    env = loopback_env(tmp_path)
    env.pop("PYSPARK_PYTHON", None)
    on_cluster = pipeline(archive, tmp_path / "cluster", master, env)
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]
    assert "executors run the pipeline with" in on_cluster.stderr
    for name in TABLES:
        assert table(tmp_path / "cluster", name) == table(local_out, name), name
    assert table(tmp_path / "cluster", "publisher_timeline")


def test_spark_submit_on_the_cluster_binds_loopback_itself(
    master: str, archive: Path, local_out: Path, tmp_path: Path
) -> None:
    """docs/pipeline.md's spark-submit recipe, on the same cluster. SPARK_LOCAL_IP is not set for it:
    the job itself keeps the driver on loopback and, with nothing to bind the UI to, turns it off."""
    from garlicfarm.pipeline import job as job_module
    from garlicfarm.pipeline.session import package_zip

    env = loopback_env(tmp_path)
    for name in ("SPARK_LOCAL_IP", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        env.pop(name, None)
    (tmp_path / "pyfiles").mkdir()
    zipped = package_zip(tmp_path / "pyfiles")
    job = Path(job_module.__file__)
    argv = [str(spark_home() / "bin" / "spark-submit"), "--master", master]
    argv += ["--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.sql.shuffle.partitions=4"]
    argv += ["--py-files", str(zipped), str(job), "--archive", str(archive), "--out", str(tmp_path / "out")]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    # spark-submit passes on the Python driver's stderr on its stdout
    output = (result.stdout + result.stderr).splitlines()
    session = [line for line in output if "garlicfarm.pipeline.session" in line]
    assert any(line.endswith("driver 127.0.0.1 (bound to 127.0.0.1), UI off") for line in session), session
    for name in TABLES:
        assert table(tmp_path / "out", name) == table(local_out, name), name


def test_executors_that_cannot_import_the_code_fail_fast_in_one_line(
    master: str, archive: Path, tmp_path: Path
) -> None:
    system_python = shutil.which("python3", path="/usr/bin:/bin")
    assert system_python is not None
    env = {**loopback_env(tmp_path), "PYSPARK_PYTHON": system_python}  # no attrs, pandas, pyarrow there
    result = pipeline(archive, tmp_path / "out", master, env)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "garlicfarm pipeline: the executors cannot run the pipeline: ModuleNotFoundError"
    ), last
    assert system_python in last
    assert not (tmp_path / "out" / "publisher_timeline").exists()
