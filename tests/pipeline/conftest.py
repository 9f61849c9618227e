"""One Spark session for every pipeline test: the JVM takes seconds to start."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from garlicfarm.pipeline.session import build_session  # pyspark: the test command installs it

    session = build_session(
        "local[2]",
        app_name="garlicfarm-tests",
        driver_memory="1g",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        },
    )
    yield session
    session.stop()
