"""The shared test session reaches the run's S3 server through Spark's own ``s3a`` connector."""

from __future__ import annotations

import json

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from tests.objectstores import S3Server

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("s3a")]  # s3a: the session reaches the S3 server


def test_delta_table_on_s3a_is_written_and_read_through_the_shared_session(
    spark: SparkSession, s3_server: S3Server
) -> None:
    bucket = s3_server.new_bucket()
    uri = f"s3a://{bucket}/t"
    first = spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string")
    first.write.format("delta").save(uri)
    spark.createDataFrame([(3, "c")], "id long, name string").write.format("delta").mode("append").save(uri)

    back = spark.read.format("delta").load(uri).orderBy("id")
    expected = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id long, name string")
    assert_df_equality(back, expected)

    # The objects are really in the bucket: two commits, and the data files they add.
    client = s3_server.client()
    keys = set(s3_server.bucket_digest(bucket))
    assert {"t/_delta_log/00000000000000000000.json", "t/_delta_log/00000000000000000001.json"} <= keys
    body = client.get_object(Bucket=bucket, Key="t/_delta_log/00000000000000000001.json")["Body"].read()
    adds = [json.loads(line)["add"]["path"] for line in body.decode().splitlines() if '"add"' in line]
    assert adds and all(f"t/{path}" in keys for path in adds)
