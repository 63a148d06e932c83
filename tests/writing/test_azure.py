"""compat_write and upgrade_table on ``abfs://`` (Azurite on 127.0.0.1, Spark's abfs
connector from hadoop-azure 3.5.0 through the emulator's Blob endpoint).

The same guarantees as on local disk and on S3, read back from the blobs themselves: the commit JSON,
every footer through the checker, ``numRecords`` against the rows, the rows through delta-spark. A
refused write leaves the container exactly as it was (every blob listed and hashed before
and after, the connector's folder-marker blobs included).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.errors.exceptions.captured import UnsupportedOperationException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from icecompat_writer.checking.check import check_table
from icecompat_writer.errors import CompatViolation
from icecompat_writer.upgrading.api import upgrade_table
from icecompat_writer.writing.api import compat_write
from tests.writing.test_compat_write import PROFILES, assert_reads_equal, frame

pytestmark = pytest.mark.spark

FEATURE = {
    "v3": "icebergCompatV3",
    "writer-v1": "icebergWriterCompatV1",
    "writer-v3": "icebergWriterCompatV3",
}


def table_uri(abfs: Any, container: str, name: str = "t") -> str:
    return f"abfs://{container}@{abfs.abfs_host}/warehouse/{name}"


def commit_json(abfs: Any, container: str, name: str) -> list[dict[str, Any]]:
    body = abfs.read_blob(container, name).decode()
    return [json.loads(line) for line in body.splitlines() if line.strip()]


@pytest.mark.parametrize("profile", PROFILES)
def test_compat_write_on_abfs_keeps_every_guarantee(spark: SparkSession, abfs: Any, profile: str) -> None:
    container = abfs.new_container()
    uri = table_uri(abfs, container)
    # one write per profile (appends and overwrites are covered on s3a): the run stays cheap
    written = compat_write(frame(spark, 0, 10), uri, partition_by=["part"], profile=profile)
    assert written.version == 0

    actions = commit_json(abfs, container, "warehouse/t/_delta_log/00000000000000000000.json")
    assert FEATURE[profile] in next(a["protocol"] for a in actions if "protocol" in a)["writerFeatures"]
    schema = json.loads(next(a["metaData"] for a in actions if "metaData" in a)["schemaString"])
    if profile.startswith("writer-"):
        for f in schema["fields"]:
            cm = f["metadata"]
            assert cm["delta.columnMapping.physicalName"] == f"col-{cm['delta.columnMapping.id']}"
    adds = [a["add"] for a in actions if "add" in a]
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 10
    names = set(abfs.container_digest(container))
    assert all(f"warehouse/t/{a['path']}" in names for a in adds)

    report = check_table(uri, profile, files="all")  # every footer read from its blob
    assert report.compliant, report.render_text()
    assert report.files_checked == len(adds) == report.files_total
    assert_reads_equal(spark, uri, frame(spark, 0, 10))


def test_a_refused_compat_write_leaves_the_container_byte_identical(spark: SparkSession, abfs: Any) -> None:
    container = abfs.new_container()
    uri = table_uri(abfs, container)
    compat_write(frame(spark, 0, 4), uri, profile="writer-v1")
    before = abfs.container_digest(container)
    more = frame(spark, 4, 2).withColumn("tiny", F.col("id").cast("tinyint"))
    with pytest.raises(CompatViolation) as err:
        compat_write(more, uri, mode="append", profile="writer-v1", options={"mergeSchema": "true"})
    assert "IWC1-NO-BYTE-SHORT" in err.value.rules
    assert abfs.container_digest(container) == before


def test_upgrade_dry_run_and_real_on_abfs(spark: SparkSession, abfs: Any) -> None:
    from tests.upgrading.tables import name_partitioned

    container = abfs.new_container()
    uri = table_uri(abfs, container, "plain")
    name_partitioned(spark, uri)  # column mapping name mode, partition values not in the files
    before = abfs.container_digest(container)
    assert not check_table(uri, "v3").compliant

    dry = upgrade_table(None, uri, "v3", dry_run=True)
    assert dry.needed and dry.version is None and dry.rewritten
    assert abfs.container_digest(container) == before

    done = upgrade_table(spark, uri, "v3")
    assert done.version == 1 and done.committed
    report = check_table(uri, "v3", files="all")
    assert report.compliant, report.render_text()
    assert report.files_checked == report.files_total


@pytest.mark.xfail(
    strict=True,
    raises=UnsupportedOperationException,
    reason="Hadoop 3.5.0 (the Hadoop pyspark 4.2.0 ships) removed the wasb driver: NativeAzureFileSystem "
    "refuses every call with UnsupportedOperationException; Spark reaches Blob storage through abfs",
)
def test_spark_writes_a_wasb_table(spark: SparkSession, abfs: Any) -> None:
    container = abfs.new_container()
    spark.conf.set("fs.azure.storage.emulator.account.name", "devstoreaccount1.blob.core.windows.net")
    try:
        spark.range(3).write.format("delta").save(
            f"wasb://{container}@devstoreaccount1.blob.core.windows.net/t"
        )
    finally:
        spark.conf.unset("fs.azure.storage.emulator.account.name")
    assert "t/_delta_log/00000000000000000000.json" in abfs.container_digest(container)
