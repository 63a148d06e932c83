"""Races, lost responses and the Delta-version guard: no duplicated rows, no commit against a stale plan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from icecompat_writer import sessions
from icecompat_writer.errors import SetupError
from icecompat_writer.jvm import bridge
from icecompat_writer.storage import io_for
from icecompat_writer.writing import api, transaction
from icecompat_writer.writing.api import compat_write
from tests import support


@pytest.mark.spark
def test_a_commit_that_loses_a_race_is_replanned(
    spark: SparkSession, table_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schema change lands between our plan and our commit; our write re-plans on the new snapshot."""
    compat_write(spark.range(3), str(table_path))
    original_commit = bridge.PendingWrite.commit
    raced = {"done": False}

    def commit_after_a_rival(self: bridge.PendingWrite, operation: dict | None = None) -> int:
        if not raced["done"]:
            raced["done"] = True
            rival = spark.range(100, 102).withColumn("rival", F.lit("r"))
            compat_write(rival, str(table_path), mode="append", options={"mergeSchema": "true"})
        return original_commit(self, operation)

    monkeypatch.setattr(bridge.PendingWrite, "commit", commit_after_a_rival)
    mine = spark.range(10, 14).withColumn("mine", F.lit(1.0))
    result = compat_write(mine, str(table_path), mode="append", options={"mergeSchema": "true"})

    assert result.attempts == 2 and result.version == 2
    back = spark.read.format("delta").load(str(table_path))
    assert back.count() == 3 + 2 + 4, "every row exactly once"
    assert {"id", "rival", "mine"} == set(back.columns)
    schema = json.loads(support.latest(table_path, "metaData")["schemaString"])
    ids = support.expected_field_ids(schema)
    assert len(set(ids.values())) == len(ids) == 3
    # the loser's first data files were removed: only live files and nothing else remain
    live = {support.data_file(table_path, a) for a in support.live_adds(table_path)}
    on_disk = {p for p in table_path.rglob("*.parquet")}
    assert on_disk == live


@pytest.mark.spark
def test_a_landed_commit_is_found_by_its_files(spark: SparkSession, table_path: Path) -> None:
    compat_write(spark.range(2), str(table_path))
    second = compat_write(spark.range(2, 5), str(table_path), mode="append")
    assert transaction.landed_version(str(table_path), 0, set(second.files), io=io_for(str(table_path))) == 1
    assert (
        transaction.landed_version(str(table_path), 1, set(second.files), io=io_for(str(table_path))) is None
    )
    assert (
        transaction.landed_version(str(table_path), 0, {"not-a-file.parquet"}, io=io_for(str(table_path)))
        is None
    )


@pytest.mark.spark
def test_a_lost_response_does_not_duplicate_rows(
    spark: SparkSession, table_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit lands but the caller sees a failure: the write reports the landed version once."""
    compat_write(spark.range(2), str(table_path))
    original_commit = bridge.PendingWrite.commit

    def commit_then_lose_the_answer(self: bridge.PendingWrite, operation: dict | None = None) -> int:
        original_commit(self, operation)
        raise api.IcecompatError("connection reset while committing")

    monkeypatch.setattr(bridge.PendingWrite, "commit", commit_then_lose_the_answer)
    result = compat_write(spark.range(2, 6), str(table_path), mode="append")
    assert result.version == 1 and result.attempts == 1
    assert spark.read.format("delta").load(str(table_path)).count() == 6
    assert len(support.commits(table_path)) == 2


def test_a_shim_built_for_another_delta_is_refused(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = bridge.shim_info(spark)
    monkeypatch.setattr(bridge, "shim_info", lambda _s: {**real, "running_delta": "4.5.0"})
    with pytest.raises(
        SetupError, match=r"built for delta-spark 4\.4\.0 but this session runs delta-spark 4\.5\.0"
    ):
        bridge.require_supported_delta(spark)


@pytest.mark.spark
def test_plain_delta_spark_reads_a_writer_table_but_cannot_write_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Without our agent, delta-spark 4.4 reads a writer-v1 table and refuses to write it."""
    table = tmp_path / "writer_v1"
    df = spark.range(5).withColumn("s", F.struct(F.col("id").alias("x")))
    compat_write(df, str(table), profile="writer-v1")
    jars = ",".join(str(p) for p in sessions.runtime_jars())
    script = textwrap.dedent(
        f"""
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.jars", {jars!r})
                 .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                 .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                 .getOrCreate())
        df = spark.read.format("delta").load({str(table)!r})
        print("ROWS", df.count(), sorted(df.columns))
        try:
            more = spark.range(1).selectExpr("id", "named_struct('x', id) as s")
            more.write.format("delta").mode("append").save({str(table)!r})
            print("WROTE")
        except Exception as e:
            text = str(e)
            print("REFUSED", "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE" in text, "icebergWriterCompatV1" in text)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "ICECOMPAT_JARS_DIR"}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env
    )
    assert "ROWS 5 ['id', 's']" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    assert "REFUSED True True" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    assert len(support.commits(table)) == 1, "the refused write committed nothing"
