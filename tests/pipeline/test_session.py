"""Starting Spark: one-line errors without Java and for executors that cannot run the code, the package
shipped to a cluster, and a job with no valid line exiting non-zero (regressions, issue 18)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from garlicfarm.pipeline.options import PipelineError
from garlicfarm.pipeline.session import executor_error, package_zip, require_java

BIN = Path(sys.executable).parent


def test_no_java_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PipelineError, match="no java on PATH and no JAVA_HOME"):
        require_java()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    with pytest.raises(PipelineError, match=r"JAVA_HOME=.*jdk has no bin/java"):
        require_java()
    (tmp_path / "jdk" / "bin").mkdir(parents=True)
    (tmp_path / "jdk" / "bin" / "java").write_text("")
    require_java()


def test_the_command_without_java_says_so_in_one_line(tmp_path: Path) -> None:
    day = tmp_path / "archive" / "date=2026-11-27"
    day.mkdir(parents=True)
    (day / "node-1.jsonl").write_text("{}\n")  # an archive file: an empty archive is said before Java
    result = subprocess.run(
        [
            str(BIN / "garlicfarm"),
            "pipeline",
            "--archive",
            str(tmp_path / "archive"),
            "--out",
            str(tmp_path / "o"),
        ],
        env={"PATH": str(tmp_path), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("garlicfarm pipeline: Spark needs Java 17 or later")
    assert result.stderr.count("\n") == 1


def test_the_shipped_package_is_the_code_this_process_runs(tmp_path: Path) -> None:
    import garlicfarm

    names = zipfile.ZipFile(package_zip(tmp_path)).namelist()
    root = Path(garlicfarm.__file__).parent
    expected = {
        str(Path("garlicfarm") / p.relative_to(root))
        for p in root.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert expected <= set(names)
    assert "garlicfarm/pipeline/records.py" in names and not any("__pycache__" in n for n in names)


def test_an_executors_python_error_is_picked_out_of_sparks_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/python3")
    report = (
        "An error occurred while calling o12.collect.\n: org.apache.spark.SparkException: Job aborted\n"
        'Traceback (most recent call last):\n  File "worker.py", line 1\n'
        "ModuleNotFoundError: No module named 'attrs'\n\n\tat org.apache.spark...\n"
    )
    assert executor_error(report) == (
        "ModuleNotFoundError: No module named 'attrs' "
        "(their Python: /usr/bin/python3; set PYSPARK_PYTHON to one that has attrs, pandas, pyarrow)"
    )
    assert executor_error("Connection refused\nmore") == "Connection refused"


def test_an_archive_without_one_valid_line_fails_the_job(spark: Any, tmp_path: Path) -> None:
    from garlicfarm.pipeline.job import run_pipeline
    from garlicfarm.pipeline.options import PipelineOptions

    day = tmp_path / "archive" / "date=2026-01-01"
    day.mkdir(parents=True)
    (day / "node-1.jsonl").write_text('not json\n{"cluster": 3}\n')
    options = PipelineOptions(archive=str(tmp_path / "archive"), out=str(tmp_path / "out"))
    with pytest.raises(PipelineError, match=r"no valid status records in .*: all 2 lines rejected"):
        run_pipeline(spark, options)
    assert (tmp_path / "out" / "rejects").is_dir()
    (day / "node-1.jsonl").write_text("")
    with pytest.raises(PipelineError, match="no valid status records in .*: no lines"):
        run_pipeline(spark, options)


@pytest.mark.parametrize(
    ("master", "user", "env", "expected"),
    [
        # the job's own choice: everything on loopback, the UI off (it would bind every interface)
        (
            "local[*]",
            {},
            {},
            {
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.ui.enabled": "false",
            },
        ),
        # SPARK_LOCAL_IP names the address, and the UI binds it: the UI stays
        (
            "spark://127.0.0.1:7077",
            {},
            {"SPARK_LOCAL_IP": "127.0.0.2"},
            {"spark.driver.host": "127.0.0.2", "spark.driver.bindAddress": "127.0.0.2"},
        ),
        # what the user set is theirs
        (
            "local[2]",
            {"spark.driver.host": "10.0.0.5", "spark.ui.enabled": "true"},
            {},
            {"spark.driver.bindAddress": "127.0.0.1"},
        ),
        (
            "local[2]",
            {"spark.ui.port": "4050"},
            {"SPARK_LOCAL_IP": "127.0.0.1"},
            {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"},
        ),
        # executors elsewhere must reach the driver: nothing forced
        ("spark://10.1.2.3:7077", {}, {}, {}),
        ("yarn", {}, {}, {}),
        ("k8s://https://10.0.0.1:443", {}, {}, {}),
    ],
)
def test_binds_are_loopback_unless_configured_otherwise(
    master: str, user: dict[str, str], env: dict[str, str], expected: dict[str, str]
) -> None:
    from garlicfarm.pipeline.session import bind_conf

    assert bind_conf(master, user, env) == expected


def test_spark_defaults_count_as_the_users_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from garlicfarm.pipeline.session import spark_defaults

    (tmp_path / "spark-defaults.conf").write_text(
        "# comment\nspark.driver.host   10.0.0.5\nspark.ui.enabled=true\n\nspark.master: local[3]\n"
    )
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert spark_defaults() == {
        "spark.driver.host": "10.0.0.5",
        "spark.ui.enabled": "true",
        "spark.master": "local[3]",
    }
