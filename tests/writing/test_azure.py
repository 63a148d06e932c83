"""compat_write on ``abfs://`` (Azurite on 127.0.0.1, Spark's abfs
connector from hadoop-azure 3.5.0 through the emulator's Blob endpoint).

The same guarantees as on local disk and on S3, read back from the blobs themselves: the commit JSON,
every footer through the checker, ``numRecords`` against the rows, the rows through delta-spark.
Refusals and upgrade_table run on every store in test_stores.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.errors.exceptions.captured import UnsupportedOperationException
from pyspark.sql import SparkSession

from icecompat_writer.checking.check import check_table
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
