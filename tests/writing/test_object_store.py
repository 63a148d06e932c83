"""compat_write on ``s3a://`` (moto on 127.0.0.1, Spark's s3a connector).

The same guarantees as on local disk, read back from the objects themselves: the commit JSON fetched
with boto3 (protocol features, ``col-<id>`` physical names), every footer through the checker
(``check_table`` on the S3 URI, which reads the objects' tails), ``numRecords`` against the rows, and
the rows through delta-spark with chispa. A write whose footers cannot be read leaves the bucket
byte-identical (every object listed and hashed before and after). Refusals and upgrade_table run on
every store in test_stores.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import SparkSession

from icecompat_writer import storage
from icecompat_writer.checking import footers
from icecompat_writer.checking.check import check_table
from icecompat_writer.writing.api import compat_write
from tests.objectstores import S3Server
from tests.writing.test_compat_write import PROFILES, assert_reads_equal, frame

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("s3a")]  # s3a: the session reaches the S3 server


def commit_json(server: S3Server, bucket: str, key: str) -> list[dict[str, Any]]:
    body = server.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    return [json.loads(line) for line in body.decode().splitlines() if line.strip()]


@pytest.mark.parametrize("profile", PROFILES)
def test_compat_write_on_s3a_keeps_every_guarantee(
    spark: SparkSession, s3_server: S3Server, profile: str
) -> None:
    storage.clear_cache()
    bucket = s3_server.new_bucket()
    uri = f"s3a://{bucket}/warehouse/t"
    first = compat_write(frame(spark, 0, 6), uri, partition_by=["part"], profile=profile)
    second = compat_write(frame(spark, 6, 4), uri, mode="append", profile=profile)
    assert (first.version, second.version) == (0, 1)

    actions = commit_json(s3_server, bucket, "warehouse/t/_delta_log/00000000000000000000.json")
    protocol = next(a["protocol"] for a in actions if "protocol" in a)
    meta = next(a["metaData"] for a in actions if "metaData" in a)
    feature = {
        "v3": "icebergCompatV3",
        "writer-v1": "icebergWriterCompatV1",
        "writer-v3": "icebergWriterCompatV3",
    }
    assert feature[profile] in protocol["writerFeatures"]
    schema = json.loads(meta["schemaString"])
    if profile.startswith("writer-"):
        for f in schema["fields"]:
            cm = f["metadata"]
            assert cm["delta.columnMapping.physicalName"] == f"col-{cm['delta.columnMapping.id']}"
    adds = [a["add"] for a in actions if "add" in a]
    adds += [
        a["add"]
        for a in commit_json(s3_server, bucket, "warehouse/t/_delta_log/00000000000000000001.json")
        if "add" in a
    ]
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 10
    keys = set(s3_server.bucket_digest(bucket))
    assert all(f"warehouse/t/{a['path']}" in keys for a in adds)

    report = check_table(uri, profile, files="all")  # every footer read from its object
    assert report.compliant, report.render_text()
    assert report.files_checked == len(adds) == report.files_total

    assert_reads_equal(spark, uri, frame(spark, 0, 10))

    replaced = compat_write(frame(spark, 100, 3), uri, mode="overwrite", profile=profile)
    assert replaced.version == 2
    assert check_table(uri, profile).compliant
    assert sorted(r.id for r in spark.read.format("delta").load(uri).select("id").collect()) == [
        100,
        101,
        102,
    ]


def test_an_error_while_reading_the_new_footers_deletes_the_new_objects(
    spark: SparkSession, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage.clear_cache()
    bucket = s3_server.new_bucket()
    uri = f"s3a://{bucket}/t"
    compat_write(frame(spark, 0, 4), uri, partition_by=["part"])
    before = s3_server.bucket_digest(bucket)

    def connection_reset(path: Any, **_: Any) -> Any:
        raise OSError("connection reset by peer")

    # the network fails while the new files' footers are read: nothing may stay behind
    monkeypatch.setattr(footers, "read_object_footer", connection_reset)
    with pytest.raises(OSError, match="connection reset"):
        compat_write(frame(spark, 4, 4), uri, mode="append")
    monkeypatch.undo()
    assert s3_server.bucket_digest(bucket) == before
    assert check_table(uri, "v3").version == 0
