"""The conftest bin/lines runs the smoke set with, outside the source tree, against the installed wheel
(the suite's own tests/conftest.py also starts object-store servers these runs do not need).

It refuses to run when ``icecompat_writer`` is not the copy installed in the running environment, so a
line's pass can only come from the built package.
"""

from __future__ import annotations

import os
import platform
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    import icecompat_writer

    where = Path(icecompat_writer.__file__).resolve()
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    if site not in where.parents:
        raise pytest.UsageError(f"icecompat_writer comes from {where}, not the installed wheel in {site}")
    sys.stderr.write(f"icecompat_writer from {where.parent}, Python {platform.python_version()}\n")


def _iceberg_runtime(spark_version: str) -> list[str]:
    """Apache Iceberg's Spark runtime for this Spark line, when bin/lines names the folder bin/setup
    fetched it into (``ICECOMPAT_ENGINE_JARS``) and it holds one for the line: the session then also
    reads Iceberg tables through catalogs (``lines_spark_iceberg.py``)."""
    folder = os.environ.get("ICECOMPAT_ENGINE_JARS")
    if not folder:
        return []
    line = ".".join(spark_version.split(".")[:2])
    return [str(p) for p in sorted(Path(folder).glob(f"iceberg-spark-runtime-{line}_2.13-*.jar"))]


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import pyspark

    import icecompat_writer

    base = tmp_path_factory.mktemp("spark")
    extra = _iceberg_runtime(pyspark.__version__)
    session = icecompat_writer.session(
        "icecompat-smoke",
        **({"spark.jars": ",".join(extra)} if extra else {}),
        **{
            "spark.sql.warehouse.dir": str(base / "warehouse"),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={base / 'derby'}",
            "spark.sql.shuffle.partitions": "2",
            # Log replay in 2 tasks instead of Delta's 50: the same state, far less scheduling on
            # the smoke set's tables of a few files.
            "spark.databricks.delta.snapshotPartitions": "2",
        },
    )
    yield session
    session.stop()
