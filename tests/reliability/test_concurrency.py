"""Concurrent compat writers in one Spark session: every row once, every version compliant.

A local file system is only safe for concurrent Delta commits inside one JVM, so the writers are
threads sharing the test session. The CI variant is small; ``--soak`` runs the full one
(8 writers x 25 appends plus a schema change midway).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from icecompat_writer.checking.check import check_table
from icecompat_writer.writing.api import compat_write
from tests import support


def run_writers(spark: SparkSession, root: Path, writers: int, appends: int, profile: str) -> list[int]:
    """Start ``writers`` threads appending ``appends`` batches each, and one thread evolving the schema."""
    compat_write(spark.range(0).withColumn("writer", F.lit(0)), str(root), profile=profile)
    errors: list[BaseException] = []
    attempts: list[int] = []
    lock = threading.Lock()
    halfway = threading.Event()

    def writer(w: int) -> None:
        try:
            for i in range(appends):
                base = (w * 1000 + i) * 10
                batch = spark.range(base, base + 3).withColumn("writer", F.lit(w))
                result = compat_write(batch, str(root), mode="append", profile=profile)
                with lock:
                    attempts.append(result.attempts)
                if w == 0 and i == appends // 2:
                    halfway.set()
        except BaseException as err:  # collected and re-raised in the main thread
            errors.append(err)

    def evolver() -> None:
        try:
            halfway.wait(timeout=600)
            batch = spark.range(-3, 0).withColumn("writer", F.lit(-1)).withColumn("note", F.lit("evolved"))
            compat_write(batch, str(root), mode="append", profile=profile, options={"mergeSchema": "true"})
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    threads.append(threading.Thread(target=evolver))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=1800)
    if errors:
        raise errors[0]
    return attempts


def assert_all_rows_once_and_every_version_compliant(
    spark: SparkSession, root: Path, writers: int, appends: int, profile: str
) -> None:
    back = spark.read.format("delta").load(str(root))
    expected = {(w * 1000 + i) * 10 + k for w in range(writers) for i in range(appends) for k in range(3)}
    expected |= {-3, -2, -1}
    ids = [r.id for r in back.select("id").collect()]
    assert len(ids) == len(expected) and set(ids) == expected, "every row exactly once"
    assert back.filter("note = 'evolved'").count() == 3
    versions = len(support.commits(root))
    assert versions == 1 + writers * appends + 1
    for v in range(versions):
        report = check_table(root, profile, version=v)
        assert report.violations == (), f"version {v}: {report.render_text()}"


@pytest.mark.spark
def test_concurrent_appends_and_a_schema_change(spark: SparkSession, tmp_path: Path) -> None:
    writers, appends = 3, 3
    attempts = run_writers(spark, tmp_path / "t", writers, appends, "v3")
    assert len(attempts) == writers * appends
    assert_all_rows_once_and_every_version_compliant(spark, tmp_path / "t", writers, appends, "v3")


@pytest.mark.spark
@pytest.mark.soak
@pytest.mark.parametrize("profile", ["v3", "writer-v1"])
def test_soak_eight_writers_twenty_five_appends(spark: SparkSession, tmp_path: Path, profile: str) -> None:
    writers, appends = 8, 25
    attempts = run_writers(spark, tmp_path / "t", writers, appends, profile)
    assert len(attempts) == writers * appends
    assert_all_rows_once_and_every_version_compliant(spark, tmp_path / "t", writers, appends, profile)
    retried = sum(1 for a in attempts if a > 1)
    print(
        f"SOAK profile={profile} writers={writers} appends={appends} commits={len(attempts) + 2} "
        f"retried={retried} max_attempts={max(attempts)}"
    )
