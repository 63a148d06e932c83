"""The session guard on object-store tables: the same checks as locally, through Spark's own connectors.

The tests taking the ``store`` fixture run on ``s3a`` (moto on 127.0.0.1; the session's log store for
``s3a`` is the guard's, wrapping Delta's S3SingleDriverLogStore) and on ``abfs`` (Azurite on
127.0.0.1 through the emulator's Blob endpoint; the guard's log store wraps Delta's AzureLogStore).
What landed is read back from the objects, and a refusal must leave every object of the bucket
(container) as it was, the abfs connector's folder-marker blobs included. The others run on ``s3a``
only: what they prove (the session profile, a profile switch that lands, the Iceberg sync in the rule
service) does not depend on the store, and one store keeps the run cheap.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from icecompat_writer.checking.check import check_table
from tests.guard.test_guard_writes import refusal
from tests.objectstores import S3Server, Store, StoreRoot
from tests.support import expected_field_ids, session_conf, unguarded_sql

pytestmark = pytest.mark.spark
OBJECT_STORES = pytest.mark.parametrize("store", ["s3a", "abfs"], indirect=True)


def log_actions(where: StoreRoot, version: int) -> list[dict[str, Any]]:
    body = where.read(f"{where.key}/_delta_log/{version:020d}.json").decode()
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def writer_v1_table(spark: SparkSession, uri: str) -> None:
    spark.sql(
        f"CREATE TABLE delta.`{uri}` (id BIGINT, p STRING, s STRUCT<a: INT, b: ARRAY<INT>>) USING delta "
        "PARTITIONED BY (p) TBLPROPERTIES ('delta.enableIcebergWriterCompatV1' = 'true')"
    )


@OBJECT_STORES
def test_a_compliant_insert_lands_with_the_planned_ids_and_a_non_compliant_one_is_refused_at_commit(
    guarded: SparkSession, spark: SparkSession, store: Store
) -> None:
    where = store("t")
    uri = where.uri
    writer_v1_table(guarded, uri)
    guarded.sql(
        f"INSERT INTO delta.`{uri}` VALUES (1, 'a', named_struct('a', 1, 'b', array(1, 2))), (2, 'b', NULL)"
    )
    keys = set(where.digest())
    assert f"{where.key}/_delta_log/00000000000000000001.json" in keys
    created = log_actions(where, 0)
    meta = next(a["metaData"] for a in created if "metaData" in a)
    assert meta["configuration"]["delta.enableIcebergWriterCompatV1"] == "true"
    schema = json.loads(meta["schemaString"])
    expected = expected_field_ids(schema)
    for field in schema["fields"]:  # every column named by its id, as writer-v1 plans it
        m = field["metadata"]
        assert m["delta.columnMapping.physicalName"] == f"col-{m['delta.columnMapping.id']}"
    adds = [a["add"] for a in log_actions(where, 1) if "add" in a]
    assert len(adds) == 2
    for add in adds:
        assert json.loads(add["stats"])["numRecords"] == 1
        body = where.read(f"{where.key}/{add['path']}")
        arrow = pq.ParquetFile(io.BytesIO(body)).schema_arrow
        top = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in arrow}
        assert top == {k: v for k, v in expected.items() if "." not in k}
    assert guarded.read.format("delta").load(uri).count() == 2
    report = check_table(uri, "writer-v1", files="all")
    assert report.compliant and report.files_checked == 2, report.render_text()

    unguarded_sql(spark, f"ALTER TABLE delta.`{uri}` ADD COLUMNS (tiny TINYINT)")  # Delta allows it
    before = where.digest()
    # No metadata change: only the commit check sees the INSERT, after its data file was written.
    err = refusal(lambda: guarded.sql(f"INSERT INTO delta.`{uri}` (id, p, tiny) VALUES (3, 'a', 2)"))
    # the column an unguarded ALTER added: a forbidden type, and a physical name that is not col-<id>
    assert {(v.rule, v.path, v.profile) for v in err.violations} == {
        ("IWC1-NO-BYTE-SHORT", "tiny", "writer-v1"),
        ("IWC1-PHYSICAL-NAME", "tiny", "writer-v1"),
    }
    # The refused commit's data file was deleted from the bucket: every object is as it was.
    assert where.digest() == before
    assert guarded.read.format("delta").load(uri).count() == 2


@pytest.mark.usefixtures("s3a")  # the session reaches the S3 server
def test_append_to_a_plain_s3a_table_under_the_v3_session_profile_is_refused(
    guarded: SparkSession, spark: SparkSession, s3_server: S3Server
) -> None:
    bucket = s3_server.new_bucket()
    uri = f"s3a://{bucket}/t"
    guarded.conf.unset("spark.icecompat.guard.enabled")  # an ordinary table, written unguarded
    spark.range(3).write.format("delta").save(uri)
    guarded.conf.set("spark.icecompat.profile", "v3")
    before = s3_server.bucket_digest(bucket)
    err = refusal(lambda: guarded.range(3, 6).write.format("delta").mode("append").save(uri))
    assert {"ICV3-ENABLED", "ICV3-COLUMN-MAPPING-MODE", "ICV3-ROW-TRACKING"} <= set(err.rules)
    assert s3_server.bucket_digest(bucket) == before


@pytest.fixture
def service_with_misleading_environment(guarded: SparkSession, tmp_path: Any) -> Any:
    """The rule service restarted under a Python whose environment points AWS clients at a closed port
    with a wrong key: what it reads from S3 it can only reach through the session's own settings, which
    the driver hands over with the request. (An Azure connection string naming an emulator's
    ``BlobEndpoint`` is taken as it is, docs/object-storage.md; on abfs the service reads with the
    account key the driver hands over.)"""
    import os
    import socket
    import stat
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    wrapper = tmp_path / "python-wrong-aws-env"
    wrapper.write_text(
        "#!/bin/sh\n"
        "export AWS_ACCESS_KEY_ID=wrong AWS_SECRET_ACCESS_KEY=wrong AWS_REGION=us-east-1\n"
        f"export AWS_ENDPOINT_URL=http://127.0.0.1:{closed} AWS_ENDPOINT_URL_S3=http://127.0.0.1:{closed}\n"
        f'exec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    assert os.access(wrapper, os.X_OK)
    with session_conf(guarded, {"spark.icecompat.python": str(wrapper)}):
        yield guarded


@OBJECT_STORES
def test_a_profile_switch_that_the_files_do_not_meet_is_refused_with_the_rule(
    service_with_misleading_environment: SparkSession, spark: SparkSession, store: Store
) -> None:
    session = service_with_misleading_environment
    where = store("t")
    uri = where.uri
    unguarded_sql(spark, f"CREATE TABLE delta.`{uri}` (id BIGINT, s STRING) USING delta")
    unguarded_sql(spark, f"INSERT INTO delta.`{uri}` VALUES (1, 'a'), (2, 'b')")
    before = where.digest()
    # Metadata only: the rule service holds the two live files (no field ids) to v3 by reading them,
    # with the settings the driver hands over (s3a: endpoint and keys, not its own environment; abfs:
    # the account key).
    err = refusal(
        lambda: session.sql(
            f"ALTER TABLE delta.`{uri}` SET TBLPROPERTIES ('delta.enableIcebergCompatV3'='true')"
        )
    )
    assert "ICV3-PARQUET-FIELD-IDS" in err.rules, err
    assert {v.profile for v in err.violations} == {"v3"}
    assert "icecompat upgrade" in str(err)
    assert where.digest() == before


@pytest.mark.usefixtures("s3a")
def test_a_profile_switch_on_s3a_that_the_files_meet_lands(
    service_with_misleading_environment: SparkSession, s3_server: S3Server
) -> None:
    from icecompat_writer import compat_write

    session = service_with_misleading_environment
    bucket = s3_server.new_bucket()
    uri = f"s3a://{bucket}/t"
    compat_write(session.sql("SELECT * FROM VALUES (1, 'a'), (2, 'b') AS t(id, s)"), uri, profile="v3")
    session.sql(f"ALTER TABLE delta.`{uri}` SET TBLPROPERTIES ('delta.enableIcebergWriterCompatV3'='true')")
    keys = sorted(
        k for k in s3_server.bucket_digest(bucket) if k.startswith("t/_delta_log/0") and k.endswith(".json")
    )
    body = s3_server.client().get_object(Bucket=bucket, Key=keys[-1])["Body"].read().decode()
    actions = [json.loads(line) for line in body.splitlines() if line.strip()]
    configuration = next(a["metaData"] for a in actions if "metaData" in a)["configuration"]
    assert configuration["delta.enableIcebergWriterCompatV3"] == "true"
    assert session.read.format("delta").load(uri).count() == 2


@pytest.mark.usefixtures("s3a")
def test_a_guarded_insert_into_an_s3a_table_asking_for_iceberg_is_synced_with_the_session_settings(
    service_with_misleading_environment: SparkSession, s3_server: S3Server
) -> None:
    """The sync runs in the rule service, which has no Spark session and (here) an environment that
    points elsewhere: the Iceberg commit of each guarded version reaches the bucket only through the
    storage settings the driver hands over with the request."""
    from pyiceberg.table import StaticTable

    from icecompat_writer.jvm.bridge import guarded_syncs

    session = service_with_misleading_environment
    bucket = s3_server.new_bucket()
    uri = f"s3a://{bucket}/t"
    session.sql(
        f"CREATE TABLE delta.`{uri}` (id BIGINT, s STRING) USING delta TBLPROPERTIES "
        "('delta.enableIcebergCompatV3' = 'true', 'delta.universalFormat.enabledFormats' = 'iceberg')"
    )
    session.sql(f"INSERT INTO delta.`{uri}` VALUES (1, 'a'), (2, 'b')")
    session.sql(f"INSERT INTO delta.`{uri}` VALUES (3, 'c')")
    assert [s for s in guarded_syncs(session) if "error" in s] == []
    metadata = sorted(k for k in s3_server.bucket_digest(bucket) if k.endswith(".metadata.json"))
    assert metadata, "no Iceberg metadata on the bucket"
    table = StaticTable.from_metadata(
        f"s3://{bucket}/{metadata[-1]}",
        properties={
            "s3.endpoint": s3_server.endpoint,
            "s3.access-key-id": s3_server.access_key,
            "s3.secret-access-key": s3_server.secret_key,
            "s3.region": s3_server.region,
        },
    )
    assert table.metadata.properties.get("icecompat.delta-version") == "2"
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
