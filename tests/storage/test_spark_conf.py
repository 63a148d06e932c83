"""Credentials and endpoints from the running Spark session's Hadoop configuration (real Spark).

The shared session points ``s3a`` at the run's moto server through ``spark.hadoop.fs.s3a.*``; with no
AWS variable in the environment, the storage layer must reach the same bucket with the same settings.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

from icecompat_writer import storage
from icecompat_writer.storage import ObjectPath, filesystem_kwargs, options_for, parse_location

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("s3a")]  # s3a: the session reaches the S3 server


@pytest.fixture
def no_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    storage.clear_cache()


def test_options_come_from_the_session_hadoop_conf(
    spark: SparkSession, s3_server: Any, no_aws_env: None
) -> None:
    bucket = s3_server.new_bucket()
    loc = parse_location(f"s3a://{bucket}/t/x.json")
    assert isinstance(loc, ObjectPath)
    options = options_for(loc)
    sources = dict(options.sources)
    assert sources["access_key"] == "fs.s3a.access.key"
    assert sources["endpoint"] == "fs.s3a.endpoint"
    _, kw = filesystem_kwargs(loc, options)
    assert kw["endpoint_override"] == f"127.0.0.1:{s3_server.port}"
    assert kw["scheme"] == "http" and kw["force_virtual_addressing"] is False
    assert kw["access_key"] == s3_server.access_key and kw["region"] == s3_server.region

    s3_server.client().put_object(Bucket=bucket, Key="t/x.json", Body=b"through the session")
    assert storage.io_for(loc).new_input(loc).read() == b"through the session"


def test_per_bucket_settings_of_the_session_override_global_ones(
    spark: SparkSession, s3_server: Any, no_aws_env: None
) -> None:
    bucket = s3_server.new_bucket()
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set(f"fs.s3a.bucket.{bucket}.endpoint.region", "eu-west-3")
    try:
        storage.clear_cache()
        loc = parse_location(f"s3a://{bucket}/t")
        assert isinstance(loc, ObjectPath)
        options = options_for(loc)
        assert options.get("region") == "eu-west-3"
        assert dict(options.sources)["region"] == f"fs.s3a.bucket.{bucket}.endpoint.region"
        other = parse_location(f"s3a://{s3_server.new_bucket()}/t")
        assert isinstance(other, ObjectPath)
        assert options_for(other).get("region") == s3_server.region
    finally:
        conf.unset(f"fs.s3a.bucket.{bucket}.endpoint.region")
        storage.clear_cache()


def test_pool_threads_of_the_driver_find_the_session_too(
    spark: SparkSession, s3_server: Any, no_aws_env: None
) -> None:
    """Footers are read by a thread pool; each thread must reach the bucket with the session's settings."""
    loc = parse_location(f"s3a://{s3_server.new_bucket()}/t")
    assert isinstance(loc, ObjectPath)

    def endpoint_source(_: int) -> str | None:
        return dict(options_for(loc).sources).get("endpoint")

    assert list(storage.map_bounded(endpoint_source, list(range(8)), workers=4)) == ["fs.s3a.endpoint"] * 8


def test_a_second_session_reaches_the_store_with_its_own_credentials_only(
    spark: SparkSession, s3_server: Any, no_aws_env: None
) -> None:
    """Two sessions of one driver, the second with other s3a keys in its SQL conf: each is served its
    own, whichever ran first (Delta's Hadoop configuration takes the SQL conf over the context's)."""
    loc = parse_location(f"s3a://{s3_server.new_bucket()}/t")
    assert isinstance(loc, ObjectPath)
    jvm_session = spark._jvm.org.apache.spark.sql.SparkSession
    assert options_for(loc).get("access_key") == s3_server.access_key
    other = spark.newSession()
    other.conf.set("fs.s3a.access.key", "OTHER-SESSION-KEY")
    other.conf.set("fs.s3a.secret.key", "other-session-secret")
    try:
        # the session pyspark's getActiveSession() answers with, on both sides
        SparkSession._activeSession = other
        jvm_session.setActiveSession(other._jsparkSession)
        assert SparkSession.getActiveSession() is other
        options = options_for(loc)
        assert (options.get("access_key"), options.get("secret_key")) == (
            "OTHER-SESSION-KEY",
            "other-session-secret",
        )
        assert filesystem_kwargs(loc, options)[1]["access_key"] == "OTHER-SESSION-KEY"
        other.conf.set("fs.s3a.access.key", "ROTATED-KEY")  # the running session's key changes
        assert options_for(loc).get("access_key") == "ROTATED-KEY"
    finally:
        SparkSession._activeSession = spark
        jvm_session.setActiveSession(spark._jsparkSession)
    assert options_for(loc).get("access_key") == s3_server.access_key
