"""Iceberg tables on S3 registered and kept current in catalogs: pyiceberg's SQL catalog (sqlite), AWS
Glue (the Glue API of the run's moto server, the same server that holds the bucket) and Apache
Iceberg's REST catalog server (its own S3FileIO on the same bucket).

One ``s3a`` table with ``delta.universalFormat.enabledFormats=iceberg`` is walked through compat_write,
SQL INSERT, MERGE and DELETE and a Structured Streaming write on the shared (guarded) session. Glue is
named by the table property, so the first commit is synced by compat_write in this process and the SQL
and streaming ones by the guard's rule service, a process of its own that gets the session's
``fs.s3a.*`` settings with each request; the sqlite and REST catalogs are moved by ``icecompat iceberg
--catalog``. No catalog is given ``s3.*`` properties on this side: the catalogs' FileIO reaches the
bucket with the session's endpoint and keys (the REST server is configured with its own, server side).
After every commit pyiceberg reads, through each catalog, exactly delta-spark's rows of that version;
at the end Iceberg Java's generic reader reads the last one through the REST catalog.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from pyiceberg.catalog import Catalog, load_catalog
from pyspark.sql import SparkSession

from icecompat_writer import storage
from icecompat_writer.cli.main import main as icecompat_main
from icecompat_writer.iceberg import PROP_DELTA_VERSION
from icecompat_writer.iceberg.catalogs import CatalogError, fileio_properties, load_catalog_for, sync_catalog
from icecompat_writer.jvm.bridge import guard_iceberg_syncs
from icecompat_writer.storage import io_for
from icecompat_writer.writing.api import compat_write
from tests.catalogservers import RestCatalogServer, iceberg_java_read
from tests.objectstores import S3Server

from ._support import assert_synced, catalogs_configured, guarded_walk, normalise, spark_rows

SYNC = {"delta.universalFormat.enabledFormats": "iceberg"}


@dataclass
class StoreCatalogs:
    server: S3Server
    sql_db: Path
    rest_uri: str

    def reader_properties(self) -> dict[str, str]:
        """What a reader outside Spark (a user's pyiceberg) configures to reach the bucket."""
        s = self.server
        return {
            "s3.endpoint": s.endpoint,
            "s3.access-key-id": s.access_key,
            "s3.secret-access-key": s.secret_key,
            "s3.region": s.region,
        }

    def sql(self) -> Catalog:
        return load_catalog("local", type="sql", uri=f"sqlite:///{self.sql_db}", **self.reader_properties())

    def rest(self) -> Catalog:
        return load_catalog("rest", type="rest", uri=self.rest_uri, **self.reader_properties())

    def glue(self) -> Catalog:
        return load_catalog("glue", **self.glue_config(), **self.reader_properties())

    def glue_config(self) -> dict[str, str]:
        s = self.server
        return {
            "type": "glue",
            "glue.endpoint": s.endpoint,
            "glue.region": s.region,
            "glue.access-key-id": s.access_key,
            "glue.secret-access-key": s.secret_key,
        }


def _env_name(catalog: str, key: str) -> str:
    return f"PYICEBERG_CATALOG__{catalog.upper()}__" + key.replace(".", "__").replace("-", "_").upper()


@pytest.fixture(scope="module")
def store_catalogs(
    spark: SparkSession,
    s3a: S3Server,
    rest_catalog: RestCatalogServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[StoreCatalogs]:
    """Catalogs ``local`` (sqlite), ``glue`` (moto's Glue) and ``rest`` (the run's REST catalog server),
    configured with pyiceberg's environment variables in this process and in the guard's rule service
    (a wrapper of the interpreter that exports them, as a user's ``spark.icecompat.python`` would);
    none has an ``s3.*`` property."""
    base = tmp_path_factory.mktemp("store-catalogs")
    found = StoreCatalogs(s3a, base / "catalog.db", rest_catalog.uri)
    exports = {
        _env_name("local", "type"): "sql",
        _env_name("local", "uri"): f"sqlite:///{found.sql_db}",
        _env_name("rest", "type"): "rest",
        _env_name("rest", "uri"): rest_catalog.uri,
        **{_env_name("glue", k): v for k, v in found.glue_config().items()},
    }
    with catalogs_configured(spark, base, exports):
        yield found


def _frame(spark: SparkSession, ids: range) -> Any:
    return spark.range(ids.start, ids.stop).selectExpr("id", "cast(id % 3 as string) as part", "id * 2 as v")


def _assert_current(
    spark: SparkSession, root: str, bucket: str, catalog: Catalog, ident: str, version: int
) -> None:
    table = catalog.load_table(ident)
    assert table.metadata.properties[PROP_DELTA_VERSION] == str(version)
    assert table.metadata_location.startswith(f"s3://{bucket}/warehouse/orders/metadata/")
    expected = spark_rows(spark.read.format("delta").option("versionAsOf", version).load(root))
    assert normalise(table.scan().to_arrow()) == expected


@pytest.mark.spark
def test_an_s3_table_is_kept_current_in_glue_sqlite_and_rest(
    spark: SparkSession,
    store_catalogs: StoreCatalogs,
    rest_catalog: RestCatalogServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bucket = store_catalogs.server.new_bucket("orders")
    root = f"s3a://{bucket}/warehouse/orders"
    t = f"delta.`{root}`"
    ident = "sales.orders"
    props = {**SYNC, "icecompat.iceberg.catalog": "glue", "icecompat.iceberg.identifier": ident}
    steps: list[tuple[str, Any]] = [
        ("compat_write", lambda: compat_write(_frame(spark, range(0, 6)), root, properties=props)),
        *guarded_walk(spark, t, root, tmp_path),
    ]
    guard_iceberg_syncs(spark, drain=True)
    for version, (what, step) in enumerate(steps):
        assert_synced(spark, step(), version, what, root)
        for name in ("local", "rest"):
            assert icecompat_main(["iceberg", root, "--catalog", name, "--identifier", ident]) == 0, what
            out = capsys.readouterr().out
            assert f"catalog {name}: {ident} {'registered' if version == 0 else 'committed'}" in out, out
        for catalog in (store_catalogs.glue(), store_catalogs.sql(), store_catalogs.rest()):
            _assert_current(spark, root, bucket, catalog, ident, version)
    # Iceberg Java reads the same rows through the REST catalog, with its own S3FileIO
    snapshot, rows = iceberg_java_read(rest_catalog, ident)
    assert snapshot == store_catalogs.rest().load_table(ident).metadata.current_snapshot_id
    expected = spark_rows(spark.read.format("delta").option("versionAsOf", 4).load(root))
    assert sorted(rows, key=lambda r: r["id"]) == expected

    # Glue: one table version per pointer move (register + four updates), each naming its predecessor
    s = store_catalogs.server
    client = boto3.client(
        "glue",
        endpoint_url=s.endpoint,
        region_name=s.region,
        aws_access_key_id=s.access_key,
        aws_secret_access_key=s.secret_key,
    )
    versions = client.get_table_versions(DatabaseName="sales", TableName="orders")["TableVersions"]
    chain = sorted(versions, key=lambda v: int(v["VersionId"]))
    assert len(chain) == 5
    locations = [v["Table"]["Parameters"]["metadata_location"] for v in chain]
    assert [v["Table"]["Parameters"].get("previous_metadata_location") for v in chain[1:]] == locations[:-1]
    assert all(v["Table"]["Parameters"]["table_type"] == "ICEBERG" for v in chain)

    # an older version offered late leaves the pointer where it is
    first = locations[0]
    late = sync_catalog(
        "glue", ident, first.replace("s3://", "s3a://"), io=io_for(first.replace("s3://", "s3a://"))
    )
    assert (late.action, late.catalog_delta_version) == ("current", 4)
    assert store_catalogs.glue().load_table(ident).metadata_location == locations[-1]
    # another table under the same identifier is refused, naming the uuid
    with pytest.raises(CatalogError, match="another table"):
        other = f"s3a://{bucket}/warehouse/other"
        compat_write(_frame(spark, range(0, 1)), other, properties=SYNC)
        sync_catalog(
            "glue",
            ident,
            f"{other}/metadata/v1.metadata.json",
            io=io_for(f"{other}/metadata/v1.metadata.json"),
        )


def test_fileio_properties_follow_the_session_settings_and_user_properties_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalog's FileIO gets the session's ``fs.s3a.*`` endpoint and keys (per bucket first);
    an ``s3.*`` property the user gave the catalog is kept."""
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(key, raising=False)
    hadoop = {
        "fs.s3a.endpoint": "http://127.0.0.1:9999",
        "fs.s3a.endpoint.region": "eu-west-1",
        "fs.s3a.access.key": "AK",
        "fs.s3a.secret.key": "SK",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.bucket.special.access.key": "AK2",
    }
    io = storage.io_for("s3a://plain/t", hadoop)
    props = fileio_properties("s3a://plain/t/metadata/v1.metadata.json", io=io)
    assert props == {
        "s3.access-key-id": "AK",
        "s3.secret-access-key": "SK",
        "s3.region": "eu-west-1",
        "s3.endpoint": "http://127.0.0.1:9999",
        "s3.force-virtual-addressing": "false",
    }
    assert fileio_properties("s3://special/t/m.json", io=io)["s3.access-key-id"] == "AK2"
    assert fileio_properties(str(tmp_path / "m.json"), io=storage.io_for(tmp_path, hadoop)) == {}
    monkeypatch.setenv(_env_name("mine", "type"), "sql")
    monkeypatch.setenv(_env_name("mine", "uri"), f"sqlite:///{tmp_path / 'c.db'}")
    monkeypatch.setenv(_env_name("mine", "s3.endpoint"), "http://elsewhere:1")
    catalog = load_catalog_for("mine", "s3://plain/t/metadata/v1.metadata.json", io=io)
    assert catalog.properties["s3.endpoint"] == "http://elsewhere:1"  # the user's own wins
    assert catalog.properties["s3.access-key-id"] == "AK"  # the session fills the rest


def test_the_identifier_is_the_property_else_the_spark_catalog_name() -> None:
    from icecompat_writer.errors import IcecompatError
    from icecompat_writer.iceberg.sync import _catalog_target

    named = {"icecompat.iceberg.catalog": "glue"}
    assert _catalog_target(None, named, "sales.orders") == ("glue", "sales.orders")
    given = {**named, "icecompat.iceberg.identifier": "lake.orders_v2"}
    assert _catalog_target(None, given, "sales.orders") == ("glue", "lake.orders_v2")  # the user's word
    assert _catalog_target("rest", {}, "sales.orders") == ("rest", "sales.orders")
    assert _catalog_target(None, {}, "sales.orders") is None  # no catalog named: no catalog sync
    with pytest.raises(IcecompatError, match="a write through the table's catalog name"):
        _catalog_target(None, named, None)
