"""The session guard on ``abfs`` tables (Azurite on 127.0.0.1, Spark's abfs connector through the
emulator's Blob endpoint): the same commit check as locally and on s3a.

The session's log store for ``abfs`` is the guard's, wrapping Delta's AzureLogStore. What landed is
read back from the blobs, and a refused commit must leave every blob of the container as it was (the
connector's folder-marker blobs included).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import SparkSession

from icecompat_writer.checking.check import check_table
from icecompat_writer.errors import CompatViolation
from icecompat_writer.jvm.bridge import translate_exception
from tests.support import unguarded_sql
from tests.writing.test_azure import commit_json, table_uri

pytestmark = pytest.mark.spark


def refusal(fn: Any) -> CompatViolation:
    with pytest.raises(Exception) as info:
        fn()
    err = translate_exception(info.value)
    assert type(err) is CompatViolation, f"{type(info.value).__name__}: {info.value}"
    return err


def writer_v1_table(spark: SparkSession, uri: str) -> None:
    spark.sql(
        f"CREATE TABLE delta.`{uri}` (id BIGINT, p STRING, s STRUCT<a: INT, b: ARRAY<INT>>) USING delta "
        "PARTITIONED BY (p) TBLPROPERTIES ('delta.enableIcebergWriterCompatV1' = 'true')"
    )


def test_guarded_sql_on_abfs_lands_compliant_and_refuses_a_non_compliant_commit(
    guarded: SparkSession, spark: SparkSession, abfs: Any
) -> None:
    container = abfs.new_container()
    uri = table_uri(abfs, container)
    writer_v1_table(guarded, uri)
    guarded.sql(
        f"INSERT INTO delta.`{uri}` VALUES (1, 'a', named_struct('a', 1, 'b', array(1, 2))), (2, 'b', NULL)"
    )
    adds = [
        a["add"]
        for a in commit_json(abfs, container, "warehouse/t/_delta_log/00000000000000000001.json")
        if "add" in a
    ]
    assert len(adds) == 2 and all(json.loads(a["stats"])["numRecords"] == 1 for a in adds)
    report = check_table(uri, "writer-v1", files="all")
    assert report.compliant and report.files_checked == 2, report.render_text()

    unguarded_sql(spark, f"ALTER TABLE delta.`{uri}` ADD COLUMNS (tiny TINYINT)")  # Delta allows it
    before = abfs.container_digest(container)
    # No metadata change: only the commit check sees the INSERT, after its data file was written.
    err = refusal(lambda: guarded.sql(f"INSERT INTO delta.`{uri}` (id, p, tiny) VALUES (3, 'a', 2)"))
    assert {(v.rule, v.path, v.profile) for v in err.violations} == {
        ("IWC1-NO-BYTE-SHORT", "tiny", "writer-v1"),
        ("IWC1-PHYSICAL-NAME", "tiny", "writer-v1"),
    }
    assert abfs.container_digest(container) == before  # the refused commit's blobs are gone
    assert guarded.read.format("delta").load(uri).count() == 2


def test_a_profile_switch_on_abfs_that_the_files_do_not_meet_is_refused_with_the_rule(
    guarded: SparkSession, spark: SparkSession, abfs: Any
) -> None:
    container = abfs.new_container()
    uri = table_uri(abfs, container)
    unguarded_sql(spark, f"CREATE TABLE delta.`{uri}` (id BIGINT, s STRING) USING delta")
    unguarded_sql(spark, f"INSERT INTO delta.`{uri}` VALUES (1, 'a'), (2, 'b')")
    before = abfs.container_digest(container)
    # The rule service reads the live files from the emulator with the settings the driver hands over
    # (fs.azure.abfs.endpoint and the account key), not with its own environment.
    err = refusal(
        lambda: guarded.sql(
            f"ALTER TABLE delta.`{uri}` SET TBLPROPERTIES ('delta.enableIcebergCompatV3'='true')"
        )
    )
    assert "ICV3-PARQUET-FIELD-IDS" in err.rules, err
    assert "icecompat upgrade" in str(err)
    assert abfs.container_digest(container) == before
