"""compat_write, its refusals and upgrade_table on every object store the shared session reaches.

Each test runs once per store (the ``store`` fixture narrowed to the object stores: ``s3a`` on moto,
``abfs`` on Azurite through the emulator's Blob endpoint, with Spark's own connectors; local tables
are the subject of test_compat_write.py and tests/upgrading). What landed is read back from the
objects themselves: the commit JSON, every footer through the checker (``check_table`` on the URI,
which reads the objects' tails), ``numRecords`` against the rows, the rows through delta-spark. A
refused write leaves the bucket (container) byte-identical: every object listed and hashed before and
after, the abfs connector's folder-marker blobs included.
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
from icecompat_writer.evidence import footers
from icecompat_writer.upgrading.api import upgrade_table
from icecompat_writer.writing.api import compat_write
from tests.objectstores import Store, StoreRoot
from tests.upgrading.tables import name_partitioned
from tests.writing.test_compat_write import PROFILES, assert_reads_equal, frame

pytestmark = pytest.mark.spark
OBJECT_STORES = pytest.mark.parametrize("store", ["s3a", "abfs"], indirect=True)

FEATURE = {
    "v3": "icebergCompatV3",
    "writer-v1": "icebergWriterCompatV1",
    "writer-v3": "icebergWriterCompatV3",
}


def commit_json(where: StoreRoot, version: int) -> list[dict[str, Any]]:
    body = where.read(f"{where.key}/_delta_log/{version:020d}.json").decode()
    return [json.loads(line) for line in body.splitlines() if line.strip()]


@OBJECT_STORES
@pytest.mark.parametrize("profile", PROFILES)
def test_compat_write_keeps_every_guarantee(spark: SparkSession, store: Store, profile: str) -> None:
    where = store("t")
    uri = where.uri
    # appends and overwrites on s3a only: the commit path is the same on abfs, and the run stays cheap
    full = store.kind == "s3a"
    first = compat_write(frame(spark, 0, 6 if full else 10), uri, partition_by=["part"], profile=profile)
    assert first.version == 0
    if full:
        second = compat_write(frame(spark, 6, 4), uri, mode="append", profile=profile)
        assert second.version == 1
    rows = 10

    actions = commit_json(where, 0)
    assert FEATURE[profile] in next(a["protocol"] for a in actions if "protocol" in a)["writerFeatures"]
    schema = json.loads(next(a["metaData"] for a in actions if "metaData" in a)["schemaString"])
    if profile.startswith("writer-"):
        for f in schema["fields"]:
            cm = f["metadata"]
            assert cm["delta.columnMapping.physicalName"] == f"col-{cm['delta.columnMapping.id']}"
    adds = [a["add"] for v in range(2 if full else 1) for a in commit_json(where, v) if "add" in a]
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == rows
    keys = set(where.digest())
    assert all(f"{where.key}/{a['path']}" in keys for a in adds)

    report = check_table(uri, profile, files="all")  # every footer read from its object
    assert report.compliant, report.render_text()
    assert report.files_checked == len(adds) == report.files_total
    assert_reads_equal(spark, uri, frame(spark, 0, rows))

    if full:
        replaced = compat_write(frame(spark, 100, 3), uri, mode="overwrite", profile=profile)
        assert replaced.version == 2
        assert check_table(uri, profile).compliant
        assert sorted(r.id for r in spark.read.format("delta").load(uri).select("id").collect()) == [
            100,
            101,
            102,
        ]


@OBJECT_STORES
def test_a_refused_write_leaves_the_bucket_byte_identical(spark: SparkSession, store: Store) -> None:
    uri, digest = store("t")[:2]
    compat_write(frame(spark, 0, 4), uri, profile="writer-v1")
    before = digest()
    more = frame(spark, 4, 2).withColumn("tiny", F.col("id").cast("tinyint"))
    with pytest.raises(CompatViolation) as err:
        compat_write(more, uri, mode="append", profile="writer-v1", options={"mergeSchema": "true"})
    assert "IWC1-NO-BYTE-SHORT" in err.value.rules
    assert digest() == before


@OBJECT_STORES
def test_upgrade_dry_run_and_real(spark: SparkSession, store: Store) -> None:
    uri, digest = store("plain")[:2]
    name_partitioned(spark, uri)  # column mapping name mode, partition values not in the files
    before = digest()
    assert not check_table(uri, "v3").compliant

    dry = upgrade_table(None, uri, "v3", dry_run=True)
    assert dry.needed and dry.version is None and dry.rewritten
    assert digest() == before

    done = upgrade_table(spark, uri, "v3")
    assert done.version == 1 and done.committed
    report = check_table(uri, "v3", files="all")
    assert report.compliant, report.render_text()
    assert report.files_checked == report.files_total
    rows = spark.read.format("delta").load(uri).orderBy("id").collect()
    assert [(r.id, r.p, list(r.a)) for r in rows] == [(i, str(i % 2), [i]) for i in range(6)]


@pytest.mark.parametrize("store", ["s3a"], indirect=True)  # the failure injected is the object reader's
def test_an_error_while_reading_the_new_footers_deletes_the_new_objects(
    spark: SparkSession, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = store("t")
    uri = where.uri
    compat_write(frame(spark, 0, 4), uri, partition_by=["part"])
    before = where.digest()

    def connection_reset(path: Any, **_: Any) -> Any:
        raise OSError("connection reset by peer")

    # the network fails while the new files' footers are read: nothing may stay behind
    monkeypatch.setattr(footers, "read_object_footer", connection_reset)
    with pytest.raises(OSError, match="connection reset"):
        compat_write(frame(spark, 4, 4), uri, mode="append")
    monkeypatch.undo()
    assert where.digest() == before
    assert check_table(uri, "v3").version == 0


@pytest.mark.parametrize("store", ["abfs"], indirect=True)  # wasb is an Azure URI scheme
@pytest.mark.xfail(
    strict=True,
    raises=UnsupportedOperationException,
    reason="Hadoop 3.5.0 (the Hadoop pyspark 4.2.0 ships) removed the wasb driver: NativeAzureFileSystem "
    "refuses every call with UnsupportedOperationException; Spark reaches Blob storage through abfs",
)
def test_spark_writes_a_wasb_table(spark: SparkSession, store: Store) -> None:
    azure = store.server
    container = azure.new_container()
    spark.conf.set("fs.azure.storage.emulator.account.name", "devstoreaccount1.blob.core.windows.net")
    try:
        spark.range(3).write.format("delta").save(
            f"wasb://{container}@devstoreaccount1.blob.core.windows.net/t"
        )
    finally:
        spark.conf.unset("fs.azure.storage.emulator.account.name")
    assert "t/_delta_log/00000000000000000000.json" in azure.container_digest(container)
